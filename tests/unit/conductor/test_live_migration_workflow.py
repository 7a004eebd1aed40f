"""The conductor's live-migration workflow (compute RPC client, volume API,
scheduler and objects are test doubles): success switches the BDMs and
deletes the source attachments; a failure at any step deletes the
destination attachments, rolls back the destination once it was touched,
keeps the source BDMs and puts task_state back to None."""
import types
from unittest import mock

import pytest

import volattach  # noqa: F401
from volattach import objects
from volattach.conductor import connectors
from volattach.conductor import manager
from volattach.conductor import scheduler
from volattach.conductor.tasks import base as tasks_base
from volattach import exception

objects.register_all()


class FakeBDM:
    def __init__(self, uuid, volume_id, attachment_id, mode="rw"):
        self.uuid = uuid
        self.volume_id = volume_id
        self.attachment_id = attachment_id
        self.device_name = "/dev/vd" + uuid[-1]
        self.attach_mode = mode
        self.connection_info = '{"old": true}'
        self.is_volume = True
        self.saved = 0

    def obj_clone(self):
        clone = FakeBDM(self.uuid, self.volume_id, self.attachment_id, self.attach_mode)
        clone.connection_info = self.connection_info
        return clone

    def obj_reset_changes(self):
        pass

    def save(self):
        self.saved += 1

    def set_connection_info(self, info):
        self.connection_info = info


class FakeInstance(types.SimpleNamespace):
    def save(self, expected_task_state=None):
        self.saves.append((self.host, self.task_state, expected_task_state))

    def obj_clone(self):
        return FakeInstance(**vars(self))


@pytest.fixture
def w():
    bdms = [FakeBDM("b-1", "vol-1", "old-1"), FakeBDM("b-2", "vol-2", "old-2", "ro")]
    compute = mock.Mock()
    compute.can_send_version.return_value = True
    volume = mock.Mock()
    # the volume view lists the attached attachments (the records' here)
    volume.get.side_effect = lambda ctx, volume_id: {"status": "in-use", "attachments": [
        {"attachment_id": b.attachment_id} for b in bdms if b.volume_id == volume_id]}
    created = iter(["new-1", "new-2"])
    volume.attachment_create.side_effect = lambda *a, **k: {"id": next(created)}
    volume.attachment_update.side_effect = lambda ctx, att_id, connector, **k: {
        "id": att_id, "connection_info": {"attachment_id": att_id}}
    with mock.patch.object(manager, "compute_rpcapi") as rpcapi_module, \
            mock.patch.object(objects, "InstanceActionEvent") as events, \
            mock.patch.object(objects, "BlockDeviceMappingList") as bdm_list, \
            mock.patch.object(objects, "Service") as service, \
            mock.patch.object(objects, "InstanceGroup") as groups, \
            mock.patch.object(scheduler, "select_host",
                              return_value="dest") as select, \
            mock.patch.object(tasks_base, "min_version_for", return_value=3), \
            mock.patch.object(connectors.HostConnectors, "get",
                              side_effect=lambda ctx, host, dev, mode: {
                                  "host": host, "mode": mode}):
        rpcapi_module.BINARY = "volattach-compute"
        # in no server group (test_live_migration_group: in one)
        groups.get_by_instance_uuid.return_value = None
        service.get_by_host_and_binary.return_value = types.SimpleNamespace(version=4)
        bdm_list.get_by_instance_uuid.return_value = bdms
        tm = manager.ComputeTaskManager(volume_api=volume)
        tm.compute_rpcapi = compute
        instance = FakeInstance(uuid="inst-1", host="src", node="src",
                                task_state="migrating", saves=[])
        yield types.SimpleNamespace(tm=tm, compute=compute, volume=volume, bdms=bdms,
                                    ctx=mock.Mock(), instance=instance, select=select,
                                    event=events.event_start.return_value)


def test_success_switches_bdms_and_deletes_source_attachments(w):
    seen = []
    w.compute.post_live_migration_at_source.side_effect = (
        lambda ctx, inst, bdms: seen.extend(b.attachment_id for b in bdms))
    w.tm.live_migrate_instance(w.ctx, w.instance, None)
    w.select.assert_called_once_with(w.ctx, None, 4, exclude=("src",))
    assert [c.kwargs.get("mode") for c in w.volume.attachment_create.call_args_list] == [
        None, "ro"]
    assert [c.args[2] for c in w.volume.attachment_update.call_args_list] == [
        {"host": "dest", "mode": "rw"}, {"host": "dest", "mode": "ro"}]
    new = w.compute.pre_live_migration.call_args.args[2]
    assert [b.attachment_id for b in new] == ["new-1", "new-2"]
    assert w.compute.pre_live_migration.call_args.args[3] == "dest"
    # what the destination returned goes to the source
    w.compute.live_migration.assert_called_once_with(
        w.ctx, w.instance, "dest",
        migrate_data=w.compute.pre_live_migration.return_value)
    assert seen == ["old-1", "old-2"]
    assert [b.attachment_id for b in w.bdms] == ["new-1", "new-2"]
    assert [c.args[1] for c in w.volume.attachment_complete.call_args_list] == [
        "new-1", "new-2"]
    assert [c.args[1] for c in w.volume.attachment_delete.call_args_list] == [
        "old-1", "old-2"]
    assert w.instance.saves[-1] == ("dest", None, ["migrating"])
    w.compute.rollback_live_migration_at_destination.assert_not_called()


