"""The libvirt driver's parts that need no libvirt: the volume-driver
table and its <disk> XML, the image directory, the config drive."""
import os
import shutil
import subprocess
import types
import xml.etree.ElementTree as ET

import pytest

from volattach import exception
from volattach.compute.virt.libvirt import configdrive
from volattach.compute.virt.libvirt import images
from volattach.compute.virt.libvirt import volume

NBD = {"driver_volume_type": "nbd", "host": "127.0.0.1", "port": 10809,
       "name": "volume-v1-ro", "access_mode": "ro", "volume_id": "v1"}


@pytest.mark.parametrize("info", [NBD, {"driver_volume_type": "nbd",
                                        "data": dict(NBD)}])
def test_nbd_disk_xml_flat_or_nested(info):
    disk = ET.fromstring(volume.volume_driver(info).disk_xml(
        info, "vdb", "v1", readonly=True))
    source = disk.find("source")
    assert (disk.get("type"), source.get("protocol"), source.get("name")) == \
        ("network", "nbd", "volume-v1-ro")
    host = source.find("host")
    assert (host.get("name"), host.get("port")) == ("127.0.0.1", "10809")
    assert source.find("reconnect").get("delay") == "10"
    assert disk.find("target").get("dev") == "vdb"
    assert disk.find("serial").text == "v1"
    assert disk.find("readonly") is not None
    assert disk.find("alias").get("name") == "ua-v1"


def test_read_write_disk_has_no_readonly():
    rw = dict(NBD, access_mode="rw")
    disk = ET.fromstring(volume.volume_driver(rw).disk_xml(
        rw, "vdc", "v1", readonly=False))
    assert disk.find("readonly") is None


def test_unknown_volume_type_is_a_driver_error():
    with pytest.raises(exception.VirtDriverError):
        volume.volume_driver({"driver_volume_type": "fibre_channel"})


def test_nbd_connect_checks_the_server_is_reachable():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]     # bound, not listening: refused
        with pytest.raises(exception.VirtDriverError):
            volume.NBDVolumeDriver().connect_volume(dict(NBD, port=port))
        s.listen()
        volume.NBDVolumeDriver().connect_volume(dict(NBD, port=port))


def test_image_dir_lookup(tmp_path):
    (tmp_path / "img1").mkdir()
    (tmp_path / "img1" / "kernel").write_bytes(b"k")
    (tmp_path / "empty").mkdir()
    assert images.image_path("img1", str(tmp_path)) == str(tmp_path / "img1")
    for bad in ("empty", "missing", "../img1", ".", ""):
        assert images.image_path(bad, str(tmp_path)) is None


@pytest.mark.skipif(shutil.which("genisoimage") is None
                    or shutil.which("isoinfo") is None,
                    reason="genisoimage is not installed")
def test_config_drive_is_labelled_config_2(tmp_path):
    instance = types.SimpleNamespace(
        uuid="u1", display_name="s1", hostname="s1", availability_zone=None,
        launch_index=0, metadata={"k": "v"}, project_id="p")
    path = str(tmp_path / "disk.config")
    configdrive.make_config_drive(path, instance, b"echo hi\n")
    info = subprocess.run(["isoinfo", "-d", "-i", path], capture_output=True,
                          text=True).stdout
    assert "Volume id: config-2" in info
    listing = subprocess.run(["isoinfo", "-R", "-f", "-i", path],
                             capture_output=True, text=True).stdout.split()
    assert "/openstack/latest/meta_data.json" in listing
    assert "/openstack/latest/user_data" in listing
    assert os.path.getsize(path) > 0


@pytest.mark.parametrize("pinned", [None, "nova", "nova:compute1",
                                    ":compute1"])
def test_config_drive_names_the_hosts_zone(pinned):
    instance = types.SimpleNamespace(
        uuid="u1", display_name="s1", hostname="s1", availability_zone=pinned,
        launch_index=0, metadata={}, project_id="p")
    assert configdrive.meta_data(instance)["availability_zone"] == "nova"


@pytest.mark.parametrize("version, warned", [(9_000_000, True),
                                             (9_002_000, False),
                                             (11_003_000, False)])
def test_a_libvirt_without_nbd_reconnect_delay_is_named(caplog, version,
                                                        warned):
    from volattach.compute.virt.libvirt import host
    conn = types.SimpleNamespace(getLibVersion=lambda: version)
    with caplog.at_level("WARNING", logger=host.__name__):
        host.Host._check_version(conn)
    assert ("drops the <reconnect delay>" in caplog.text) == warned
    if warned:
        assert "libvirt 9.0.0 " in caplog.text
