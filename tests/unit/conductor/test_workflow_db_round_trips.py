"""The database writes of the attach and detach workflows, on SQLite and
PostgreSQL: what they write, and in how many statements and connection
checkouts (an instance-action event starts in one INSERT ... SELECT, ends in
one UPDATE; a BDM saves in one UPDATE ... RETURNING; the compute's
reservation creates its BDM only if no mapping was added since it listed
them)."""
import contextlib
import uuid

import pytest
from sqlalchemy import event

import volattach  # noqa: F401
from volattach import objects
from volattach.db import api as db_api
from volattach.db import engine as db_engine
from tests import db_fixtures
from volattach import context as volattach_context
from volattach import exception

objects.register_all()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database(request, tmp_path):
    with db_fixtures.configured_compute_database(request.param, tmp_path) as url:
        yield url


@contextlib.contextmanager
def sql_log(url):
    """The statements (verb and table) and checkouts run on ``url``'s engine."""
    engine = db_engine.get_engine(url)
    log = {"statements": [], "checkouts": 0}

    def statement(conn, cursor, text, parameters, context, executemany):
        words = text.split()
        log["statements"].append(words[0].upper())

    def checkout(*args):
        log["checkouts"] += 1
    event.listen(engine, "before_cursor_execute", statement)
    event.listen(engine.pool, "checkout", checkout)
    try:
        yield log
    finally:
        event.remove(engine, "before_cursor_execute", statement)
        event.remove(engine.pool, "checkout", checkout)


def _context(request_id=None):
    return volattach_context.RequestContext(
        user_id="alice", project_id="demo",
        request_id=request_id or "req-" + uuid.uuid4().hex)


def _instance_uuid():
    return db_fixtures.instance_row()


# -- instance-action events ---------------------------------------------------------
def test_event_starts_under_the_requests_action_in_one_statement(database):
    ctx = _context()
    instance_uuid = _instance_uuid()
    older = db_api.action_start({"action": "attach_volume", "instance_uuid": instance_uuid,
                                 "request_id": ctx.request_id})
    action = db_api.action_start({"action": "attach_volume",
                                  "instance_uuid": instance_uuid,
                                  "request_id": ctx.request_id})
    db_api.action_start({"action": "attach_volume", "instance_uuid": instance_uuid,
                         "request_id": "req-other"})
    with sql_log(database) as log:
        ev = objects.InstanceActionEvent.event_start(ctx, instance_uuid,
                                                     "compute_attach_volume", host="h1")
    assert log["checkouts"] == 1
    assert [s for s in log["statements"] if s in ("SELECT", "INSERT", "UPDATE")] == [
        "INSERT"]
    assert ev.action_id == action["id"] != older["id"]
    assert (ev.event, ev.host, ev.result, ev.finish_time) == (
        "compute_attach_volume", "h1", None, None)
    assert ev.start_time is not None
    [stored] = db_api.action_events_get(action["id"])
    assert stored["id"] == ev.id and stored["host"] == "h1"


def test_event_without_an_action_creates_it_in_the_same_transaction(database):
    ctx = _context()
    instance_uuid = _instance_uuid()
    with sql_log(database) as log:
        ev = objects.InstanceActionEvent.event_start(ctx, instance_uuid,
                                                     "compute_terminate_instance")
    # the lone INSERT ... SELECT (which found no action), then one
    # transaction: the action and the event
    assert log["checkouts"] == 2
    assert [s for s in log["statements"] if s in ("SELECT", "INSERT", "UPDATE")] == [
        "INSERT", "INSERT", "INSERT", "INSERT"]
    action = db_api.action_get_by_request_id(instance_uuid, ctx.request_id)
    assert action["id"] == ev.action_id
    assert (action["action"], action["user_id"], action["project_id"]) == (
        "terminate_instance", "alice", "demo")
    assert ev.host is None and ev.event == "compute_terminate_instance"


def test_event_success_is_one_update_and_keeps_the_action(database):
    ctx = _context()
    instance_uuid = _instance_uuid()
    ev = objects.InstanceActionEvent.event_start(ctx, instance_uuid, "compute_x", "h1")
    with sql_log(database) as log:
        ev.finish()
    assert log["checkouts"] == 1
    assert [s for s in log["statements"] if s in ("SELECT", "INSERT", "UPDATE")] == [
        "UPDATE"]
    assert ev.result == "Success" and ev.finish_time is not None
    assert not ev.obj_what_changed()
    [stored] = db_api.action_events_get(ev.action_id)
    assert (stored["result"], stored["traceback"]) == ("Success", None)
    assert stored["finish_time"] is not None
    action = db_api.action_get_by_request_id(instance_uuid, ctx.request_id)
    assert action["message"] is None and action["finish_time"] is None


def test_event_failure_marks_the_action_failed_in_the_same_transaction(database):
    ctx = _context()
    instance_uuid = _instance_uuid()
    ev = objects.InstanceActionEvent.event_start(ctx, instance_uuid, "compute_x", "h1")
    with sql_log(database) as log:
        ev.finish(error=exception.VirtDriverError(operation="attach", reason="boom"))
    assert log["checkouts"] == 1
    [stored] = db_api.action_events_get(ev.action_id)
    assert stored["result"] == "Error" == ev.result
    assert "VirtDriverError" in stored["traceback"] and "boom" in stored["details"]
    assert ev.details == stored["details"]
    action = db_api.action_get_by_request_id(instance_uuid, ctx.request_id)
    assert action["message"] == "Error" and action["finish_time"] is not None


