"""A record released or moved from a stale read: an offload racing a
detach (found by the interleaving tier, seed 1303: the offload swaps each
record's attachment for a connector-less one while a detach that was
already under way takes the record), an attach racing a delete that does
not mark the server ``deleting`` (the API's local delete; soak seed 2114:
the attach saves its attachment into a record the delete had read without
one), a swap racing a shelve-offload (interleaving seed 1301: each saved
the record it had read, leaving the swap's volume with the offload's
attachment of the old volume), and a swap of an offloaded server racing
its unshelve (the unshelve's connection of the old volume must not land in
the swapped record).  Unit tests of the conductor tasks with test
doubles for the compute RPC client and the volume API; the records are
real (SQLite, and PostgreSQL where it runs) but in the first test."""
import types
import uuid
from unittest import mock

import pytest

import volattach  # noqa: F401
from volattach import exception
from volattach import objects
from volattach.conductor.tasks import detach as detach_task
from volattach.conductor.tasks import shelve as shelve_task
from volattach.conductor.tasks import swap as swap_task
from volattach import context as volattach_context
from volattach.db import api as db_api
from volattach import volume_release
from tests import db_fixtures

objects.register_all()


class Record:
    """A block-device record whose save fails once a detach destroyed it."""

    def __init__(self, attachment_id):
        self.id = 7
        self.volume_id = "vol-1"
        self.attachment_id = attachment_id
        self.attach_mode = "rw"
        self.connection_info = {"driver_volume_type": "fake"}
        self.is_volume = True
        self.destroyed = False
        self.saved = []

    def save_if_attachment(self, attachment_id):
        if self.destroyed:
            raise exception.BDMNotFound(id=self.id)
        self.saved.append(self.attachment_id)
        return True

    def destroy(self):
        self.destroyed = True


def _collaborators(volume, connector=None):
    return {"volume_api": volume, "compute_rpcapi": mock.Mock(),
            "connectors": types.SimpleNamespace(
                get=lambda *args: connector)}


def _detach(volume, ctx, instance, volume_id):
    """The conductor's detach endpoint: the task, run as for a cast."""
    detach_task.base.execute_cast(detach_task.DetachVolumeTask(
        ctx, instance, volume_id, **_collaborators(volume)))


@pytest.fixture
def instance():
    inst = mock.Mock(uuid="inst-1", host="h1", task_state="shelving_offloading")
    return inst


def test_offload_deletes_its_new_attachment_when_the_record_is_gone(instance):
    record = Record("att-old")
    record.destroyed = True          # the detach finished first
    volume = mock.Mock()
    volume.attachment_create.return_value = {"id": "att-new"}
    with mock.patch.object(shelve_task.objects, "BlockDeviceMappingList") as lists, \
            mock.patch.object(shelve_task.base, "Event") as events:
        lists.get_by_instance_uuid.return_value = [record]
        shelve_task.ShelveOffloadTask(mock.sentinel.ctx, instance,
                                      **_collaborators(volume)).execute()
    # the connector-less attachment made for a record that is gone is deleted
    volume.attachment_delete.assert_called_once_with(mock.sentinel.ctx, "att-new")
    # and the offload itself still completes
    assert instance.vm_state == "shelved_offloaded"
    assert instance.task_state is None
    events.return_value.success.assert_called_once_with()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database(request, tmp_path):
    with db_fixtures.configured_compute_database(request.param, tmp_path) as url:
        yield url


def _stored_record(attachment_id):
    """A real volume record (SQLite) of a real server row."""
    ctx = volattach_context.RequestContext(user_id="alice", project_id="demo")
    instance_uuid = db_fixtures.instance_row()
    bdm = objects.BlockDeviceMapping(
        ctx, uuid=str(uuid.uuid4()), instance_uuid=instance_uuid,
        source_type="volume", destination_type="volume", volume_id="vol-1",
        device_name="/dev/vdb", boot_index=None, attachment_id=attachment_id,
        connection_info='{"driver_volume_type": "fake"}')
    bdm.create()
    return ctx, instance_uuid, bdm


class OffloadingVolumeAPI:
    """A volume API double whose attachment_delete of ``at`` is where an
    offload (it swaps the record's attachment, ``shelve._offload``) lands."""

    def __init__(self, record, at):
        self._record, self._at = record, at
        self.deleted = []
        self.rolled_back = []

    def roll_detaching(self, ctx, volume_id):
        self.rolled_back.append(volume_id)

    def attachment_delete(self, ctx, attachment_id):
        self.deleted.append(attachment_id)
        if attachment_id == self._at:
            swapped = objects.BlockDeviceMapping.get_by_volume_and_instance(
                ctx, self._record.volume_id, self._record.instance_uuid)
            swapped.attachment_id = "att-new"
            swapped.connection_info = None
            swapped.save()


