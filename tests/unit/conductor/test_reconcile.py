"""Classification and repair of one reconciliation pass
(conductor/reconcile.py), with a fake database and a fake volume API."""
import datetime
from unittest import mock

import pytest

import volattach  # noqa: F401
from volattach import objects
from volattach.conductor import reconcile
from volattach import exception

objects.register_all()

NOW = datetime.datetime(2026, 1, 1, 12, 0, 0)
OLD = NOW - datetime.timedelta(hours=1)
FRESH = NOW - datetime.timedelta(seconds=5)
GRACE = 600


def iso(value):
    return value.isoformat()


class FakeDB:
    def __init__(self):
        self.instances = {}
        self.bdms = {}

    def add_instance(self, uuid, deleted=False, task_state=None,
                     vm_state="active", host="compute1"):
        self.instances[uuid] = {"uuid": uuid, "deleted": 7 if deleted else 0,
                                "task_state": task_state, "vm_state": vm_state,
                                "host": host}

    def add_bdm(self, bdm_id, instance_uuid, volume_id, attachment_id,
                changed=OLD):
        self.bdms[bdm_id] = {"id": bdm_id, "uuid": "bdm-%s" % bdm_id,
                             "instance_uuid": instance_uuid,
                             "volume_id": volume_id,
                             "attachment_id": attachment_id,
                             "destination_type": "volume",
                             "created_at": changed, "updated_at": None}

    # the db.api functions reconcile uses
    def instance_get_by_uuid(self, uuid, read_deleted=False):
        if uuid not in self.instances:
            raise exception.InstanceNotFound(instance_id=uuid)
        return dict(self.instances[uuid])

    def bdm_get_all_volume_bdms(self):
        return [dict(b) for b in self.bdms.values()]

    def bdm_get_by_volume(self, volume_id):
        return [dict(b) for b in self.bdms.values()
                if b["volume_id"] == volume_id]

    def bdm_destroy(self, bdm_id):
        self.bdms.pop(bdm_id, None)

    # instance actions, newest first, each with its events
    def add_action(self, instance_uuid, action, event_details=None):
        actions = self.__dict__.setdefault("actions", [])
        actions.insert(0, {"id": len(actions) + 1, "action": action,
                           "instance_uuid": instance_uuid,
                           "events": [{"details": event_details}]})

    def actions_get(self, instance_uuid):
        return [a for a in self.__dict__.get("actions", [])
                if a["instance_uuid"] == instance_uuid]

    def action_events_get(self, action_id):
        return next(a["events"] for a in self.__dict__.get("actions", [])
                    if a["id"] == action_id)


class FakeVolumes:
    """Enough of volume_client.cinder.VolumeAPI: volumes, attachments, and the
    status rules of the volume service."""

    def __init__(self):
        self.volumes = {}
        self.attachments = {}
        self.calls = []

    def add_volume(self, vid, status="available", changed=OLD):
        self.volumes[vid] = {"id": vid, "status": status,
                             "created_at": iso(OLD), "updated_at": iso(changed)}

    def add_attachment(self, aid, vid, instance, status="attached"):
        self.attachments[aid] = {"id": aid, "volume_id": vid,
                                 "instance": instance, "status": status,
                                 "attached_at": ""}
        self._derive(vid)

    def _derive(self, vid):
        from volattach import volume_states
        self.volumes[vid]["status"] = volume_states.status_from_attachments(
            a["status"] for a in self.attachments.values()
            if a["volume_id"] == vid)

    def list_volumes(self, ctx, detail=True, all_tenants=False):
        assert all_tenants
        return [dict(v) for v in self.volumes.values()]

    def get(self, ctx, vid):
        return dict(self.volumes[vid])

    def attachment_list(self, ctx, volume_id=None, instance_id=None,
                        detail=False, all_tenants=False):
        assert all_tenants
        return [dict(a) for a in self.attachments.values()
                if volume_id in (None, a["volume_id"])]

    def attachment_get(self, ctx, aid):
        if aid not in self.attachments:
            raise exception.VolumeAttachmentNotFound(attachment_id=aid)
        return dict(self.attachments[aid])

    def attachment_delete(self, ctx, aid):
        self.calls.append(("attachment_delete", aid))
        att = self.attachments.pop(aid, None)
        if att is None:
            raise exception.VolumeAttachmentNotFound(attachment_id=aid)
        self._derive(att["volume_id"])

    def roll_detaching(self, ctx, vid):
        self.calls.append(("roll_detaching", vid))
        if self.volumes[vid]["status"] == "detaching":
            self.volumes[vid]["status"] = "in-use"

    def reset_volume_status(self, ctx, vid, status=None, attach_status=None,
                            migration_status=None):
        self.calls.append(("reset_volume_status", vid, status))
        self.volumes[vid]["status"] = status