# -- block device mappings ----------------------------------------------------------
def _bdm(ctx, instance_uuid, **kw):
    values = dict(uuid=str(uuid.uuid4()), instance_uuid=instance_uuid,
                  source_type="volume", destination_type="volume",
                  volume_id=str(uuid.uuid4()), device_name="/dev/vdb", boot_index=None)
    values.update(kw)
    return objects.BlockDeviceMapping(ctx, **values)


def test_bdm_save_is_one_update_returning_the_row(database):
    ctx = _context()
    bdm = _bdm(ctx, _instance_uuid())
    bdm.create()
    assert bdm.updated_at is None
    bdm.attachment_id = str(uuid.uuid4())
    bdm.attach_mode = "ro"
    with sql_log(database) as log:
        bdm.save()
    assert log["checkouts"] == 1
    assert [s for s in log["statements"] if s in ("SELECT", "INSERT", "UPDATE")] == [
        "UPDATE"]
    assert bdm.updated_at is not None and not bdm.obj_what_changed()
    stored = db_api.bdm_get_by_volume_and_instance(bdm.volume_id, bdm.instance_uuid)
    assert (stored["attachment_id"], stored["attach_mode"]) == (bdm.attachment_id, "ro")
    assert stored["device_name"] == "/dev/vdb"


def test_bdm_save_of_a_destroyed_mapping_is_not_found(database):
    ctx = _context()
    bdm = _bdm(ctx, _instance_uuid())
    bdm.create()
    bdm.destroy()
    bdm.tag = "gone"
    with pytest.raises(exception.BDMNotFound):
        bdm.save()


def test_create_if_none_added(database):
    ctx = _context()
    instance_uuid = _instance_uuid()
    first = _bdm(ctx, instance_uuid, device_name="/dev/vdb")
    first.create()
    listed = objects.BlockDeviceMappingList.get_by_instance_uuid(ctx, instance_uuid)
    known = [b.id for b in listed]

    # a mapping added since the listing: nothing is written
    added = _bdm(ctx, instance_uuid, device_name="/dev/vdc")
    added.create()
    late = _bdm(ctx, instance_uuid, device_name="/dev/vdc", tag="late")
    assert late.create_if_none_added(known) is False
    assert not late.obj_attr_is_set("id")
    assert len(objects.BlockDeviceMappingList.get_by_instance_uuid(
        ctx, instance_uuid)) == 2

    # one removed since the listing does not stop it
    first.destroy()
    fresh = _bdm(ctx, instance_uuid, device_name="/dev/vdd", tag="t",
                 delete_on_termination=True)
    with sql_log(database) as log:
        assert fresh.create_if_none_added(known + [added.id]) is True
    assert log["checkouts"] == 1
    assert fresh.id and fresh.created_at and not fresh.obj_what_changed()
    assert (fresh.attach_mode, fresh.no_device) == ("rw", False)
    stored = db_api.bdm_get_by_volume_and_instance(fresh.volume_id, instance_uuid)
    assert (stored["device_name"], stored["tag"], stored["delete_on_termination"]) == (
        "/dev/vdd", "t", True)
    with pytest.raises(exception.ObjectActionError):
        fresh.create_if_none_added([])


def _delete_server(instance_uuid):
    db_api.instance_destroy(instance_uuid)


def _start_deleting_server(instance_uuid):
    db_api.instance_update(instance_uuid, {"task_state": "deleting"})


@pytest.mark.parametrize("server, refusal", [
    (_delete_server, exception.InstanceNotFound),
    (_start_deleting_server, exception.InstanceInvalidState),
], ids=["deleted", "deleting"])
@pytest.mark.parametrize("create", ["create", "create_if_none_added"])
def test_no_mapping_is_created_for_a_server_gone_or_going(database, create,
                                                          server, refusal):
    ctx = _context()
    instance_uuid = _instance_uuid()
    server(instance_uuid)
    bdm = _bdm(ctx, instance_uuid)
    with pytest.raises(refusal):
        if create == "create":
            bdm.create()
        else:
            bdm.create_if_none_added([])
    assert db_api.bdm_get_by_instance_uuids([instance_uuid]) == []


@pytest.mark.postgres
def test_a_mapping_create_waits_for_a_delete_marking_the_server(tmp_path):
    """PostgreSQL: the create share-locks the instance row, so a delete's
    uncommitted ``deleting`` is waited for, not read past (read committed
    would otherwise see the old task state and add a mapping the delete's
    later read of the mappings could miss)."""
    import threading
    import sqlalchemy as sa
    with db_fixtures.configured_compute_database("postgresql", tmp_path) as url:
        ctx = _context()
        instance_uuid = _instance_uuid()
        other = sa.create_engine(url)
        outcome = {}

        def create():
            try:
                _bdm(ctx, instance_uuid).create()
                outcome["created"] = True
            except exception.InstanceInvalidState:
                outcome["refused"] = True
        try:
            with other.connect() as conn:
                trans = conn.begin()
                conn.execute(sa.text("UPDATE instances SET task_state = 'deleting' "
                                     "WHERE uuid = :u"), {"u": instance_uuid})
                creator = threading.Thread(target=create)
                creator.start()
                creator.join(1.0)
                assert creator.is_alive(), outcome   # waiting on the row lock
                trans.commit()
            creator.join(10)
        finally:
            other.dispose()
        assert outcome == {"refused": True}
        assert db_api.bdm_get_by_instance_uuids([instance_uuid]) == []