@pytest.mark.parametrize("failing,dest_touched", [
    ("attachment_update", False), ("pre_live_migration", False),
    ("live_migration", True), ("post_live_migration_at_destination", True),
    ("post_live_migration_at_source", True)])
def test_failure_rolls_back(w, failing, dest_touched):
    target = w.volume if failing == "attachment_update" else w.compute
    getattr(target, failing).side_effect = exception.VirtDriverError(
        operation=failing, reason="injected")
    w.tm.live_migrate_instance(w.ctx, w.instance, "dest")
    deleted = [c.args[1] for c in w.volume.attachment_delete.call_args_list]
    assert "old-1" not in deleted and "old-2" not in deleted
    # undone newest first
    assert deleted == (["new-1"] if failing == "attachment_update"
                       else ["new-2", "new-1"])
    assert [b.attachment_id for b in w.bdms] == ["old-1", "old-2"]
    assert all(b.saved == 0 for b in w.bdms)
    w.volume.attachment_complete.assert_not_called()
    assert (w.compute.rollback_live_migration_at_destination.called
            == dest_touched)
    assert w.instance.host == "src"
    assert w.instance.saves == [("src", None, ["migrating"])]
    assert "error" in w.event.finish.call_args.kwargs


def test_too_old_compute_refuses_before_any_attachment(w):
    w.compute.can_send_version.side_effect = lambda host, v: host != "src"
    w.tm.live_migrate_instance(w.ctx, w.instance, "dest")
    w.volume.attachment_create.assert_not_called()
    w.compute.pre_live_migration.assert_not_called()
    assert w.instance.saves == [("src", None, ["migrating"])]


def test_no_valid_host(w):
    w.select.side_effect = exception.NoValidHost(reason="none")
    w.tm.live_migrate_instance(w.ctx, w.instance, None)
    w.volume.attachment_create.assert_not_called()
    assert w.instance.saves == [("src", None, ["migrating"])]


def test_a_record_detached_meanwhile_leaves_the_destination_too(w):
    """The switch finds one record gone (a detach removed it): the server
    still lands on dest with no task state; that volume's destination
    attachment is unplugged there and deleted; the other one switches."""
    def gone():
        raise exception.BDMNotFound(id="b-2")
    w.bdms[1].save = gone
    w.volume.get.return_value = {"status": "in-use"}
    w.tm.live_migrate_instance(w.ctx, w.instance, None)
    assert w.instance.saves[-1] == ("dest", None, ["migrating"])
    [call] = w.compute.detach_volume.call_args_list
    assert call.args[1].host == "dest" and call.args[2].attachment_id == "new-2"
    assert [c.args[1] for c in w.volume.attachment_delete.call_args_list] == [
        "old-1", "new-2", "old-2"]
    assert w.bdms[0].attachment_id == "new-1" and w.bdms[0].saved == 1


def test_a_detach_under_way_refuses_the_migration_before_any_attachment(w):
    w.volume.get.side_effect = lambda ctx, volume_id: {
        "status": "detaching" if volume_id == "vol-2" else "in-use"}
    w.tm.live_migrate_instance(w.ctx, w.instance, None)
    w.volume.attachment_create.assert_not_called()
    w.compute.pre_live_migration.assert_not_called()
    assert w.instance.saves[-1] == ("src", None, ["migrating"])


def test_the_record_is_final_before_the_task_state_clears(w):
    """A client waiting for the server's task state to clear (as tempest
    does) then reads a finished migration record, never "running"."""
    w.compute.live_migration.side_effect = exception.VirtDriverError(
        operation="live_migration", reason="injected")
    migration = mock.Mock()
    seen = []
    w.instance.save = lambda expected_task_state=None: seen.append(
        (w.instance.task_state, migration.status))
    with mock.patch.object(objects, "Migration", return_value=migration):
        w.tm.live_migrate_instance(w.ctx, w.instance, "dest")
    assert seen[-1] == (None, "failed")