@pytest.fixture
def world():
    db, volumes = FakeDB(), FakeVolumes()
    with mock.patch.object(reconcile, "db_api", db), \
            mock.patch.object(reconcile.objects, "InstanceActionEvent") as events:
        world = mock.Mock(db=db, volumes=volumes, events=events)
        yield world


def run(world, grace=GRACE, dry_run=False, compute=None):
    return reconcile.reconcile(mock.Mock(), world.volumes, grace,
                               dry_run=dry_run, compute_rpcapi=compute,
                               now=NOW)


def kinds(report, outcome):
    return sorted((i.kind, i.volume_id) for i in report.of(outcome))


def test_consistent_world_has_no_drift(world):
    world.db.add_instance("i1")
    world.volumes.add_volume("v1")
    world.volumes.add_volume("v2")
    world.volumes.add_attachment("a1", "v1", "i1")
    world.db.add_bdm(1, "i1", "v1", "a1")
    report = run(world)
    assert report.items == []
    assert world.volumes.calls == []


def test_orphan_attachment_is_deleted_and_recorded(world):
    world.db.add_instance("i1")
    world.volumes.add_volume("v1")
    world.volumes.add_attachment("a1", "v1", "i1", status="reserved")
    report = run(world)
    assert kinds(report, reconcile.REPAIRED) == [("orphan_attachment", "v1")]
    assert world.volumes.calls == [("attachment_delete", "a1")]
    assert world.volumes.volumes["v1"]["status"] == "available"
    # a failed conductor_reconcile event on the server, with the text
    start = world.events.event_start
    assert start.call_args.args[1:3] == ("i1", "conductor_reconcile")
    error = start.return_value.finish.call_args.kwargs["error"]
    assert error.startswith("orphan_attachment: attachment a1")


def test_attachment_of_deleted_server_is_orphan(world):
    world.db.add_instance("i1", deleted=True)
    world.volumes.add_volume("v1")
    world.volumes.add_attachment("a1", "v1", "i1")
    report = run(world)
    assert kinds(report, reconcile.REPAIRED) == [("orphan_attachment", "v1")]
    assert "deleted server" in report.items[0].found


def test_attachments_not_of_our_servers_are_never_touched(world):
    world.volumes.add_volume("v1")
    world.volumes.add_volume("v2")
    world.volumes.add_attachment("a1", "v1", "other-cloud-server")
    world.volumes.add_attachment("a2", "v2", None)
    report = run(world, grace=0)
    assert report.items == []
    assert world.volumes.calls == []


def test_young_orphan_attachment_is_skipped(world):
    world.db.add_instance("i1")
    world.volumes.add_volume("v1", changed=FRESH)
    world.volumes.add_attachment("a1", "v1", "i1", status="reserved")
    report = run(world)
    assert kinds(report, reconcile.SKIPPED) == [("orphan_attachment", "v1")]
    assert world.volumes.calls == []
    # the attachment's own timestamp counts too (a volume service showing it)
    world.volumes.volumes["v1"]["updated_at"] = iso(OLD)
    world.volumes.attachments["a1"]["created_at"] = iso(FRESH)
    assert kinds(run(world), reconcile.SKIPPED) == [("orphan_attachment", "v1")]
    assert kinds(run(world, grace=0), reconcile.REPAIRED) == [
        ("orphan_attachment", "v1")]


def test_bdm_whose_attachment_is_gone_is_destroyed(world):
    world.db.add_instance("i1")
    world.volumes.add_volume("v1")
    world.db.add_bdm(1, "i1", "v1", "gone")
    report = run(world)
    assert kinds(report, reconcile.REPAIRED) == [("orphan_bdm", "v1")]
    assert world.db.bdms == {}


