"""The swap task's two rollbacks (unit test: the compute RPC client, the
volume API and the objects are test doubles): before the record moves,
the new attachment goes and the old volume is in-use again; once it
moved, both attachments go and the old volume is not rolled back."""
import types
from unittest import mock

import pytest

import volattach  # noqa: F401
from volattach import exception
from volattach import objects
from volattach.conductor.tasks import base
from volattach.conductor.tasks import swap as swap_task

objects.register_all()


class Record:
    def __init__(self):
        self.volume_id = "vol-old"
        self.attachment_id = "att-old"
        self.device_name = "/dev/vdb"
        self.attach_mode = "rw"
        self.connection_info = None

    def set_connection_info(self, info):
        self.connection_info = info

    def save_if_attachment(self, attachment_id):
        return attachment_id == "att-old"


@pytest.fixture
def swap():
    calls = []
    volume = mock.Mock()
    volume.attachment_update.return_value = {"connection_info": {"x": 1}}
    volume.get.return_value = {"migration_status": "migrating"}
    volume.attachment_delete.side_effect = lambda ctx, att: calls.append(
        ("delete", att))
    volume.roll_detaching.side_effect = lambda ctx, vol: calls.append(
        ("roll_detaching", vol))
    volume.migrate_volume_completion.side_effect = (
        lambda ctx, old, new, error: calls.append(("completion", error)))
    compute = mock.Mock()
    record = Record()
    with mock.patch.object(objects, "BlockDeviceMapping") as bdms, \
            mock.patch.object(objects, "Instance") as instances, \
            mock.patch.object(base, "Event") as events, \
            mock.patch.object(swap_task, "notify_volume"):
        bdms.get_by_volume_and_instance.return_value = record
        instances.get_by_uuid.return_value = types.SimpleNamespace(
            task_state=None)
        task = swap_task.SwapVolumeTask(
            mock.sentinel.ctx, types.SimpleNamespace(uuid="inst-1", host="h1"),
            "vol-old", "vol-new", "att-new", compute_rpcapi=compute,
            volume_api=volume,
            connectors=types.SimpleNamespace(get=lambda *a: {"host": "h1"}))
        yield types.SimpleNamespace(task=task, calls=calls, compute=compute,
                                    volume=volume, record=record,
                                    instances=instances, events=events)


def test_a_failed_compute_swap_gives_the_old_volume_back(swap):
    swap.compute.swap_volume.side_effect = exception.VirtDriverError(
        operation="swap", reason="boom")
    base.execute_cast(swap.task)
    # newest step first: the new attachment, the old volume, the migration
    assert swap.calls == [("delete", "att-new"),
                          ("roll_detaching", "vol-old"),
                          ("completion", True)]
    assert swap.record.attachment_id == "att-old"
    swap.events.return_value.failure.assert_called_once()


def test_a_server_deleted_once_the_record_moved_releases_both(swap):
    swap.instances.get_by_uuid.return_value = types.SimpleNamespace(
        task_state="deleting")
    base.execute_cast(swap.task)
    assert swap.calls == [("delete", "att-new"), ("delete", "att-old"),
                          ("completion", True)]
    swap.volume.roll_detaching.assert_not_called()
    swap.events.return_value.failure.assert_called_once()


def test_a_swap_that_completes_deletes_the_old_attachment_only(swap):
    swap.volume.migrate_volume_completion.side_effect = (
        lambda ctx, old, new, error: swap.calls.append(("completion", error))
        or "vol-new")
    base.execute_cast(swap.task)
    assert swap.calls == [("delete", "att-old"), ("completion", False)]
    assert (swap.record.volume_id, swap.record.attachment_id) == (
        "vol-new", "att-new")
    swap.events.return_value.success.assert_called_once_with()