@pytest.mark.parametrize("swap_at", ["att-old", None],
                         ids=["offload-during-delete", "no-offload"])
def test_detach_deletes_the_attachment_an_offload_put_on_the_record(
        database, swap_at):
    """The offload's swap lands while the detach deletes the old attachment
    (after every read the detach makes of the record): the detach deletes
    the new attachment too, and the record goes."""
    ctx, instance_uuid, record = _stored_record("att-old")
    volume = OffloadingVolumeAPI(record, at=swap_at)
    instance = objects.Instance(ctx, uuid=instance_uuid, host="h1", task_state=None)
    with mock.patch.object(detach_task.objects, "Instance") as instances, \
            mock.patch.object(detach_task.base, "Event") as events, \
            mock.patch.object(detach_task, "notify_volume"):
        instances.get_by_uuid.return_value = instance
        _detach(volume, ctx, instance, "vol-1")
    events.return_value.success.assert_called_once_with()
    assert volume.rolled_back == []
    assert volume.deleted == (["att-old", "att-new"] if swap_at else ["att-old"])
    assert db_api.bdm_get_by_instance_uuids([instance_uuid]) == []


def test_a_destroy_if_attachment_leaves_a_swapped_record(database):
    ctx, instance_uuid, record = _stored_record("att-old")
    stale = objects.BlockDeviceMapping.get_by_volume_and_instance(
        ctx, "vol-1", instance_uuid)
    record.attachment_id = "att-new"
    record.save()
    assert stale.destroy_if_attachment("att-old") is False
    assert stale.attachment_id == "att-new"          # what it holds now
    assert [r["attachment_id"] for r in
            db_api.bdm_get_by_instance_uuids([instance_uuid])] == ["att-new"]
    assert stale.destroy_if_attachment("att-new") is True
    assert db_api.bdm_get_by_instance_uuids([instance_uuid]) == []
    # gone already (a server delete took it): nothing to wait for
    assert stale.destroy_if_attachment("att-new") is True


@pytest.mark.parametrize("state", ["shelving", "shelving_offloading", "migrating"])
def test_detach_refuses_while_a_workflow_moves_the_attachments(instance, state):
    volume = mock.Mock()
    with mock.patch.object(detach_task.objects, "Instance") as instances, \
            mock.patch.object(detach_task.objects, "BlockDeviceMapping") as bdms, \
            mock.patch.object(detach_task.base, "Event") as events, \
            mock.patch.object(detach_task, "notify_volume"):
        instances.get_by_uuid.return_value = types.SimpleNamespace(
            uuid="inst-1", host="h1", task_state=state)
        _detach(volume, mock.sentinel.ctx, instance, "vol-1")
    bdms.get_by_volume_and_instance.assert_not_called()
    volume.attachment_delete.assert_not_called()
    volume.roll_detaching.assert_called_once_with(mock.sentinel.ctx, "vol-1")
    events.return_value.failure.assert_called_once()


def test_a_delete_releases_the_attachment_saved_after_its_read(database):
    """The delete read the record before the attach saved its attachment
    into it: the delete's release deletes that attachment, and the record
    goes (it used to destroy the record only, leaving the attachment)."""
    ctx, instance_uuid, record = _stored_record(None)
    read_by_delete = objects.BlockDeviceMappingList.get_by_instance_uuid(
        ctx, instance_uuid)
    record.attachment_id = "att-of-the-attach"     # the attach's save
    record.save()
    volume = OffloadingVolumeAPI(record, at=None)
    volume_release.release_instance_volumes(ctx, volume, read_by_delete)
    assert volume.deleted == ["att-of-the-attach"]
    assert db_api.bdm_get_by_instance_uuids([instance_uuid]) == []