def test_bdm_without_attachment_is_destroyed_unless_server_busy(world):
    world.db.add_instance("i1")
    world.db.add_instance("i2", task_state="spawning", vm_state="building")
    world.volumes.add_volume("v1")
    world.volumes.add_volume("v2")
    world.db.add_bdm(1, "i1", "v1", None)
    world.db.add_bdm(2, "i2", "v2", None)
    report = run(world)
    assert kinds(report, reconcile.REPAIRED) == [("orphan_bdm", "v1")]
    assert kinds(report, reconcile.SKIPPED) == [("orphan_bdm", "v2")]
    assert list(world.db.bdms) == [2]


def test_young_bdm_is_skipped(world):
    world.db.add_instance("i1")
    world.volumes.add_volume("v1")
    world.db.add_bdm(1, "i1", "v1", None, changed=FRESH)
    report = run(world)
    assert kinds(report, reconcile.SKIPPED) == [("orphan_bdm", "v1")]
    assert 1 in world.db.bdms


def test_bdm_of_deleted_server_releases_its_attachment(world):
    world.db.add_instance("i1", deleted=True)
    world.volumes.add_volume("v1")
    world.volumes.add_attachment("a1", "v1", "i1")
    world.db.add_bdm(1, "i1", "v1", "a1")
    report = run(world)
    assert kinds(report, reconcile.REPAIRED) == [("orphan_bdm", "v1")]
    assert world.db.bdms == {} and world.volumes.attachments == {}
    assert world.volumes.volumes["v1"]["status"] == "available"


def test_unfinished_attach_is_rolled_back_with_unplug(world):
    world.db.add_instance("i1")
    world.volumes.add_volume("v1")
    world.volumes.add_attachment("a1", "v1", "i1", status="attaching")
    world.db.add_bdm(1, "i1", "v1", "a1")
    compute = mock.Mock()
    with mock.patch.object(reconcile.objects, "Instance"), \
            mock.patch.object(reconcile.objects, "BlockDeviceMapping"):
        report = run(world, compute=compute)
    assert kinds(report, reconcile.REPAIRED) == [("stuck_volume", "v1")]
    assert compute.detach_volume.called
    assert world.db.bdms == {} and world.volumes.attachments == {}
    assert world.volumes.volumes["v1"]["status"] == "available"


def test_unfinished_attach_of_busy_server_is_left(world):
    world.db.add_instance("i1", vm_state="error")
    world.volumes.add_volume("v1")
    world.volumes.add_attachment("a1", "v1", "i1", status="reserved")
    world.db.add_bdm(1, "i1", "v1", "a1")
    report = run(world, grace=0)
    assert kinds(report, reconcile.SKIPPED) == [("stuck_volume", "v1")]
    assert world.volumes.calls == []


def test_detaching_volume_is_rolled_back_to_in_use(world):
    world.db.add_instance("i1")
    world.volumes.add_volume("v1")
    world.volumes.add_attachment("a1", "v1", "i1")
    world.db.add_bdm(1, "i1", "v1", "a1")
    world.volumes.volumes["v1"]["status"] = "detaching"
    report = run(world)
    assert kinds(report, reconcile.REPAIRED) == [("stuck_volume", "v1")]
    assert world.volumes.calls == [("roll_detaching", "v1")]
    assert world.volumes.volumes["v1"]["status"] == "in-use"
    # the event goes to the server of the attachment
    assert world.events.event_start.call_args.args[1] == "i1"


def test_reserved_volume_with_nothing_behind_is_reset(world):
    world.volumes.add_volume("v1")
    world.volumes.volumes["v1"]["status"] = "reserved"
    report = run(world)
    assert kinds(report, reconcile.REPAIRED) == [("stuck_volume", "v1")]
    assert world.volumes.calls == [("reset_volume_status", "v1", "available")]
    assert not world.events.event_start.called     # no server to record on


def test_young_stuck_volume_is_skipped(world):
    world.volumes.add_volume("v1", changed=FRESH)
    world.volumes.volumes["v1"]["status"] = "attaching"
    report = run(world)
    assert kinds(report, reconcile.SKIPPED) == [("stuck_volume", "v1")]
    assert world.volumes.calls == []


