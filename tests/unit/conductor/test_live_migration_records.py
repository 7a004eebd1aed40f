"""The migration record of the conductor's live-migration workflow (the
workflow's collaborators are the test doubles of
test_live_migration_workflow; the Migration object is one here too): the
statuses it goes through, what it names at each step, and that a record
that cannot be written never changes the migration or its rollback."""
import types
from unittest import mock

import pytest

from tests.unit.conductor.test_live_migration_workflow import w  # noqa: F401
from volattach import exception
from volattach import objects


class FakeMigration:
    """Records each create/save with the fields as they were then."""

    writes = None
    fail_create = False
    fail_save_at = ()      # statuses whose save raises

    def __init__(self, context):
        self.context = context

    def _snapshot(self, action):
        fields = {k: v for k, v in vars(self).items() if k != "context"}
        type(self).writes.append((action, fields))

    def create(self):
        if type(self).fail_create:
            raise exception.DatabaseUnavailable()
        self.id = 1
        self._snapshot("create")

    def save(self):
        if self.status in type(self).fail_save_at:
            raise exception.DatabaseUnavailable()
        self._snapshot("save")


@pytest.fixture
def rec(w, monkeypatch):  # noqa: F811
    FakeMigration.writes = []
    FakeMigration.fail_create = False
    FakeMigration.fail_save_at = ()
    monkeypatch.setattr(objects, "Migration", FakeMigration, raising=False)
    w.ctx = mock.Mock(user_id="admin", project_id="admin-project")
    w.instance.flavor = types.SimpleNamespace(id=6)
    w.instance.uuid = "5b0b4c9f-3c0e-4c9e-9d0b-2c3c1f0e8a11"
    return w


def _statuses():
    return [fields["status"] for _action, fields in FakeMigration.writes]


def test_a_successful_migration_is_accepted_preparing_running_completed(rec):
    rec.tm.live_migrate_instance(rec.ctx, rec.instance, None)
    assert rec.instance.saves[-1] == ("dest", None, ["migrating"])
    assert _statuses() == ["accepted", "preparing", "running", "completed"]
    action, created = FakeMigration.writes[0]
    assert action == "create"
    assert created == dict(
        id=1, instance_uuid=rec.instance.uuid,
        migration_type="live-migration", status="accepted",
        source_compute="src", source_node="src", dest_compute=None,
        dest_node=None, dest_host=None, old_instance_type_id=6,
        new_instance_type_id=6, hidden=False, user_id="admin",
        project_id="admin-project")
    _action, preparing = FakeMigration.writes[1]
    assert (preparing["dest_compute"], preparing["dest_node"]) == ("dest",
                                                                  "dest")
    # preparing is written before the first destination attachment
    assert [a for a, _f in FakeMigration.writes] == ["create"] + ["save"] * 3


def test_a_named_destination_is_recorded_from_the_start(rec):
    rec.tm.live_migrate_instance(rec.ctx, rec.instance, "dest")
    assert FakeMigration.writes[0][1]["dest_compute"] == "dest"


@pytest.mark.parametrize("failing, status", [
    ("attachment_update", "error"), ("pre_live_migration", "error"),
    ("live_migration", "failed"),
    ("post_live_migration_at_destination", "failed"),
    ("post_live_migration_at_source", "failed")])
def test_a_failure_ends_in_error_before_the_move_and_failed_during_it(
        rec, failing, status):
    target = rec.volume if failing == "attachment_update" else rec.compute
    getattr(target, failing).side_effect = exception.VirtDriverError(
        operation=failing, reason="injected")
    rec.tm.live_migrate_instance(rec.ctx, rec.instance, "dest")
    assert _statuses()[-1] == status
    assert ("running" in _statuses()) == (status == "failed")
    assert rec.instance.saves == [("src", None, ["migrating"])]


def test_no_valid_host_is_an_error_without_a_destination(rec):
    rec.select.side_effect = exception.NoValidHost(reason="none")
    rec.tm.live_migrate_instance(rec.ctx, rec.instance, None)
    assert _statuses() == ["accepted", "error"]
    assert FakeMigration.writes[-1][1]["dest_compute"] is None
    rec.volume.attachment_create.assert_not_called()


def test_a_too_old_destination_is_an_error_naming_it(rec):
    rec.compute.can_send_version.side_effect = lambda host, v: host != "dest"
    rec.tm.live_migrate_instance(rec.ctx, rec.instance, "dest")
    assert _statuses() == ["accepted", "error"]
    assert FakeMigration.writes[-1][1]["dest_compute"] == "dest"


def test_a_failed_instance_save_after_the_switch_is_an_error(rec):
    def save(expected_task_state=None):
        raise exception.UnexpectedTaskState(expected="migrating", actual=None)
    rec.instance.save = save
    rec.tm.live_migrate_instance(rec.ctx, rec.instance, None)
    assert _statuses() == ["accepted", "preparing", "running", "error"]


def test_a_record_that_cannot_be_created_changes_nothing(rec):
    FakeMigration.fail_create = True
    rec.tm.live_migrate_instance(rec.ctx, rec.instance, None)
    assert FakeMigration.writes == []
    assert rec.instance.saves[-1] == ("dest", None, ["migrating"])
    assert [b.attachment_id for b in rec.bdms] == ["new-1", "new-2"]


@pytest.mark.parametrize("fail_save_at, failing", [
    (("preparing",), "pre_live_migration"), (("error",), "pre_live_migration"),
    (("running",), "live_migration"), (("failed",), "live_migration")])
def test_a_record_that_cannot_be_saved_never_stops_the_rollback(
        rec, fail_save_at, failing):
    FakeMigration.fail_save_at = fail_save_at
    getattr(rec.compute, failing).side_effect = exception.VirtDriverError(
        operation=failing, reason="injected")
    rec.tm.live_migrate_instance(rec.ctx, rec.instance, "dest")
    # the rollback ran whole (newest step first): destination attachments
    # deleted, source kept
    assert [c.args[1] for c in rec.volume.attachment_delete.call_args_list] \
        == ["new-2", "new-1"]
    assert [b.attachment_id for b in rec.bdms] == ["old-1", "old-2"]
    assert rec.compute.rollback_live_migration_at_destination.called == (
        failing == "live_migration")
    assert rec.instance.saves == [("src", None, ["migrating"])]
    assert "error" in rec.event.finish.call_args.kwargs
    assert fail_save_at[0] not in _statuses()
