"""A HARD reboot and a start plug the volumes again from fresh
connections (compute RPC 1.10): the conductor's task refreshes the attachments and sends the
records, the client sends them only to computes of 1.10, the compute
connects the plugged ones, and the libvirt driver rewrites those <disk>s
(a SOFT reboot and an old compute keep what the guest had).  Unit tests:
the RPC client, the volume API, the objects and libvirt are test doubles."""
import types
import xml.etree.ElementTree as ET
from unittest import mock

import pytest

import volattach  # noqa: F401
from volattach import objects
from volattach.compute import manager as compute_manager
from volattach.compute import rpcapi
from volattach.compute.virt import fake
from volattach.compute.virt.libvirt import driver as libvirt_driver
from volattach.conductor.tasks import base
from volattach.conductor.tasks import power
from tests.unit.compute.test_rpcapi import _Client

objects.register_all()


# -- the compute RPC client ------------------------------------------------------
@pytest.mark.parametrize("cap, bdms, sent", [
    ("1.10", "listing", ("1.10", ["bdms", "instance",
                                   "previous_connection_info",
                                   "reboot_type"])),
    ("1.10", None, ("1.6", ["instance", "reboot_type"])),
    ("1.9", "listing", ("1.6", ["instance", "reboot_type"])),
])
def test_reboot_sends_the_records_to_computes_of_1_10(cap, bdms, sent):
    api = rpcapi.ComputeAPI()
    client = _Client(cap)
    api._client = lambda host: client
    api.reboot_instance(None, types.SimpleNamespace(host="h"), "HARD",
                        bdms=bdms)
    version, method, kwargs = client.calls[0]
    assert method == "reboot_instance" and (version, kwargs) == sent
    assert api.reconnects_on_reboot("h") is (cap == "1.10")


@pytest.mark.parametrize("cap, bdms, sent", [
    ("1.10", "listing", ("1.10", ["bdms", "instance",
                                   "previous_connection_info"])),
    ("1.10", None, ("1.0", ["instance"])),
    ("1.9", "listing", ("1.0", ["instance"])),
])
def test_power_on_sends_the_records_to_computes_of_1_10(cap, bdms, sent):
    api = rpcapi.ComputeAPI()
    client = _Client(cap)
    api._client = lambda host: client
    api.power_on_instance(None, types.SimpleNamespace(host="h"), bdms=bdms)
    version, method, kwargs = client.calls[0]
    assert method == "power_on_instance" and (version, kwargs) == sent


# -- the conductor's task -------------------------------------------------------
class Record:
    is_volume = True

    def __init__(self, volume_id, attachment_id, device_name):
        self.volume_id = volume_id
        self.attachment_id = attachment_id
        self.device_name = device_name
        self.attach_mode = "rw"
        self.instance_uuid = "i"
        self.connection_info = {"host": "old"}
        self.uuid = "bdm-" + volume_id
        self.saved = []

    def get_connection_info(self):
        return dict(self.connection_info)

    def set_connection_info(self, info):
        self.connection_info = info

    def save_if_attachment(self, attachment_id):
        self.saved.append(attachment_id)
        return attachment_id == self.attachment_id


@pytest.fixture
def reboot(monkeypatch):
    records = [Record("v1", "a-1", "/dev/vdb"), Record("v2", "a-2", "/dev/vdc")]
    monkeypatch.setattr(objects.BlockDeviceMappingList, "get_by_instance_uuid",
                        classmethod(lambda cls, ctx, uuid: records))
    monkeypatch.setattr(base, "Event", mock.Mock())
    volume_api = mock.Mock()
    volume_api.get.side_effect = lambda ctx, vid: {"id": vid,
                                                   "multiattach": False}
    volume_api.attachment_update.side_effect = (
        lambda ctx, att, connector, mountpoint: {
            "id": att, "connection_info": {"driver_volume_type": "nbd",
                                           "host": "new", "name": att}})
    compute = mock.Mock()
    compute.reconnects_on_reboot.return_value = True
    instance = types.SimpleNamespace(uuid="i", host="h1", task_state=None,
                                     save=mock.Mock())

    def run(reboot_type, action="reboot"):
        task = power.PowerActionTask(
            mock.sentinel.ctx, instance, action, reboot_type=reboot_type,
            compute_rpcapi=compute, volume_api=volume_api,
            connectors=types.SimpleNamespace(
                get=lambda ctx, host, dev, mode: {"host": host, "dev": dev}))
        task.execute()
    return types.SimpleNamespace(run=run, records=records, compute=compute,
                                 volume=volume_api, instance=instance)