def test_dry_run_reports_and_changes_nothing(world):
    world.db.add_instance("i1")
    world.volumes.add_volume("v1")
    world.volumes.add_volume("v2")
    world.volumes.add_volume("v3")
    world.volumes.add_attachment("a1", "v1", "i1", status="reserved")
    world.db.add_bdm(1, "i1", "v2", "gone")
    world.volumes.volumes["v3"]["status"] = "reserved"
    report = run(world, dry_run=True)
    assert kinds(report, reconcile.WOULD_REPAIR) == [
        ("orphan_attachment", "v1"), ("orphan_bdm", "v2"),
        ("stuck_volume", "v3")]
    assert world.volumes.calls == [] and 1 in world.db.bdms
    assert not world.events.event_start.called


def test_a_failed_repair_does_not_stop_the_pass(world):
    world.db.add_instance("i1")
    world.volumes.add_volume("v1")
    world.volumes.add_volume("v2")
    world.volumes.add_attachment("a1", "v1", "i1", status="reserved")
    world.db.add_bdm(1, "i1", "v2", "gone")
    with mock.patch.object(world.volumes, "attachment_delete",
                           side_effect=exception.CinderConnectionFailed(
                               reason="down")):
        report = run(world)
    assert kinds(report, reconcile.FAILED) == [("orphan_attachment", "v1")]
    assert kinds(report, reconcile.REPAIRED) == [("orphan_bdm", "v2")]


def test_record_changed_since_the_snapshot_is_not_destroyed(world):
    world.db.add_instance("i1")
    world.volumes.add_volume("v1")
    world.db.add_bdm(1, "i1", "v1", "gone")
    real = world.db.bdm_get_by_volume

    def moved_on(volume_id):
        rows = real(volume_id)
        for row in rows:
            row["attachment_id"] = "new"     # a swap saved it meanwhile
        return rows
    with mock.patch.object(world.db, "bdm_get_by_volume", side_effect=moved_on):
        report = run(world)
    assert kinds(report, reconcile.SKIPPED) == [("orphan_bdm", "v1")]
    assert 1 in world.db.bdms


def test_timestamps():
    assert reconcile.newest("2026-01-01T10:00:00", "", None,
                            "2026-01-01T11:00:00.123456") == datetime.datetime(
        2026, 1, 1, 11, 0, 0, 123456)
    assert reconcile.newest("2026-01-01T10:00:00Z") == datetime.datetime(
        2026, 1, 1, 10)
    assert reconcile.newest(None, "not a time") is None
    assert reconcile.attachment_changed_at(
        {"attached_at": ""}, {"updated_at": "2026-01-01T10:00:00"}) == \
        datetime.datetime(2026, 1, 1, 10)


def test_leader_is_the_lowest_up_conductor():
    def svc(id_, host, up=True):
        return mock.Mock(id=id_, host=host, up=up)
    services = [svc(3, "c3"), svc(1, "c1", up=False), svc(2, "c2")]
    with mock.patch.object(reconcile.objects, "ServiceList") as lst, \
            mock.patch("volattach.servicegroup.is_up", side_effect=lambda s: s.up):
        lst.get_all.return_value = services
        assert reconcile.is_leader(mock.Mock(), "c2")
        assert not reconcile.is_leader(mock.Mock(), "c3")
        lst.get_all.return_value = []
        assert reconcile.is_leader(mock.Mock(), "anyone")


def test_legacy_attached_attachment_of_live_server_is_never_touched(world):
    world.db.add_instance("i1")
    world.volumes.add_volume("v1")
    world.volumes.add_volume("v2")
    # os-attach: attached, no block-device record, empty connection_info
    world.volumes.add_attachment("a1", "v1", "i1")
    world.volumes.attachments["a1"]["connection_info"] = {}
    world.volumes.add_attachment("a2", "v2", "i1")
    world.volumes.attachments["a2"].update(legacy=True,
                                           connection_info={"driver": "x"})
    report = run(world, grace=0)
    assert report.items == []
    assert world.volumes.calls == []
    # a new-style attached attachment without a record is still an orphan
    world.volumes.attachments["a1"]["connection_info"] = {"driver": "x"}
    assert kinds(run(world, grace=0), reconcile.REPAIRED) == [
        ("orphan_attachment", "v1")]
    assert world.volumes.calls == [("attachment_delete", "a1")]


