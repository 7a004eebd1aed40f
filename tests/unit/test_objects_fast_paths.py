"""objects.base's fast obj_attr_is_set / obj_what_changed / obj_to_primitive
give exactly what oslo.versionedobjects' own implementations give."""
import datetime
import uuid

import pytest

import volattach  # noqa: F401
from volattach import objects
from volattach.objects import base

objects.register_all()

NOW = datetime.datetime(2026, 8, 1, 12, 30, 45, tzinfo=datetime.timezone.utc)


def _flavor(**kw):
    values = dict(id=1, flavorid="1", name="m1.tiny", vcpus=1, memory_mb=512,
                  root_gb=1, ephemeral_gb=0, swap=0, rxtx_factor=1.0,
                  is_public=True, disabled=False, description=None)
    values.update(kw)
    return objects.Flavor(None, **values)


def _instance(**kw):
    values = dict(
        id=7, uuid=str(uuid.uuid4()), project_id="p1", user_id="u1",
        display_name="vm1", hostname="vm1", host="compute1", node=None,
        vm_state="active", task_state=None, power_state=1, flavor=_flavor(),
        image_ref="", key_name=None, locked=False, launch_index=0,
        metadata={"a": "b"}, fault={"code": 500, "message": "boom"},
        launched_at=NOW, created_at=NOW, updated_at=None, deleted=False)
    values.update(kw)
    return objects.Instance(None, **values)


def _bdm(**kw):
    values = dict(id=1, uuid=str(uuid.uuid4()), instance_uuid=str(uuid.uuid4()),
                  source_type="volume", destination_type="volume",
                  volume_id=str(uuid.uuid4()), device_name="/dev/vdb",
                  connection_info='{"driver_volume_type": "iscsi"}',
                  attach_mode="ro", created_at=NOW)
    values.update(kw)
    return objects.BlockDeviceMapping(None, **values)


def _oslos(obj, method):
    """``obj``'s ``method`` as oslo.versionedobjects alone would resolve it
    (skipping objects.base.VolattachObject's fast versions)."""
    for cls in type(obj).__mro__:
        if cls is not base.VolattachObject and method in cls.__dict__ \
                and cls.__module__.startswith("oslo_versionedobjects"):
            return getattr(cls, method).__get__(obj)
    raise AssertionError(method)


def _oslo_primitive(obj, *args):
    return _oslos(obj, "obj_to_primitive")(*args)


def _normalized(primitive):
    """Primitives compare with their ``changes`` lists as sets (oslo builds
    them from a set: their order means nothing)."""
    if isinstance(primitive, list):
        return [_normalized(p) for p in primitive]
    if not isinstance(primitive, dict):
        return primitive
    result = {}
    for key, value in primitive.items():
        if key.endswith(".changes"):
            result[key] = sorted(value)
        else:
            result[key] = _normalized(value)
    return result


def _examples():
    reset = _instance()
    reset.obj_reset_changes(recursive=True)
    nested_change = _instance()
    nested_change.obj_reset_changes(recursive=True)
    nested_change.flavor.name = "renamed"       # a change only in the child
    partial = objects.Instance(None, uuid=str(uuid.uuid4()), vm_state="active")
    bdm_list = objects.BlockDeviceMappingList(None, objects=[_bdm(), _bdm(tag="t")])
    bdm_list.obj_reset_changes(recursive=True)
    service = objects.Service(None, id=1, uuid=str(uuid.uuid4()), host="h",
                              binary="volattach-compute", report_count=1,
                              disabled=False, forced_down=False, version=4,
                              connector={"host": "h", "initiator": "iqn"},
                              last_seen_up=NOW)
    payload = objects.InstanceActionVolumePayload(
        uuid=str(uuid.uuid4()), volume_id="v", block_devices=[
            objects.BlockDevicePayload(volume_id="v", attach_mode="rw")])
    changed_item = objects.BlockDeviceMappingList(None, objects=[_bdm()])
    changed_item.obj_reset_changes(recursive=True)
    changed_item.objects[0].tag = "changed"
    return [_instance(), reset, nested_change, partial, _bdm(), bdm_list,
            changed_item, service, payload, _flavor()]


@pytest.mark.parametrize("obj", _examples(), ids=lambda o: o.obj_name())
def test_to_primitive_is_oslos(obj):
    assert _normalized(obj.obj_to_primitive()) == _normalized(_oslo_primitive(obj))
    assert (_normalized(obj.obj_to_primitive(obj.VERSION))
            == _normalized(_oslo_primitive(obj, obj.VERSION)))


