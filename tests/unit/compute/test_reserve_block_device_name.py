"""The compute's reserve_block_device_name against a real (SQLite) database
behind a recording indirection API: from the conductor's listing (compute
RPC 1.4) it names the device and creates the BDM in one call back to the
conductor; a listing that turns out stale, or no listing at all (an older
conductor), makes it read the mappings itself, as before 1.4."""
import threading
import types
import uuid

import pytest

import volattach  # noqa: F401
from volattach import objects
from volattach.compute import manager as compute_manager
from volattach.compute.virt import fake
from volattach.conductor import local_indirection
from volattach.objects import base as objects_base
from tests import db_fixtures
from volattach import context as volattach_context
from volattach import exception
from volattach.conf import CONF

objects.register_all()


class RecordingConductor(local_indirection.LocalIndirection):
    """The conductor's object indirection endpoints, called in-process with
    the objects through the wire format (volattach-all's
    ``LocalIndirection``); records each call back."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def object_class_action_versions(self, context, objname, objmethod,
                                     object_versions, args, kwargs):
        self.calls.append("%s.%s" % (objname, objmethod))
        return super().object_class_action_versions(
            context, objname, objmethod, object_versions, args, kwargs)

    def object_action(self, context, objinst, objmethod, args, kwargs):
        self.calls.append("%s.%s" % (objinst.obj_name(), objmethod))
        return super().object_action(context, objinst, objmethod, args,
                                     kwargs)


@pytest.fixture
def env(tmp_path, monkeypatch):
    CONF([], project="volattach", default_config_files=[])
    monkeypatch.setattr(objects_base._INDIRECTION, "process_api", None)
    with db_fixtures.compute_database("sqlite", tmp_path) as url:
        CONF.set_override("connection", url, group="database")
        try:
            ctx = volattach_context.RequestContext(user_id="u", project_id="p")
            instance = types.SimpleNamespace(uuid=db_fixtures.instance_row(),
                                             host="h1")
            objects.BlockDeviceMapping(   # the root disk
                ctx, uuid=str(uuid.uuid4()), instance_uuid=instance.uuid,
                source_type="image", destination_type="local",
                device_name="/dev/vda", boot_index=0).create()
            yield types.SimpleNamespace(
                ctx=ctx, instance=instance, conductor=RecordingConductor(),
                compute=compute_manager.ComputeManager("h1", fake.FakeDriver("h1")))
        finally:
            CONF.clear_override("connection", group="database")
            CONF.clear_override("max_disk_devices_to_attach", group="compute")
            from volattach.db import engine as db_engine
            db_engine.dispose_all()


def _existing(env, device_name, volume_id=None):
    bdm = objects.BlockDeviceMapping(
        env.ctx, uuid=str(uuid.uuid4()), instance_uuid=env.instance.uuid,
        source_type="volume", destination_type="volume",
        volume_id=volume_id or str(uuid.uuid4()), device_name=device_name,
        boot_index=None)
    bdm.create()
    return bdm


def _listing(env):
    return objects.BlockDeviceMappingList.get_by_instance_uuid(env.ctx, env.instance.uuid)


def _reserve(env, volume_id, bdms, device=None, bdm_uuid=None):
    with objects_base.indirection(env.conductor):
        return env.compute.reserve_block_device_name(
            env.ctx, env.instance, device, volume_id, tag="t",
            delete_on_termination=True, bdms=bdms, bdm_uuid=bdm_uuid)


def _names(env):
    """The volumes' device names."""
    return sorted(b.device_name for b in _listing(env) if b.is_volume)


def test_from_the_conductors_listing_one_call_back(env):
    _existing(env, "/dev/vdb")
    bdm = _reserve(env, "vol-new", _listing(env))
    assert env.conductor.calls == ["BlockDeviceMapping.create_if_none_added"]
    assert (bdm.device_name, bdm.volume_id, bdm.tag, bdm.delete_on_termination) == (
        "/dev/vdc", "vol-new", "t", True)
    assert bdm.id and bdm.attach_mode == "rw"
    assert _names(env) == ["/dev/vdb", "/dev/vdc"]


def test_a_mapping_added_since_the_listing_makes_it_read_them_again(env):
    listing = _listing(env)
    _existing(env, "/dev/vdb")       # another attach, after the conductor read
    bdm = _reserve(env, "vol-new", listing)
    assert env.conductor.calls == ["BlockDeviceMapping.create_if_none_added",
                                   "BlockDeviceMappingList.get_by_instance_uuid",
                                   "BlockDeviceMapping.create"]
    assert bdm.device_name == "/dev/vdc"
    assert _names(env) == ["/dev/vdb", "/dev/vdc"]