def test_hard_reboot_refreshes_the_connections_and_sends_them(reboot):
    reboot.run("HARD")
    assert [c.args[1] for c in reboot.volume.attachment_update.call_args_list] \
        == ["a-1", "a-2"]
    # with the compute's connector, as unshelve connects
    assert reboot.volume.attachment_update.call_args_list[0].args[2] == \
        {"host": "h1", "dev": "/dev/vdb"}
    assert [r.connection_info["host"] for r in reboot.records] == ["new",
                                                                   "new"]
    assert [r.saved for r in reboot.records] == [["a-1"], ["a-2"]]
    call = reboot.compute.reboot_instance.call_args
    assert call.args[2] == "HARD" and call.kwargs["bdms"] is reboot.records
    # and what they were, for the host connections that moved
    assert call.kwargs["previous_connection_info"] == {
        "bdm-v1": {"host": "old"}, "bdm-v2": {"host": "old"}}
    assert reboot.instance.vm_state == "active"


def test_start_refreshes_the_connections_and_sends_them(reboot):
    reboot.run(None, action="start")
    assert reboot.volume.attachment_update.call_count == 2
    assert [r.connection_info["host"] for r in reboot.records] == ["new",
                                                                   "new"]
    call = reboot.compute.power_on_instance.call_args
    assert call.kwargs["bdms"] is reboot.records


@pytest.mark.parametrize("action", ["stop", "pause", "suspend", "resume"])
def test_other_power_actions_keep_the_connections(reboot, action):
    reboot.run(None, action=action)
    reboot.volume.attachment_update.assert_not_called()


def test_soft_reboot_keeps_the_connections(reboot):
    reboot.run("SOFT")
    reboot.volume.attachment_update.assert_not_called()
    assert reboot.compute.reboot_instance.call_args.kwargs == {}
    assert [r.connection_info for r in reboot.records] == [{"host": "old"}] * 2


def test_hard_reboot_of_an_old_compute_keeps_the_connections(reboot):
    reboot.compute.reconnects_on_reboot.return_value = False
    reboot.run("HARD")
    reboot.volume.attachment_update.assert_not_called()
    assert reboot.compute.reboot_instance.call_args.kwargs == {}


# -- the compute manager and the fake driver --------------------------------------
class Bdm:
    is_volume = True
    attach_mode = "ro"

    def __init__(self, device_name, info):
        self.device_name = device_name
        self.connection_info = info
        self.uuid = "bdm" + device_name

    def get_connection_info(self):
        return self.connection_info

    def obj_attr_is_set(self, name):
        return True


def test_compute_reconnects_only_the_plugged_volumes():
    driver = fake.FakeDriver("h1")
    manager = compute_manager.ComputeManager("h1", driver)
    instance = types.SimpleNamespace(uuid="i", image_ref="img")
    old = {"driver_volume_type": "iscsi", "attachment_id": "a-1", "p": "old"}
    driver.spawn(instance, [{"device_name": "/dev/vdb",
                             "connection_info": old}])
    fresh = dict(old, p="new")
    manager.reboot_instance(None, instance, "HARD", bdms=[
        Bdm("/dev/vdb", fresh),
        # not plugged (an attach in flight): left to its own plug
        Bdm("/dev/vdc", {"driver_volume_type": "iscsi",
                         "attachment_id": "a-2"})])
    (call,) = driver.reboots
    assert call["block_device_info"] == [
        {"device_name": "/dev/vdb", "connection_info": fresh, "mode": "ro"}]
    assert driver.guests["i"]["devices"] == {"/dev/vdb": fresh}
    assert driver.connections == {"a-1": fresh}
    # without records (a SOFT reboot, an old conductor): the driver alone
    manager.reboot_instance(None, instance, "SOFT")
    assert driver.reboots[-1]["block_device_info"] is None
    # a start the same way
    newer = dict(fresh, p="newer")
    manager.power_off_instance(None, instance)
    manager.power_on_instance(None, instance, bdms=[Bdm("/dev/vdb", newer)])
    assert driver.power_ons[-1]["block_device_info"] == [
        {"device_name": "/dev/vdb", "connection_info": newer, "mode": "ro"}]
    assert driver.guests["i"] == {"power": "running", "image": "img",
                                  "devices": {"/dev/vdb": newer},
                                  "modes": {"/dev/vdb": "ro"}}