@pytest.mark.parametrize("obj", _examples(), ids=lambda o: o.obj_name())
def test_what_changed_and_attr_is_set_are_oslos(obj):
    assert obj.obj_what_changed() == _oslos(obj, "obj_what_changed")()
    for name in obj.fields:
        assert obj.obj_attr_is_set(name) == _oslos(obj, "obj_attr_is_set")(name)


def test_nested_change_is_seen_and_serialized():
    instance = _instance()
    instance.obj_reset_changes(recursive=True)
    assert instance.obj_what_changed() == set()
    instance.flavor.vcpus = 4
    assert instance.obj_what_changed() == {"flavor"}
    primitive = instance.obj_to_primitive()
    assert primitive["volattach_object.changes"] == ["flavor"]
    flavor = primitive["volattach_object.data"]["flavor"]
    assert flavor["volattach_object.changes"] == ["vcpus"]


def test_unknown_attribute_still_raises():
    with pytest.raises(AttributeError):
        _instance().obj_attr_is_set("no_such_field")


def test_round_trip_through_the_serializer():
    serializer = base.VolattachObjectSerializer()
    instance = _instance()
    instance.obj_reset_changes(recursive=True)
    instance.task_state = "attaching"
    back = serializer.deserialize_entity(None, serializer.serialize_entity(None, instance))
    assert back.obj_to_primitive() == instance.obj_to_primitive()
    assert back.obj_what_changed() == {"task_state"}
    assert back.flavor.memory_mb == 512 and back.launched_at == NOW


def test_other_target_versions_still_backport():
    data = _bdm().obj_to_primitive(target_version="1.0")["volattach_object.data"]
    assert "attach_mode" not in data


def _row():
    naive = datetime.datetime(2026, 8, 1, 12, 30, 45, 123456)
    return dict(
        id=7, uuid=str(uuid.uuid4()), project_id="p1", user_id="u1",
        display_name="vm1", display_description=None, hostname="vm1",
        host="compute1", node=None, vm_state="active", task_state=None,
        power_state=1, image_ref="", key_name=None, locked=False,
        locked_by=None, launch_index=0, config_drive="", shelved_at=None,
        launched_at=naive, terminated_at=None, deleted_at=None,
        created_at=naive, updated_at=NOW,     # a tz-aware one too
        availability_zone=7)                  # not a str: coerced to "7"


def test_fill_gives_what_coercion_gives():
    row = _row()
    filled = base.fill(objects.Instance(None), row)
    coerced = objects.Instance(None)
    for name, value in row.items():
        setattr(coerced, name, value)
    for name in row:
        assert getattr(filled, name) == getattr(coerced, name), name
        assert type(getattr(filled, name)) is type(getattr(coerced, name)), name
    assert filled.launched_at.tzinfo is datetime.timezone.utc
    assert filled.availability_zone == "7"
    assert filled.obj_what_changed() == set()
    assert not filled.obj_attr_is_set("flavor")
    assert _normalized(filled.obj_to_primitive())["volattach_object.data"] == \
        _normalized(_oslo_primitive(coerced))["volattach_object.data"]


def test_fill_skips_and_refuses_like_coercion():
    row = _row()
    filled = base.fill(objects.Instance(None), row, skip=("host",))
    assert not filled.obj_attr_is_set("host")
    with pytest.raises(ValueError):
        base.fill(objects.Instance(None), dict(row, vm_state=None))   # not nullable


def _oslo_from_primitive(cls, primitive):
    for klass in cls.__mro__:
        if (klass is not base.VolattachObject
                and "_obj_from_primitive" in klass.__dict__
                and klass.__module__.startswith("oslo_versionedobjects")):
            return klass.__dict__["_obj_from_primitive"].__func__(
                cls, None, cls.VERSION, primitive)
    raise AssertionError("_obj_from_primitive")


def _state(obj):
    """Every set field's value and type, and the changed fields (nested
    objects compared the same way: they have no ``__eq__``)."""
    def value(v):
        if isinstance(v, base.ovo_base.VersionedObject):
            return _state(v)
        if isinstance(v, list):
            return [value(item) for item in v]
        return v
    return ({name: (value(getattr(obj, name)), type(getattr(obj, name)))
             for name in obj.fields if obj.obj_attr_is_set(name)},
            obj.obj_what_changed())


