"""Workflow steps that a restart of the database interrupts run again
(``base.retry_transient``); a volume-service error is not retried by the
tasks (the Cinder client is the one retry layer for the volume service:
it has tried again already), it fails the workflow, which rolls back, and
an attachment_create that may have happened without an answer is found
and deleted (unit tests: the compute RPC client, the volume API and the
objects are test doubles; the retry budget is shortened by conftest.py)."""
import types
from unittest import mock

import pytest

import volattach  # noqa: F401
from volattach import exception
from volattach import objects
from volattach.conductor import connectors
from volattach.conductor import manager
from volattach.conductor.tasks import base
from volattach.conductor.tasks import detach as detach_task

objects.register_all()


def _db_down():
    return exception.DatabaseUnavailable()


def _cinder_down():
    return exception.CinderConnectionFailed(reason="503")


class Flaky:
    """A callable that raises ``errors`` in turn, then returns ``value``."""

    def __init__(self, errors, value=None):
        self.errors = list(errors)
        self.value = value
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return self.value


# -- retry_transient ------------------------------------------------------------

def test_a_step_runs_again_after_a_transient_error():
    step = Flaky([_db_down(), _db_down()], value="done")
    assert base.retry_transient(step) == "done"
    assert step.calls == 3


def test_a_volume_service_error_is_not_retried_again():
    """One retry layer: the Cinder client already tried for ``[cinder]
    retry_seconds``; no second, nested budget here."""
    step = Flaky([_cinder_down(), _cinder_down()], value="done")
    with pytest.raises(exception.CinderConnectionFailed):
        base.retry_transient(step)
    assert step.calls == 1


def test_a_step_that_stays_down_raises_its_error_after_the_budget():
    step = Flaky([_db_down()] * 10000)
    with pytest.raises(exception.DatabaseUnavailable):
        base.retry_transient(step)
    assert step.calls > 1


def test_a_refusal_is_not_retried():
    step = Flaky([exception.InvalidVolume(reason="in-use")])
    with pytest.raises(exception.InvalidVolume):
        base.retry_transient(step)
    assert step.calls == 1


def test_an_event_start_waits_out_a_database_restart():
    with mock.patch.object(base.objects, "InstanceActionEvent") as events:
        events.event_start.side_effect = [_db_down(), mock.sentinel.event]
        event = base.Event(mock.sentinel.ctx, "inst-1", "compute_x", "h1")
    assert event.event is mock.sentinel.event
    assert events.event_start.call_count == 2


# -- attach ---------------------------------------------------------------------

class FakeBDM:
    def __init__(self):
        self.attachment_id = None
        self.device_name = "/dev/vdb"
        self.volume_id = "vol-1"
        self.connection_info = None
        self.attach_mode = None
        self.save = Flaky([])
        self.destroy = Flaky([])

    def set_connection_info(self, info):
        self.connection_info = info


@pytest.fixture
def attach():
    bdm = FakeBDM()
    compute = mock.Mock()
    compute.reserve_block_device_name.return_value = bdm
    compute.sends_mappings_with_reserve.return_value = False
    volume = mock.Mock()
    volume.attachment_create.return_value = {"id": "att-1"}
    volume.find_attachment.return_value = None
    volume.attachment_update.return_value = {
        "id": "att-1", "connection_info": {"driver_volume_type": "fake"}}
    with mock.patch.object(manager, "compute_rpcapi"), \
            mock.patch.object(objects, "InstanceActionEvent") as events, \
            mock.patch.object(objects, "Instance") as instances, \
            mock.patch.object(connectors.HostConnectors, "get",
                              return_value={"host": "h1"}):
        instances.get_by_uuid.return_value = types.SimpleNamespace(
            uuid="inst-1", host="h1", task_state=None)
        tm = manager.ComputeTaskManager(volume_api=volume)
        tm.compute_rpcapi = compute
        yield types.SimpleNamespace(
            tm=tm, compute=compute, volume=volume, bdm=bdm, ctx=mock.Mock(),
            instance=types.SimpleNamespace(uuid="inst-1", host="h1"),
            instances=instances, event=events.event_start.return_value)


