"""The libvirt driver's nbd volumes over TLS: ``tls='yes'`` on the disk
source when the connection says tls, and the client certificate of
``[libvirt] nbd_tls_dir`` checked before the disk is plugged (a missing
or expired file fails the connect, naming the file)."""
import datetime
import socket
import xml.etree.ElementTree as ET

import pytest

from volattach.compute.virt.libvirt import volume
from volattach.conf import CONF
from volattach import exception
from volattach import nbd_certs

NBD = {"driver_volume_type": "nbd", "host": "127.0.0.1", "port": 10809,
       "name": "volume-v1", "access_mode": "rw", "volume_id": "v1"}


@pytest.fixture(autouse=True)
def conf():
    CONF([], project="volattach", default_config_files=[])
    yield CONF
    CONF.clear_override("nbd_tls_dir", group="libvirt")


@pytest.fixture
def server():
    """A listening loopback port (the NBD server's reachability probe)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def _source(info):
    disk = ET.fromstring(volume.volume_driver(info).disk_xml(
        info, "vdb", "v1", readonly=False))
    return disk.find("source")


def test_tls_connections_ask_libvirt_for_tls():
    assert _source(dict(NBD, tls=True)).get("tls") == "yes"
    assert _source(dict(NBD, tls=False)).get("tls") is None
    assert _source(NBD).get("tls") is None
    nested = {"driver_volume_type": "nbd", "data": dict(NBD, tls=True)}
    assert _source(nested).get("tls") == "yes"


def test_valid_client_certificate_connects(tmp_path, server):
    nbd_certs.Authority.create().issue(str(tmp_path), "compute1")
    CONF.set_override("nbd_tls_dir", str(tmp_path), group="libvirt")
    volume.NBDVolumeDriver().connect_volume(dict(NBD, port=server, tls=True))


@pytest.mark.parametrize("name", ["client-cert.pem", "client-key.pem",
                                  "ca-cert.pem"])
def test_missing_client_file_fails_naming_it(tmp_path, server, name):
    nbd_certs.Authority.create().issue(str(tmp_path), "compute1")
    (tmp_path / name).unlink()
    CONF.set_override("nbd_tls_dir", str(tmp_path), group="libvirt")
    with pytest.raises(exception.VirtDriverError) as exc:
        volume.NBDVolumeDriver().connect_volume(
            dict(NBD, port=server, tls=True))
    assert str(tmp_path / name) in str(exc.value)
    assert "missing" in str(exc.value)
    # a connection without tls does not need the files
    volume.NBDVolumeDriver().connect_volume(dict(NBD, port=server))


def test_expired_client_certificate_fails_naming_it(tmp_path, server):
    long_ago = (datetime.datetime.now(datetime.timezone.utc)
                - datetime.timedelta(days=30))
    nbd_certs.Authority.create().issue(str(tmp_path), "compute1", days=2,
                                       not_before=long_ago)
    CONF.set_override("nbd_tls_dir", str(tmp_path), group="libvirt")
    with pytest.raises(exception.VirtDriverError) as exc:
        volume.NBDVolumeDriver().connect_volume(
            dict(NBD, port=server, tls=True))
    assert str(tmp_path / "client-cert.pem") in str(exc.value)
    assert "expired" in str(exc.value)