@pytest.mark.parametrize("obj", _examples(), ids=lambda o: o.obj_name())
def test_from_primitive_is_oslos(obj):
    primitive = obj.obj_to_primitive()
    ours = type(obj).obj_from_primitive(primitive)
    theirs = _oslo_from_primitive(type(obj), primitive)
    assert _state(ours) == _state(theirs)
    assert _normalized(ours.obj_to_primitive()) == _normalized(primitive)


def test_from_primitive_coerces_values_of_another_type():
    instance = _instance()
    instance.obj_reset_changes(recursive=True)
    primitive = instance.obj_to_primitive()
    data = primitive["volattach_object.data"]
    data.update(display_name=7, locked=1, launch_index="3", node=None,
                no_such_field="ignored")
    primitive["volattach_object.changes"] = ["display_name", "no_such_field"]
    ours = objects.Instance.obj_from_primitive(primitive)
    theirs = _oslo_from_primitive(objects.Instance, primitive)
    assert _state(ours) == _state(theirs)
    assert (ours.display_name, ours.locked, ours.launch_index) == ("7", True, 3)
    assert ours.obj_what_changed() == {"display_name"}


def test_from_primitive_refuses_none_where_coercion_does():
    primitive = _instance().obj_to_primitive()
    primitive["volattach_object.data"]["vm_state"] = None   # not nullable
    with pytest.raises(ValueError):
        objects.Instance.obj_from_primitive(primitive)
    with pytest.raises(ValueError):
        _oslo_from_primitive(objects.Instance, primitive)


def test_what_changed_looks_into_objects_held_by_any_field_that_can():
    # a JSON field may hold anything, a versioned object too
    service = objects.Service(None, id=1, host="h", connector={"a": 1})
    flavor = _flavor()
    flavor.obj_reset_changes()
    service.connector = flavor
    service.obj_reset_changes()
    assert service.obj_what_changed() == set()
    service.connector.name = "renamed"
    assert service.obj_what_changed() == {"connector"}
    assert service.obj_what_changed() == _oslos(service, "obj_what_changed")()


@pytest.mark.parametrize("text", [
    "2026-08-01T12:30:45Z",              # oslo's own format (isotime)
    "2026-08-01T12:30:45.123456Z",       # the others: oslo's parsing
    "2026-08-01T12:30:45+02:00",
    "2026-08-01T12:30:45",
    "2026-08-01 12:30:45Z",
    "2026-02-30T12:30:45Z",              # the fast path's pattern, not a date
    "2026-08-01T24:00:00Z",
    "2026-08-01T12:30:60Z",
])
def test_from_primitive_parses_datetimes_as_oslo(text):
    primitive = _instance().obj_to_primitive()
    primitive["volattach_object.data"]["launched_at"] = text
    try:
        theirs = _oslo_from_primitive(objects.Instance, primitive)
    except ValueError:
        with pytest.raises(ValueError):
            objects.Instance.obj_from_primitive(primitive)
        return
    ours = objects.Instance.obj_from_primitive(primitive)
    assert _state(ours) == _state(theirs)
    assert ours.launched_at.tzinfo == theirs.launched_at.tzinfo
    assert ours.launched_at.utcoffset() == theirs.launched_at.utcoffset()


def test_from_primitive_datetime_none_and_wire_format():
    instance = _instance(updated_at=None)
    primitive = instance.obj_to_primitive()
    assert primitive["volattach_object.data"]["launched_at"] == "2026-08-01T12:30:45Z"
    back = objects.Instance.obj_from_primitive(primitive)
    assert back.launched_at == NOW and back.launched_at.tzinfo is datetime.timezone.utc
    assert back.updated_at is None


def test_fill_leaves_missing_columns_unset_and_coerces_odd_types():
    row = {"uuid": str(uuid.uuid4()), "vm_state": "active", "host": None,
           "locked": 1, "launch_index": "3", "launched_at": NOW,
           "created_at": "2026-08-01T12:30:45Z"}
    filled = base.fill(objects.Instance(None), row)
    coerced = objects.Instance(None)
    for name, value in row.items():
        setattr(coerced, name, value)
    assert _state(filled)[0] == _state(coerced)[0]
    assert filled.obj_what_changed() == set()
    for name in ("id", "display_name", "updated_at", "flavor"):
        assert not filled.obj_attr_is_set(name)
    assert filled.host is None and filled.locked is True and filled.launch_index == 3
