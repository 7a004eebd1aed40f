"""Live migration's parts that need no libvirt: the domain XML the
destination defines, what a rollback at the destination may remove, the
destination's refusal of shared instance storage (libvirt-python replaced
by a namespace of the constants used, the domain by a stand-in returning
fixed XML), and the compute RPC client's choice of version."""
import os
import types
import xml.etree.ElementTree as ET

import pytest

from volattach import exception
from volattach.compute.virt.libvirt import driver as libvirt_driver
from volattach.compute.virt.libvirt import volume
from volattach.conf import CONF
from volattach import objects

UUID = "5e0b8e2c-4f55-4c1e-9d7a-0f2d55b6c001"
OLD = {"driver_volume_type": "nbd", "data": {
    "host": "10.0.0.1", "port": 10809, "name": "volume-v1",
    "access_mode": "rw", "volume_id": "v1"}}
NEW = {"driver_volume_type": "nbd", "data": {
    "host": "10.0.0.2", "port": 10810, "name": "volume-v1",
    "access_mode": "rw", "volume_id": "v1"}}


@pytest.fixture(autouse=True)
def conf(tmp_path):
    CONF([], project="volattach", default_config_files=[])
    CONF.set_override("instances_path", str(tmp_path / "here"),
                      group="libvirt")
    objects.register_all()
    yield CONF
    CONF.clear_override("instances_path", group="libvirt")


class Domain:
    """A stand-in for a libvirt domain: its XML, and what was asked of it."""

    def __init__(self, xml, persistent=True):
        self.xml = xml
        self.persistent = persistent
        self.destroyed = False

    def XMLDesc(self, flags=0):
        return self.xml

    def isPersistent(self):
        return self.persistent

    def destroy(self):
        self.destroyed = True


def _driver(dom):
    drv = object.__new__(libvirt_driver.LibvirtDriver)
    lv = types.SimpleNamespace(VIR_DOMAIN_XML_MIGRATABLE=8,
                               libvirtError=Exception)
    drv._host = types.SimpleNamespace(libvirt=lv)
    drv._domain_or_none = lambda instance: dom
    return drv


def _live_xml(here):
    disk = volume.volume_driver(OLD).disk_xml(OLD, "vdb", "v1", False)
    return (
        "<domain type='qemu'><name>n</name><devices>"
        "<disk type='file' device='disk'><source file='%(d)s/disk'/>"
        "<target dev='vda' bus='virtio'/></disk>%(v)s"
        "<serial type='unix'><source mode='bind' path='%(d)s/console.sock'/>"
        "<log file='%(d)s/console.log' append='on'/></serial>"
        "<disk type='file' device='disk'><source file='%(d)s-other/x'/>"
        "<target dev='vdy' bus='virtio'/></disk>"
        "</devices></domain>" % {"d": here, "v": disk})


def test_destination_xml_moves_paths_and_volume_sources(tmp_path):
    here = os.path.join(CONF.libvirt.instances_path, UUID)
    there = str(tmp_path / "there" / UUID)
    drv = _driver(None)
    migrate_data = objects.LiveMigrateData(
        connect_uri="qemu+tcp://dest/system", instance_dir=there,
        disks={"vdb": drv._disk_xml(NEW, "/dev/vdb", "rw")})
    xml = drv._destination_xml(Domain(_live_xml(here)),
                               types.SimpleNamespace(uuid=UUID), migrate_data)
    root = ET.fromstring(xml)
    disks = {d.find("target").get("dev"): d
             for d in root.findall("./devices/disk")}
    assert disks["vda"].find("source").get("file") == there + "/disk"
    serial = root.find("./devices/serial")
    assert serial.find("source").get("path") == there + "/console.sock"
    assert serial.find("log").get("file") == there + "/console.log"
    # a path that only starts like the guest's directory stays
    assert disks["vdy"].find("source").get("file") == here + "-other/x"
    # the volume: the destination's connection, in the same place
    vdb = disks["vdb"]
    host = vdb.find("source").find("host")
    assert (host.get("name"), host.get("port")) == ("10.0.0.2", "10810")
    assert [child.tag for child in vdb][:3] == ["driver", "source", "target"]
    assert vdb.find("alias").get("name") == "ua-v1"


