"""Device naming and the fake virt driver's host bookkeeping."""
import types

import pytest

import volattach  # noqa: F401
from volattach.compute.virt import fake
from volattach import exception
from volattach.conf import CONF
from volattach import device_naming


@pytest.fixture(autouse=True)
def conf():
    CONF([], project="volattach", default_config_files=[])
    yield CONF
    CONF.clear_override("fail_operations", group="fake_driver")


@pytest.mark.parametrize("index,suffix", [(0, "a"), (1, "b"), (25, "z"), (26, "aa"),
                                          (27, "ab"), (701, "zz"), (702, "aaa")])
def test_device_suffix(index, suffix):
    assert device_naming.device_suffix(index) == suffix


def test_assign_names_boot_disk_first_and_keeps_requested():
    bdms = [{"boot_index": None, "source_type": "volume"},
            {"boot_index": 0, "source_type": "image"},
            {"boot_index": None, "device_name": "/dev/vdc"},
            {"boot_index": 1}]
    device_naming.assign(bdms)
    assert bdms[1]["device_name"] == "/dev/vda"
    assert bdms[2]["device_name"] == "/dev/vdc"
    assert sorted(b["device_name"] for b in bdms) == ["/dev/vda", "/dev/vdb",
                                                      "/dev/vdc", "/dev/vdd"]
    assert bdms[3]["device_name"] == "/dev/vdb"  # boot order before unordered disks


def test_next_device_name_skips_used_and_rejects_requested_in_use():
    driver = fake.FakeDriver("h1")
    inst = types.SimpleNamespace(uuid="i1")
    assert driver.get_device_name_for_instance(inst, ["/dev/vda"], None) == "/dev/vdb"
    assert driver.get_device_name_for_instance(inst, ["/dev/vda", "/dev/vdb"], None) == "/dev/vdc"
    assert driver.get_device_name_for_instance(inst, ["/dev/vda"], "/dev/vdq") == "/dev/vdq"
    with pytest.raises(exception.DevicePathInUse):
        driver.get_device_name_for_instance(inst, ["/dev/vda"], "/dev/vda")


def test_connect_disconnect_counting_and_idempotence():
    driver = fake.FakeDriver("h1")
    inst = types.SimpleNamespace(uuid="i1")
    info = {"driver_volume_type": "iscsi", "data": {"attachment_id": "a1"}}
    driver.connect_volume(info, inst)
    driver.attach_volume(inst, info, "/dev/vdb")
    assert driver.guests["i1"]["devices"] == {"/dev/vdb": info}
    driver.detach_volume(inst, info, "/dev/vdb")
    driver.detach_volume(inst, info, "/dev/vdb")
    driver.disconnect_volume(info, inst)
    driver.disconnect_volume(info, inst)
    assert driver.stats()["connects"] == 1
    assert driver.stats()["disconnects"] == 1
    assert driver.stats()["connections"] == 0


def test_injected_failure(conf):
    conf.set_override("fail_operations", ["attach"], group="fake_driver")
    driver = fake.FakeDriver("h1")
    with pytest.raises(exception.VirtDriverError):
        driver.attach_volume(types.SimpleNamespace(uuid="i1"), {}, "/dev/vdb")


def test_connector_names_the_host():
    connector = fake.FakeDriver("compute7").get_volume_connector()
    assert connector["host"] == "compute7"
    assert connector["initiator"].endswith(":compute7")