# -- a detach that did not finish (conductor/tasks/detach.py) ----------------

class Record:
    """The block-device record object the finish releases (the fields and
    the compare-and-swap destroy of objects.BlockDeviceMapping)."""

    def __init__(self, db, bdm_id):
        row = db.bdms[bdm_id]
        self.db, self.id = db, bdm_id
        self.volume_id = row["volume_id"]
        self.instance_uuid = row["instance_uuid"]
        self.attachment_id = row["attachment_id"]

    def destroy_if_attachment(self, attachment_id):
        if self.db.bdms[self.id]["attachment_id"] != attachment_id:
            return False
        self.db.bdm_destroy(self.id)
        return True


def _detaching(world, multi=False):
    """v1 detaching from i1 (its detach action pending on an unreachable
    compute); with ``multi`` also attached to i2."""
    from volattach.conductor.tasks import detach
    world.db.add_instance("i1", host="compute1")
    world.volumes.add_volume("v1")
    world.volumes.add_attachment("a1", "v1", "i1")
    world.db.add_bdm(1, "i1", "v1", "a1")
    world.db.add_action("i1", "attach_volume")
    world.db.add_action("i1", "detach_volume",
                        detach.PENDING_MARK + "v1: compute compute1 does "
                        "not answer")
    if multi:
        world.db.add_instance("i2", host="compute2")
        world.volumes.add_attachment("a2", "v1", "i2")
        world.db.add_bdm(2, "i2", "v1", "a2")
        world.db.add_action("i2", "detach_volume", "another volume's")
    world.volumes.volumes["v1"]["status"] = "detaching"


def run_finish(world, compute, down=False, **kwargs):
    from volattach.conductor.tasks import detach
    servers = {u: mock.Mock(uuid=u, host=i["host"])
               for u, i in world.db.instances.items()}

    def record(ctx, volume_id, instance_uuid):
        bdm_id = next(i for i, b in world.db.bdms.items()
                      if b["volume_id"] == volume_id
                      and b["instance_uuid"] == instance_uuid)
        return Record(world.db, bdm_id)
    with mock.patch.object(reconcile.objects, "Instance") as instances, \
            mock.patch.object(reconcile.objects,
                              "BlockDeviceMapping") as bdms, \
            mock.patch.object(detach, "compute_is_down", return_value=down):
        instances.get_by_uuid.side_effect = lambda ctx, u: servers[u]
        bdms.get_by_volume_and_instance.side_effect = record
        return run(world, compute=compute, **kwargs)


def test_a_pending_detach_is_finished_once_the_compute_answers(world):
    _detaching(world)
    compute = mock.Mock()
    report = run_finish(world, compute)
    assert kinds(report, reconcile.REPAIRED) == [("stuck_volume", "v1")]
    [item] = report.items
    assert "pending on an unreachable compute" in item.found
    assert "unplug on compute1" in item.action
    # unplugged first, then the attachment and the record released
    assert compute.detach_volume.call_count == 1
    assert compute.detach_volume.call_args.args[1].uuid == "i1"
    assert world.volumes.calls == [("attachment_delete", "a1")]
    assert world.db.bdms == {}
    assert world.volumes.volumes["v1"]["status"] == "available"
    assert world.events.event_start.call_args.args[1] == "i1"


def test_a_pending_detach_waits_while_the_compute_does_not_answer(world):
    from volattach import rpc
    _detaching(world)
    compute = mock.Mock()
    compute.detach_volume.side_effect = rpc.RPCTimeout(
        topic="compute", method="detach_volume")
    report = run_finish(world, compute)
    [item] = report.items
    assert item.outcome == reconcile.SKIPPED
    assert "compute1 does not answer" in item.error
    assert "next pass tries again" in item.error
    assert compute.detach_volume.call_count == 2      # asked again once
    assert world.volumes.calls == [] and 1 in world.db.bdms
    assert world.volumes.volumes["v1"]["status"] == "detaching"
    # a compute whose service is down is not even called
    compute.detach_volume.reset_mock()
    report = run_finish(world, compute, down=True)
    assert report.items[0].outcome == reconcile.SKIPPED
    assert "service is down" in report.items[0].error
    assert not compute.detach_volume.called
    # it answers again: the next pass finishes
    compute.detach_volume.side_effect = None
    report = run_finish(world, compute)
    assert kinds(report, reconcile.REPAIRED) == [("stuck_volume", "v1")]
    assert world.volumes.volumes["v1"]["status"] == "available"