def test_compute_lets_a_moved_host_connection_go():
    """An iSCSI portal readdressed: the session to the old portal is
    logged out (counted nowhere, connected nowhere), the new one in."""
    driver = fake.FakeDriver("h1")
    manager = compute_manager.ComputeManager("h1", driver)
    instance = types.SimpleNamespace(uuid="i", image_ref="img")
    old = {"driver_volume_type": "iscsi", "attachment_id": "a-1",
           "target_portal": "127.0.0.1:3260", "target_iqn": "iqn.x:v1"}
    bdm = Bdm("/dev/vdb", old)
    manager.build_and_run_instance(None, instance, [bdm])
    fresh = dict(old, target_portal="127.0.0.9:3260")
    bdm.connection_info = fresh
    manager.reboot_instance(None, instance, "HARD", bdms=[bdm],
                            previous_connection_info={bdm.uuid: old})
    assert list(driver.targets) == ["session:iscsi:127.0.0.9:3260:iqn.x:v1"]
    assert list(manager.connections.targets()) == list(driver.targets)
    assert driver.lost_connections == []
    assert driver.connections == {"a-1": fresh}
    # the same portal: nothing let go
    manager.reboot_instance(None, instance, "HARD", bdms=[bdm],
                            previous_connection_info={bdm.uuid: fresh})
    assert driver.target_disconnects == 1
    assert driver.connections == {"a-1": fresh}

# -- the libvirt driver's reboot --------------------------------------------------
OLD_DISK = ("<disk type='network' device='disk'><driver name='qemu' "
            "type='raw'/><source protocol='nbd' name='volume-v1'>"
            "<host name='127.0.0.1' port='10809'/></source>"
            "<target dev='vdb' bus='virtio'/><serial>v1</serial>"
            "<alias name='ua-v1'/><address type='pci' domain='0x0000' "
            "bus='0x00' slot='0x05' function='0x0'/></disk>")
OTHER_DISK = ("<disk type='network' device='disk'><source protocol='nbd' "
              "name='volume-v2'><host name='127.0.0.1' port='10809'/>"
              "</source><target dev='vdc' bus='virtio'/><serial>v2</serial>"
              "</disk>")
DOMAIN = ("<domain type='kvm'><name>g</name><devices><disk type='file' "
          "device='disk'><source file='/x/disk'/><target dev='vda' "
          "bus='virtio'/><serial>root</serial></disk>%s%s</devices></domain>"
          % (OLD_DISK, OTHER_DISK))
FRESH = {"driver_volume_type": "nbd", "host": "127.0.0.9", "port": 10900,
         "name": "volume-v1", "volume_id": "v1"}


class Domain:
    def __init__(self):
        self.active = True
        self.log = []

    def XMLDesc(self, flags):
        return DOMAIN

    def isActive(self):
        return self.active

    def shutdown(self):
        self.log.append("shutdown")
        self.active = False

    def destroy(self):
        self.log.append("destroy")
        self.active = False

    def create(self):
        self.log.append("create")
        self.active = True