def test_a_detach_leaves_a_record_a_swap_moved_to_another_volume(database):
    """The detach of vol-1 read the record before a swap moved it onto
    vol-2 (new attachment): the detach deletes vol-1's attachment and
    leaves the record, vol-2's now, attached."""
    ctx, instance_uuid, record = _stored_record("att-old")
    read_by_detach = objects.BlockDeviceMapping.get_by_volume_and_instance(
        ctx, "vol-1", instance_uuid)
    record.volume_id, record.attachment_id = "vol-2", "att-vol-2"   # the swap
    record.save()
    volume = OffloadingVolumeAPI(record, at=None)
    volume_release.release_volume_record(ctx, volume, read_by_detach,
                                         volume_id="vol-1")
    assert volume.deleted == ["att-old"]
    assert [(r["volume_id"], r["attachment_id"]) for r in
            db_api.bdm_get_by_instance_uuids([instance_uuid])] == [
        ("vol-2", "att-vol-2")]
    # a server delete follows the record wherever it went
    volume_release.release_instance_volumes(ctx, volume, [read_by_detach])
    assert volume.deleted == ["att-old", "att-vol-2"]
    assert db_api.bdm_get_by_instance_uuids([instance_uuid]) == []


def test_a_detach_copy_never_deletes_the_volume_even_if_the_record_changed(
        database):
    """The API's offloaded detach releases a copy marked keep-the-volume;
    a record that changed meanwhile (read again by the release) must not
    bring its delete_on_termination back."""
    ctx, instance_uuid, record = _stored_record(None)
    record.delete_on_termination = True
    record.save()
    copy = objects.BlockDeviceMapping.get_by_volume_and_instance(
        ctx, "vol-1", instance_uuid)
    copy.delete_on_termination = False             # _keep_volume
    record.attachment_id = "att-late"
    record.save()
    volume = OffloadingVolumeAPI(record, at=None)
    volume.delete_volume = lambda ctx, volume_id: volume.deleted.append(
        "volume " + volume_id)
    volume_release.release_instance_volumes(ctx, volume, [copy])
    assert volume.deleted == ["att-late"]
    assert db_api.bdm_get_by_instance_uuids([instance_uuid]) == []


def test_a_save_if_attachment_leaves_a_moved_record(database):
    ctx, instance_uuid, record = _stored_record("att-old")
    stale = objects.BlockDeviceMapping.get_by_volume_and_instance(
        ctx, "vol-1", instance_uuid)
    record.volume_id, record.attachment_id = "vol-2", "att-vol-2"
    record.save()
    stale.attachment_id = "att-offload"
    stale.connection_info = None
    assert stale.save_if_attachment("att-old") is False
    # what the record holds now, the stale change dropped
    assert (stale.volume_id, stale.attachment_id) == ("vol-2", "att-vol-2")
    assert stale.obj_what_changed() == set()
    assert _records(instance_uuid) == [("vol-2", "att-vol-2")]
    stale.attachment_id = "att-offload"
    assert stale.save_if_attachment("att-vol-2") is True
    assert _records(instance_uuid) == [("vol-2", "att-offload")]
    record.destroy()
    with pytest.raises(exception.BDMNotFound):
        stale.save_if_attachment("att-offload")


def _records(instance_uuid):
    return [(r["volume_id"], r["attachment_id"])
            for r in db_api.bdm_get_by_instance_uuids([instance_uuid])]


class RecordingVolumeAPI:
    """A volume API double that names the attachments it creates
    ``att-offload-<n>`` and runs ``during`` (once) inside the ``at`` call."""

    def __init__(self, at, during):
        self._at, self._during = at, during
        self.created, self.deleted, self.rolled_back = [], [], []

    def _maybe(self, name):
        if name == self._at and self._during is not None:
            during, self._during = self._during, None
            during()

    def attachment_create(self, ctx, volume_id, instance_uuid, mode=None):
        self._maybe("attachment_create")
        self.created.append((volume_id, "att-offload-%d" % len(self.created)))
        return {"id": self.created[-1][1]}

    def attachment_update(self, ctx, attachment_id, connector, mountpoint=None):
        self._maybe("attachment_update")
        return {"connection_info": {"driver_volume_type": "fake",
                                    "attachment": attachment_id}}

    def attachment_complete(self, ctx, attachment_id):
        pass

    def attachment_delete(self, ctx, attachment_id):
        self.deleted.append(attachment_id)

    def roll_detaching(self, ctx, volume_id):
        self.rolled_back.append(volume_id)

    def get(self, ctx, volume_id):
        return {"id": volume_id, "status": "in-use"}


def _move(ctx, instance_uuid, volume_id, attachment_id):
    """Another workflow's save of the record (a swap or an offload)."""
    def move():
        other = objects.BlockDeviceMapping.get_by_volume_and_instance(
            ctx, "vol-1", instance_uuid)
        other.volume_id, other.attachment_id = volume_id, attachment_id
        other.save()
    return move


