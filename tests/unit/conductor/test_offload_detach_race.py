"""Offload racing a detach (found by the interleaving tier, seed 1303): the
offload swaps each record's attachment for a connector-less one while a
detach that was already under way takes the record.  Unit test of the two
conductor tasks with test doubles for the compute RPC client, the volume
API and the objects."""
import types
from unittest import mock

import pytest

import volattach  # noqa: F401
from volattach import exception
from volattach import objects
from volattach.conductor.tasks import detach as detach_task
from volattach.conductor.tasks import shelve as shelve_task

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

    def save(self):
        if self.destroyed:
            raise exception.BDMNotFound(id=self.id)
        self.saved.append(self.attachment_id)

    def destroy(self):
        self.destroyed = True


def _manager(volume):
    return types.SimpleNamespace(volume_api=volume, compute_rpcapi=mock.Mock())


@pytest.fixture
def instance():
    inst = mock.Mock(uuid="inst-1", host="h1", task_state="shelving_offloading")
    return inst


def test_offload_deletes_its_new_attachment_when_the_record_is_gone(instance):
    record = Record("att-old")
    record.destroyed = True          # the detach finished first
    volume = mock.Mock()
    volume.attachment_create.return_value = {"id": "att-new"}
    task = shelve_task.ShelveTask(_manager(volume))
    with mock.patch.object(shelve_task.objects, "BlockDeviceMappingList") as lists, \
            mock.patch.object(shelve_task.base, "Event") as events:
        lists.get_by_instance_uuid.return_value = [record]
        task._offload(mock.sentinel.ctx, instance)
    # the connector-less attachment made for a record that is gone is deleted
    volume.attachment_delete.assert_called_once_with(mock.sentinel.ctx, "att-new")
    # and the offload itself still completes
    assert instance.vm_state == "shelved_offloaded"
    assert instance.task_state is None
    events.return_value.success.assert_called_once_with()


def test_detach_deletes_the_attachment_an_offload_put_on_the_record(instance):
    record = Record("att-old")
    volume = mock.Mock()
    task = detach_task.DetachVolumeTask(_manager(volume))
    fresh = types.SimpleNamespace(uuid="inst-1", host="h1", task_state=None)
    swapped = types.SimpleNamespace(attachment_id="att-new")
    with mock.patch.object(detach_task.objects, "Instance") as instances, \
            mock.patch.object(detach_task.objects, "BlockDeviceMapping") as bdms, \
            mock.patch.object(detach_task.base, "Event"), \
            mock.patch.object(detach_task, "notify_volume"):
        instances.get_by_uuid.return_value = fresh
        # first read: the record as the detach found it; second read (after
        # the unplug): the offload has swapped its attachment meanwhile
        bdms.get_by_volume_and_instance.side_effect = [record, swapped]
        task.detach_volume(mock.sentinel.ctx, instance, "vol-1")
    deleted = [c.args[1] for c in volume.attachment_delete.call_args_list]
    assert deleted == ["att-old", "att-new"]
    assert record.destroyed


@pytest.mark.parametrize("state", ["shelving", "shelving_offloading", "migrating"])
def test_detach_refuses_while_a_workflow_moves_the_attachments(instance, state):
    volume = mock.Mock()
    task = detach_task.DetachVolumeTask(_manager(volume))
    with mock.patch.object(detach_task.objects, "Instance") as instances, \
            mock.patch.object(detach_task.objects, "BlockDeviceMapping") as bdms, \
            mock.patch.object(detach_task.base, "Event") as events, \
            mock.patch.object(detach_task, "notify_volume"):
        instances.get_by_uuid.return_value = types.SimpleNamespace(
            uuid="inst-1", host="h1", task_state=state)
        task.detach_volume(mock.sentinel.ctx, instance, "vol-1")
    bdms.get_by_volume_and_instance.assert_not_called()
    volume.attachment_delete.assert_not_called()
    volume.roll_detaching.assert_called_once_with(mock.sentinel.ctx, "vol-1")
    events.return_value.failure.assert_called_once()