def _libvirt(dom):
    drv = libvirt_driver.LibvirtDriver.__new__(libvirt_driver.LibvirtDriver)
    defined = []

    def define(xml):
        defined.append(xml)
        return dom
    conn = types.SimpleNamespace(defineXML=define,
                                 lookupByUUIDString=lambda uuid: dom)
    drv._host = types.SimpleNamespace(
        libvirt=types.SimpleNamespace(VIR_DOMAIN_XML_INACTIVE=2),
        get_connection=lambda: conn)
    return drv, defined


def _disk(xml, dev):
    for disk in ET.fromstring(xml).findall("./devices/disk"):
        if disk.find("target").get("dev") == dev:
            return disk


def test_libvirt_hard_reboot_rewrites_the_given_disks():
    dom = Domain()
    drv, defined = _libvirt(dom)
    drv.reboot(types.SimpleNamespace(uuid="i"), "HARD", block_device_info=[
        {"device_name": "/dev/vdb", "connection_info": FRESH, "mode": "ro"}])
    assert dom.log == ["destroy", "create"]
    (xml,) = defined
    disk = _disk(xml, "vdb")
    host = disk.find("source/host")
    assert (host.get("name"), host.get("port")) == ("127.0.0.9", "10900")
    assert disk.find("readonly") is not None
    # where the guest had it, once
    assert disk.find("address").get("slot") == "0x05"
    assert len(ET.fromstring(xml).findall("./devices/disk")) == 3
    # the other volume and the root disk as they were
    assert ET.tostring(_disk(xml, "vdc")) == ET.tostring(
        _disk(DOMAIN, "vdc"))
    assert _disk(xml, "vda").find("source").get("file") == "/x/disk"


def test_libvirt_soft_reboot_keeps_the_disks():
    dom = Domain()
    drv, defined = _libvirt(dom)
    drv.reboot(types.SimpleNamespace(uuid="i"), "SOFT", block_device_info=[
        {"device_name": "/dev/vdb", "connection_info": FRESH}])
    assert defined == [DOMAIN]


def test_libvirt_hard_reboot_of_a_stopped_guest_uses_its_definition():
    dom = Domain()
    dom.active = False
    drv, defined = _libvirt(dom)
    drv.reboot(types.SimpleNamespace(uuid="i"), "HARD", block_device_info=[
        {"device_name": "/dev/vdb", "connection_info": FRESH}])
    assert dom.log == ["create"]
    (xml,) = defined
    assert _disk(xml, "vdb").find("source/host").get("port") == "10900"


def test_libvirt_start_rewrites_the_given_disks():
    dom = Domain()
    dom.active = False
    drv, defined = _libvirt(dom)
    drv.power_on(types.SimpleNamespace(uuid="i"), block_device_info=[
        {"device_name": "/dev/vdb", "connection_info": FRESH}])
    assert dom.log == ["create"]
    (xml,) = defined
    assert _disk(xml, "vdb").find("source/host").get("port") == "10900"
    # without them: started as defined
    dom.active = False
    drv.power_on(types.SimpleNamespace(uuid="i"))
    assert len(defined) == 1 and dom.log == ["create", "create"]


@pytest.mark.parametrize("reconnects", [True, False])
def test_unshelve_on_its_host_refreshes_as_a_start(reboot, reconnects):
    """SHELVED (not offloaded): the guest boots again on its host, from
    fresh connections when the compute takes them (1.10)."""
    from volattach.conductor.tasks import shelve
    reboot.compute.reconnects_on_reboot.return_value = reconnects
    reboot.instance.vm_state = "shelved"
    reboot.instance.task_state = "unshelving"
    shelve.UnshelveTask(
        mock.sentinel.ctx, reboot.instance, compute_rpcapi=reboot.compute,
        volume_api=reboot.volume,
        connectors=types.SimpleNamespace(
            get=lambda ctx, host, dev, mode: {"host": host})).execute()
    call = reboot.compute.power_on_instance.call_args
    if reconnects:
        assert call.kwargs["bdms"] is reboot.records
        assert [r.connection_info["host"] for r in reboot.records] == \
            ["new", "new"]
    else:
        assert call.kwargs == {}
        reboot.volume.attachment_update.assert_not_called()
    assert reboot.instance.vm_state == "active"