def test_an_offload_follows_a_record_a_swap_moved(database):
    """The swap of vol-1 to vol-2 saves the record after the offload read
    it: the offload's save finds another attachment, deletes the one it
    made for vol-1 and offloads vol-2 (it used to write its vol-1
    attachment into the swap's vol-2 record)."""
    ctx, instance_uuid, record = _stored_record("att-old")
    volume = RecordingVolumeAPI(
        "attachment_create", _move(ctx, instance_uuid, "vol-2", "att-vol-2"))
    instance = mock.Mock(uuid=instance_uuid, host="h1",
                         task_state="shelving_offloading")
    with mock.patch.object(shelve_task.base, "Event") as events:
        shelve_task.ShelveOffloadTask(ctx, instance,
                                      **_collaborators(volume)).execute()
    events.return_value.success.assert_called_once_with()
    assert volume.created == [("vol-1", "att-offload-0"),
                              ("vol-2", "att-offload-1")]
    assert volume.deleted == ["att-offload-0", "att-vol-2"]
    assert _records(instance_uuid) == [("vol-2", "att-offload-1")]
    assert db_api.bdm_get_by_instance_uuids(
        [instance_uuid])[0]["connection_info"] is None
    assert instance.vm_state == "shelved_offloaded"


def _swap(during_compute_swap=None):
    """Run the conductor's swap of vol-1 (attachment att-old) to vol-2
    (att-vol-2) on a stored record; ``during_compute_swap(ctx, uuid)``
    runs inside the compute's call.  Returns (volume API double, records
    after, Event mock)."""
    ctx, instance_uuid, record = _stored_record("att-old")
    volume = RecordingVolumeAPI(None, None)
    collaborators = _collaborators(volume, connector={"host": "h1"})
    if during_compute_swap is not None:
        collaborators["compute_rpcapi"].swap_volume.side_effect = \
            lambda *a: during_compute_swap(ctx, instance_uuid)
    instance = objects.Instance(ctx, uuid=instance_uuid, host="h1",
                                task_state=None)
    with mock.patch.object(swap_task.base, "Event") as events, \
            mock.patch.object(swap_task, "notify_volume"):
        swap_task.base.execute_cast(swap_task.SwapVolumeTask(
            ctx, instance, "vol-1", "vol-2", "att-vol-2", **collaborators))
    return volume, _records(instance_uuid), events


def test_a_swap_gives_way_to_an_offload_that_moved_the_record(database):
    """The offload moves the record to its connector-less attachment while
    the swap's compute call runs: the swap's save finds another attachment,
    so vol-1 stays (in-use again) and the swap's vol-2 attachment goes."""
    volume, records, events = _swap(
        lambda ctx, uuid: _move(ctx, uuid, "vol-1", "att-offloaded")())
    events.return_value.failure.assert_called_once()
    events.return_value.success.assert_not_called()
    assert volume.deleted == ["att-vol-2"]
    assert volume.rolled_back == ["vol-1"]
    assert records == [("vol-1", "att-offloaded")]


def test_a_swap_without_a_race_moves_the_record(database):
    volume, records, events = _swap()
    events.return_value.success.assert_called_once_with()
    assert volume.deleted == ["att-old"]
    assert records == [("vol-2", "att-vol-2")]


def test_an_unshelve_leaves_a_record_a_swap_moved(database):
    """A swap of the shelved-offloaded server (no compute call) moves the
    record to vol-2 while the unshelve connects vol-1's attachment: the
    unshelve's save finds another attachment and fails (the unshelve is
    undone and can be retried); the record keeps the swap's volume and
    gets no vol-1 connection."""
    ctx, instance_uuid, record = _stored_record("att-old")
    read_by_unshelve = objects.BlockDeviceMappingList.get_by_instance_uuid(
        ctx, instance_uuid)
    volume = RecordingVolumeAPI(
        "attachment_update", _move(ctx, instance_uuid, "vol-2", "att-vol-2"))
    task = shelve_task.UnshelveTask(
        ctx, objects.Instance(ctx, uuid=instance_uuid),
        **_collaborators(volume, connector={"host": "h2"}))
    with pytest.raises(exception.InstanceInvalidState):
        task._connect_volumes("h2", read_by_unshelve)
    assert _records(instance_uuid) == [("vol-2", "att-vol-2")]
    stored = db_api.bdm_get_by_instance_uuids([instance_uuid])[0]
    assert "att-old" not in (stored["connection_info"] or "")
    # without the race, the connection is saved
    ctx, instance_uuid, record = _stored_record("att-old")
    task._connect_volumes("h2", [record])
    stored = db_api.bdm_get_by_instance_uuids([instance_uuid])[0]
    assert '"attachment": "att-old"' in stored["connection_info"]