@pytest.mark.parametrize("disks", [
    {},                                          # attached since
    {"vdb": ("v2", NEW)},                        # swapped since
    {"vdb": ("v1", NEW), "vdc": ("v3", NEW)},    # detached since
])
def test_destination_xml_refuses_volumes_changed_since_prepared(disks):
    """A swap, attach or detach that reached the source after the
    destination was prepared: the migration is refused (the guest stays)."""
    drv = _driver(None)
    migrate_data = objects.LiveMigrateData(
        connect_uri="qemu+tcp://dest/system", instance_dir="/there",
        disks={dev: volume.volume_driver(info).disk_xml(info, dev, serial,
                                                        False)
               for dev, (serial, info) in disks.items()})
    here = os.path.join(CONF.libvirt.instances_path, UUID)
    with pytest.raises(exception.VirtDriverError, match="changed"):
        drv._destination_xml(Domain(_live_xml(here)),
                             types.SimpleNamespace(uuid=UUID), migrate_data)


def _incoming_dir(marker=True):
    idir = os.path.join(CONF.libvirt.instances_path, UUID)
    os.makedirs(idir)
    if marker:
        open(os.path.join(idir, libvirt_driver.MIGRATING_IN), "w").close()
    return idir


def test_rollback_destroys_an_incoming_guest_and_its_directory():
    idir = _incoming_dir()
    dom = Domain("<domain/>", persistent=False)
    _driver(dom).rollback_live_migration_at_destination(
        types.SimpleNamespace(uuid=UUID))
    assert dom.destroyed and not os.path.exists(idir)


def test_rollback_leaves_the_sources_guest_on_a_shared_libvirt(tmp_path):
    """Both hosts on one libvirt (libvirt refused the migration): the
    domain found is the source's, which runs from its own directory."""
    idir = _incoming_dir()
    dom = Domain(_live_xml(str(tmp_path / "source" / UUID)))
    _driver(dom).rollback_live_migration_at_destination(
        types.SimpleNamespace(uuid=UUID))
    assert not dom.destroyed and not os.path.exists(idir)


def test_rollback_keeps_a_guest_that_runs_here():
    idir = _incoming_dir()
    dom = Domain(_live_xml(idir))
    _driver(dom).rollback_live_migration_at_destination(
        types.SimpleNamespace(uuid=UUID))
    assert not dom.destroyed and os.path.exists(idir)


def test_rollback_leaves_a_directory_it_did_not_make():
    """No marker: pre_live_migration refused (the directory was there, as
    with shared instance storage) and it is not this migration's."""
    idir = _incoming_dir(marker=False)
    dom = Domain("<domain/>", persistent=False)
    _driver(dom).rollback_live_migration_at_destination(
        types.SimpleNamespace(uuid=UUID))
    assert not dom.destroyed and os.path.exists(idir)


@pytest.fixture
def image_dir(tmp_path):
    """[libvirt] image_dir holding one image, ``img``."""
    image = tmp_path / "images" / "img"
    image.mkdir(parents=True)
    (image / "kernel").write_bytes(b"k")
    (image / "initramfs").write_bytes(b"i")
    CONF.set_override("image_dir", str(tmp_path / "images"), group="libvirt")
    yield
    CONF.clear_override("image_dir", group="libvirt")


def test_pre_live_migration_refuses_a_directory_already_there(image_dir):
    """Shared instance storage (or a guest of that id here already): the
    destination refuses before it writes anything, and leaves no marker
    for a rollback to act on."""
    idir = _incoming_dir(marker=False)
    instance = types.SimpleNamespace(uuid=UUID, image_ref="img",
                                     config_drive=False)
    with pytest.raises(exception.VirtDriverError, match="shared"):
        _driver(None).pre_live_migration(instance, [])
    assert os.listdir(idir) == []


def test_a_failed_pre_live_migration_leaves_no_directory(image_dir,
                                                         monkeypatch):
    """No rollback follows a failed pre_live_migration: its directory goes
    at once, or the next migration here would be refused as shared
    storage."""

    def make_config_drive(*args):
        raise OSError("genisoimage failed")
    monkeypatch.setattr(libvirt_driver.configdrive, "make_config_drive",
                        make_config_drive)
    instance = types.SimpleNamespace(uuid=UUID, image_ref="img",
                                     config_drive=True, user_data_bytes=None)
    with pytest.raises(OSError):
        _driver(None).pre_live_migration(instance, [])
    assert not os.path.exists(os.path.join(CONF.libvirt.instances_path, UUID))