def _attach(w):
    return w.tm.attach_volume(w.ctx, w.instance, "vol-1")


def test_attach_saves_its_record_again_after_a_database_restart(attach):
    w = attach
    w.bdm.save.errors = [_db_down()]
    assert _attach(w) == "/dev/vdb"
    assert w.bdm.save.calls == 2
    assert w.bdm.attachment_id == "att-1"
    w.compute.attach_volume.assert_called_once()
    w.volume.attachment_complete.assert_called_once_with(w.ctx, "att-1")
    w.volume.attachment_delete.assert_not_called()


def test_a_volume_service_the_client_gave_up_on_fails_the_attach(attach):
    """Not retried by the task (the client did): the attach rolls back."""
    w = attach
    w.volume.attachment_update.side_effect = [
        _cinder_down(), w.volume.attachment_update.return_value]
    with pytest.raises(exception.CinderConnectionFailed):
        _attach(w)
    assert w.volume.attachment_update.call_count == 1
    w.volume.attachment_delete.assert_called_once_with(w.ctx, "att-1")
    assert w.bdm.destroy.calls == 1
    w.compute.attach_volume.assert_not_called()


def test_a_create_without_answer_is_found_and_deleted_by_the_rollback(attach):
    w = attach
    # the volume service made the attachment but never answered, and the
    # client gave up: the task sends no second create
    w.volume.attachment_create.side_effect = _cinder_down()
    w.volume.find_attachment.return_value = {"id": "att-ghost"}
    with pytest.raises(exception.CinderConnectionFailed):
        _attach(w)
    w.volume.attachment_create.assert_called_once()
    w.volume.find_attachment.assert_called_once_with(w.ctx, "vol-1", "inst-1")
    w.volume.attachment_delete.assert_called_once_with(w.ctx, "att-ghost")
    assert w.bdm.destroy.calls == 1


def test_a_refused_create_is_not_looked_for(attach):
    w = attach
    w.volume.attachment_create.side_effect = exception.InvalidVolume(reason="x")
    with pytest.raises(exception.InvalidVolume):
        _attach(w)
    w.volume.find_attachment.assert_not_called()
    w.volume.attachment_delete.assert_not_called()
    assert w.bdm.destroy.calls == 1


def test_the_rollback_destroys_the_record_after_a_database_restart(attach):
    w = attach
    w.compute.attach_volume.side_effect = exception.VirtDriverError(
        operation="attach", reason="boom")
    # the delete fails (the client gave up): logged, and the record is
    # destroyed all the same, once the database is back
    w.volume.attachment_delete.side_effect = [_cinder_down(), []]
    w.bdm.destroy.errors = [_db_down()]
    with pytest.raises(exception.VirtDriverError):
        _attach(w)
    assert w.volume.attachment_delete.call_count == 1
    assert w.bdm.destroy.calls == 2


# -- detach ---------------------------------------------------------------------

@pytest.fixture
def detach():
    record = types.SimpleNamespace(attachment_id="att-1", volume_id="vol-1",
                                   instance_uuid="inst-1",
                                   destroy_if_attachment=Flaky([], value=True))
    volume = mock.Mock()
    compute = mock.Mock()

    def run(ctx, instance, volume_id):
        base.execute_cast(detach_task.DetachVolumeTask(
            ctx, instance, volume_id, compute_rpcapi=compute,
            volume_api=volume, connectors=None))
    with mock.patch.object(detach_task.objects, "Instance") as instances, \
            mock.patch.object(detach_task.objects,
                              "BlockDeviceMapping") as bdms, \
            mock.patch.object(base.objects, "InstanceActionEvent") as events, \
            mock.patch.object(detach_task, "notify_volume"), \
            mock.patch.object(detach_task, "compute_is_down",
                              return_value=False) as down:
        instances.get_by_uuid.return_value = types.SimpleNamespace(
            uuid="inst-1", host="h1", task_state=None)
        bdms.get_by_volume_and_instance.return_value = record
        yield types.SimpleNamespace(
            detach=run, compute=compute, volume=volume, record=record,
            instances=instances, down=down,
            bdms=bdms, events=events,
            instance=types.SimpleNamespace(uuid="inst-1", host="h1"))