def test_a_stale_listing_never_refuses_on_its_own(env):
    gone = _existing(env, "/dev/vdb", volume_id="vol-1")
    listing = _listing(env)
    gone.destroy()                   # detached since the conductor read
    bdm = _reserve(env, "vol-1", listing, device="/dev/vdb")
    assert env.conductor.calls == ["BlockDeviceMappingList.get_by_instance_uuid",
                                   "BlockDeviceMapping.create"]
    assert bdm.device_name == "/dev/vdb"


def test_without_a_listing_it_reads_them_itself(env):
    _existing(env, "/dev/vdb")
    bdm = _reserve(env, "vol-new", None)
    assert env.conductor.calls == ["BlockDeviceMappingList.get_by_instance_uuid",
                                   "BlockDeviceMapping.create"]
    assert bdm.device_name == "/dev/vdc"


@pytest.mark.parametrize("listed", [True, False])
def test_refusals_stand_and_create_nothing(env, listed):
    _existing(env, "/dev/vdb", volume_id="vol-1")
    with pytest.raises(exception.VolumeAlreadyAttached):
        _reserve(env, "vol-1", _listing(env) if listed else None)
    with pytest.raises(exception.DevicePathInUse):
        _reserve(env, "vol-2", _listing(env) if listed else None, device="/dev/vdb")
    CONF.set_override("max_disk_devices_to_attach", 2, group="compute")
    with pytest.raises(exception.TooManyDiskDevices):
        _reserve(env, "vol-3", _listing(env) if listed else None)
    assert _names(env) == ["/dev/vdb"]


def test_concurrent_reserves_from_one_listing_get_distinct_names(env):
    listing = _listing(env)
    names, errors = [], []
    start = threading.Barrier(3)

    def reserve(volume_id):
        start.wait()
        try:
            names.append(_reserve(env, volume_id, listing).device_name)
        except Exception as error:  # noqa: BLE001 (reported below)
            errors.append(error)
    threads = [threading.Thread(target=reserve, args=("vol-%d" % i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    assert sorted(names) == _names(env) == ["/dev/vdb", "/dev/vdc", "/dev/vdd"]
    # the first under the lock used the listing; the others found it stale
    assert env.conductor.calls.count("BlockDeviceMapping.create_if_none_added") == 3
    assert env.conductor.calls.count("BlockDeviceMapping.create") == 2


@pytest.mark.parametrize("listed", [True, False])
def test_the_record_gets_the_conductors_uuid(env, listed):
    """Compute RPC 1.9: the conductor names the record, so that it can find
    it when the answer of the reserve is lost."""
    chosen = str(uuid.uuid4())
    bdm = _reserve(env, "vol-new", _listing(env) if listed else None,
                   bdm_uuid=chosen)
    assert bdm.uuid == chosen
    [stored] = [b for b in _listing(env) if b.is_volume]
    assert (stored.uuid, stored.volume_id) == (chosen, "vol-new")


def test_without_a_uuid_the_compute_makes_one(env):
    first = _reserve(env, "vol-1", _listing(env))
    second = _reserve(env, "vol-2", _listing(env))
    assert len({first.uuid, second.uuid}) == 2


def test_a_reserve_delivered_again_returns_its_record(env):
    """The same request twice (a redelivery): the second finds the record
    the first made, creates nothing and is not refused as a second attach
    of the volume."""
    chosen = str(uuid.uuid4())
    listing = _listing(env)
    first = _reserve(env, "vol-new", listing, bdm_uuid=chosen)
    again = _reserve(env, "vol-new", listing, bdm_uuid=chosen)
    assert (again.id, again.uuid, again.device_name) == (
        first.id, chosen, first.device_name)
    assert _names(env) == [first.device_name]


@pytest.mark.parametrize("listed", [True, False])
def test_a_reserve_after_its_attach_gave_up_creates_nothing(env, listed):
    """The conductor's attach got no answer and abandoned the uuid it sent
    (``BlockDeviceMapping.abandon_reservation``); the request reaches the
    compute only then (held back in a restarting broker): the creation
    through the conductor is refused, whatever way the compute takes, and
    the server keeps the records it had."""
    chosen = str(uuid.uuid4())
    before = [b.uuid for b in _listing(env)]
    objects.BlockDeviceMapping.abandon_reservation(
        env.ctx, env.instance.uuid, chosen)
    with pytest.raises(exception.ReservationAbandoned):
        _reserve(env, "vol-new", _listing(env) if listed else None,
                 bdm_uuid=chosen)
    assert [b.uuid for b in _listing(env)] == before
    # the next attach of the same volume reserves as usual
    assert _reserve(env, "vol-new", _listing(env),
                    bdm_uuid=str(uuid.uuid4())).volume_id == "vol-new"