def test_a_pending_detach_without_compute_rpc_is_skipped(world):
    _detaching(world)
    report = run_finish(world, None)
    [item] = report.items
    assert item.outcome == reconcile.SKIPPED
    assert "--no-unplug" in item.error
    assert world.volumes.calls == []
    assert world.volumes.volumes["v1"]["status"] == "detaching"


def test_a_detach_killed_before_the_unplug_is_finished_too(world):
    """No pending mark (the conductor died): the newest volume action of
    the server is the detach the user asked for."""
    _detaching(world)
    world.db.actions[0]["events"] = []
    compute = mock.Mock()
    report = run_finish(world, compute)
    assert kinds(report, reconcile.REPAIRED) == [("stuck_volume", "v1")]
    assert "pending" not in report.items[0].found
    assert world.volumes.volumes["v1"]["status"] == "available"


def test_a_swap_that_died_is_rolled_back_not_detached(world):
    _detaching(world)
    world.db.add_action("i1", "swap_volume")
    compute = mock.Mock()
    report = run_finish(world, compute)
    assert kinds(report, reconcile.REPAIRED) == [("stuck_volume", "v1")]
    assert not compute.detach_volume.called
    assert world.volumes.calls == [("roll_detaching", "v1")]
    assert world.volumes.volumes["v1"]["status"] == "in-use"
    assert 1 in world.db.bdms


def test_a_refused_unplug_rolls_the_detach_back(world):
    _detaching(world)
    compute = mock.Mock()
    compute.detach_volume.side_effect = exception.VirtDriverError(
        operation="detach", reason="device busy")
    report = run_finish(world, compute)
    [item] = report.items
    assert item.outcome == reconcile.REPAIRED
    assert "refused" in item.action and "device busy" in item.action
    assert world.volumes.calls == [("roll_detaching", "v1")]
    assert 1 in world.db.bdms


def test_a_multiattach_detach_finishes_the_pending_one_only(world):
    _detaching(world, multi=True)
    compute = mock.Mock()
    report = run_finish(world, compute)
    assert kinds(report, reconcile.REPAIRED) == [("stuck_volume", "v1")]
    assert [c.args[1].uuid for c in compute.detach_volume.call_args_list] \
        == ["i1"]
    assert list(world.db.bdms) == [2]
    assert world.volumes.volumes["v1"]["status"] == "in-use"
    # without the mark, which detach it was is unknown: rolled back
    _detaching(world, multi=True)
    world.db.actions[:] = [a for a in world.db.actions
                           if a["action"] != "detach_volume"]
    world.db.add_action("i1", "detach_volume", None)
    world.db.add_action("i2", "detach_volume", None)
    world.volumes.calls.clear()
    compute.reset_mock()
    report = run_finish(world, compute)
    assert not compute.detach_volume.called
    assert world.volumes.calls == [("roll_detaching", "v1")]


def test_a_pending_detach_of_a_busy_server_is_left(world):
    _detaching(world)
    world.db.instances["i1"]["task_state"] = "rebooting"
    compute = mock.Mock()
    report = run_finish(world, compute)
    assert report.items[0].outcome == reconcile.SKIPPED
    assert "rebooting" in report.items[0].error
    assert not compute.detach_volume.called


def test_a_database_away_during_the_finish_is_a_failure_not_a_refusal(world):
    _detaching(world)
    compute = mock.Mock()
    compute.detach_volume.side_effect = exception.DatabaseUnavailable()
    report = run_finish(world, compute)
    assert report.items[0].outcome == reconcile.FAILED
    assert world.volumes.calls == []            # not rolled back
    assert world.volumes.volumes["v1"]["status"] == "detaching"