def test_detach_reads_and_cleans_up_again_after_restarts(detach):
    w = detach
    w.instances.get_by_uuid.side_effect = [
        _db_down(), w.instances.get_by_uuid.return_value]
    w.record.destroy_if_attachment.errors = [_db_down()]
    w.detach(mock.sentinel.ctx, w.instance, "vol-1")
    w.compute.detach_volume.assert_called_once()
    assert w.volume.attachment_delete.call_count == 1
    assert w.record.destroy_if_attachment.calls == 2
    w.volume.roll_detaching.assert_not_called()


def test_detach_whose_event_cannot_start_rolls_the_volume_back(detach):
    w = detach
    w.events.event_start.side_effect = _db_down()
    w.detach(mock.sentinel.ctx, w.instance, "vol-1")
    # not left detaching: rolled back
    w.volume.roll_detaching.assert_called_once_with(mock.sentinel.ctx,
                                                    "vol-1")
    w.compute.detach_volume.assert_not_called()
    w.volume.attachment_delete.assert_not_called()


def test_a_detach_without_an_answer_is_asked_again(detach):
    """The compute may have unplugged before its answer was lost: asked
    again, it answers, and the detach finishes instead of leaving the
    volume attached in the records and gone from the guest."""
    from volattach import rpc
    w = detach
    w.compute.detach_volume.side_effect = [
        rpc.RPCTimeout(topic="compute", method="detach_volume"), None]
    w.detach(mock.sentinel.ctx, w.instance, "vol-1")
    assert w.compute.detach_volume.call_count == 2
    w.volume.attachment_delete.assert_called_once()
    assert w.record.destroy_if_attachment.calls == 1
    w.volume.roll_detaching.assert_not_called()


def test_a_detach_without_two_answers_is_left_pending(detach, caplog):
    """An unreachable compute: neither rolled back (the user's detach is
    not lost, and the compute may have unplugged) nor released; the event
    says the detach is pending, the log says so once at WARNING."""
    from volattach import rpc
    w = detach
    w.compute.detach_volume.side_effect = rpc.RPCTimeout(
        topic="compute", method="detach_volume")
    w.detach(mock.sentinel.ctx, w.instance, "vol-1")
    assert w.compute.detach_volume.call_count == 2
    w.volume.roll_detaching.assert_not_called()
    w.volume.attachment_delete.assert_not_called()
    assert w.record.destroy_if_attachment.calls == 0
    finish = w.events.event_start.return_value.finish
    error = finish.call_args.kwargs["error"]
    assert isinstance(error, detach_task.DetachPending)
    assert str(error).startswith(detach_task.PENDING_MARK + "vol-1: ")
    assert "compute h1 does not answer" in str(error)
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "pending" in warnings[0].getMessage()


def test_a_detach_on_a_compute_seen_down_is_left_pending_uncalled(detach):
    w = detach
    w.down.return_value = True
    w.detach(mock.sentinel.ctx, w.instance, "vol-1")
    w.compute.detach_volume.assert_not_called()
    w.volume.roll_detaching.assert_not_called()
    w.volume.attachment_delete.assert_not_called()
    error = w.events.event_start.return_value.finish.call_args.kwargs["error"]
    assert "service is down" in str(error)


def test_a_refused_detach_is_not_asked_again(detach):
    w = detach
    w.compute.detach_volume.side_effect = \
        exception.VirtDriverError(operation="detach", reason="busy")
    w.detach(mock.sentinel.ctx, w.instance, "vol-1")
    w.compute.detach_volume.assert_called_once()
    w.volume.roll_detaching.assert_called_once()
