"""Object behaviour that older receivers and the views depend on."""
import uuid

import volattach  # noqa: F401
from volattach import objects
from volattach.objects import base
from volattach.objects import block_device

objects.register_all()


def _bdm(**kw):
    values = dict(id=1, uuid=str(uuid.uuid4()), instance_uuid=str(uuid.uuid4()),
                  source_type="volume", destination_type="volume",
                  volume_id=str(uuid.uuid4()), device_name="/dev/vdb",
                  attach_mode="ro")
    values.update(kw)
    return objects.BlockDeviceMapping(None, **values)


def test_bdm_backport_to_1_0_drops_attach_mode():
    primitive = _bdm().obj_to_primitive(target_version="1.0")
    data = primitive["volattach_object.data"]
    assert primitive["volattach_object.version"] == "1.0"
    assert "attach_mode" not in data
    assert data["device_name"] == "/dev/vdb"
    # an old receiver's class can load it
    old = base.VolattachObject.obj_class_from_name("BlockDeviceMapping", "1.1")
    assert old.obj_from_primitive(primitive).device_name == "/dev/vdb"


def test_bdm_current_version_keeps_attach_mode():
    data = _bdm().obj_to_primitive()["volattach_object.data"]
    assert data["attach_mode"] == "ro"


def test_bdm_list_backport_backports_its_items():
    listing = objects.BlockDeviceMappingList(None, objects=[_bdm()])
    manifest = {"BlockDeviceMappingList": "1.0", "BlockDeviceMapping": "1.0"}
    primitive = listing.obj_to_primitive(target_version="1.0", version_manifest=manifest)
    item = primitive["volattach_object.data"]["objects"][0]
    assert item["volattach_object.version"] == "1.0"
    assert "attach_mode" not in item["volattach_object.data"]


def test_volume_mapping_without_mode_reads_rw_and_local_reads_none():
    row = dict(id=1, uuid=str(uuid.uuid4()), instance_uuid=str(uuid.uuid4()),
               source_type="volume", destination_type="volume", attach_mode=None)
    assert block_device.BlockDeviceMapping._from_row(None, row).attach_mode == "rw"
    row.update(source_type="image", destination_type="local")
    assert block_device.BlockDeviceMapping._from_row(None, row).attach_mode is None


def test_attach_mode_accepts_only_ro_and_rw():
    import pytest
    with pytest.raises(ValueError):
        _bdm(attach_mode="rx")


def test_bdm_1_2_backports_to_1_1_unchanged_but_for_the_version():
    # 1.2 only added a remotable method (create_if_none_added)
    bdm = _bdm()
    primitive = bdm.obj_to_primitive(target_version="1.1")
    assert primitive["volattach_object.version"] == "1.1"
    assert primitive["volattach_object.data"] == bdm.obj_to_primitive()[
        "volattach_object.data"]


def test_bdm_list_1_2_backports_for_a_compute_of_rpc_1_3():
    listing = objects.BlockDeviceMappingList(None, objects=[_bdm()])
    manifest = {"BlockDeviceMappingList": "1.1", "BlockDeviceMapping": "1.1"}
    primitive = listing.obj_to_primitive(target_version="1.1", version_manifest=manifest)
    assert primitive["volattach_object.version"] == "1.1"
    item = primitive["volattach_object.data"]["objects"][0]
    assert item["volattach_object.version"] == "1.1"
    assert item["volattach_object.data"]["attach_mode"] == "ro"


def _instance(**kw):
    values = dict(id=1, uuid=str(uuid.uuid4()), project_id="p", user_id="u",
                  vm_state="active", power_state=1, user_data="ZWNobyBoaQo=")
    values.update(kw)
    return objects.Instance(None, **values)


def test_instance_backport_to_1_0_drops_user_data():
    primitive = _instance().obj_to_primitive(target_version="1.0")
    assert primitive["volattach_object.version"] == "1.0"
    assert "user_data" not in primitive["volattach_object.data"]
    assert primitive["volattach_object.data"]["vm_state"] == "active"
    data = _instance().obj_to_primitive()["volattach_object.data"]
    assert data["user_data"] == "ZWNobyBoaQo="


def test_instance_user_data_bytes_decodes_or_is_none():
    assert _instance().user_data_bytes == b"echo hi\n"
    assert _instance(user_data=None).user_data_bytes is None
    unset = objects.Instance(None, uuid=str(uuid.uuid4()))
    assert unset.user_data_bytes is None
