"""The compute database layer on SQLite and PostgreSQL: migrations match the
models, compare-and-swap updates, soft delete, BDM queries, services."""
import json
import threading
import uuid

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

import volattach  # noqa: F401
from volattach.db import api as db_api
from volattach.db import engine as db_engine
from volattach.db import models
from tests import db_fixtures
from volattach import exception


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database(request, tmp_path):
    with db_fixtures.configured_compute_database(request.param, tmp_path) as url:
        yield url


def _instance(project="p1", **kw):
    values = {"uuid": str(uuid.uuid4()), "project_id": project, "user_id": "u1",
              "vm_state": "active", "power_state": 1, "locked": False,
              "launch_index": 0, "deleted": 0,
              "flavor": json.dumps({"flavorid": "1"})}
    values.update(kw)
    return db_api.instance_create(values)


def test_migrations_match_models(database):
    engine = db_engine.get_engine(database)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), models.Base.metadata)
    assert diff == []


def test_flavors_are_seeded(database):
    flavors = {f["flavorid"]: f["name"] for f in db_api.flavor_get_all()}
    assert flavors["1"] == "m1.tiny" and flavors["42"] == "m1.nano"
    with pytest.raises(exception.FlavorNotFound):
        db_api.flavor_get_by_flavor_id("nope")


def test_instance_update_is_compare_and_swap(database):
    row = _instance(task_state=None)
    updated = db_api.instance_update(row["uuid"], {"task_state": "deleting"},
                                     expected_task_state=[None])
    assert updated["task_state"] == "deleting"
    with pytest.raises(exception.UnexpectedTaskState):
        db_api.instance_update(row["uuid"], {"task_state": "spawning"},
                               expected_task_state=[None])
    with pytest.raises(exception.UnexpectedVMState):
        db_api.instance_update(row["uuid"], {"vm_state": "stopped"},
                               expected_vm_state=["paused"])
    assert db_api.instance_get_by_uuid(row["uuid"])["task_state"] == "deleting"


def test_only_one_concurrent_cas_wins(database):
    row = _instance(task_state=None)
    results = []

    def claim(state):
        try:
            db_api.instance_update(row["uuid"], {"task_state": state},
                                   expected_task_state=[None])
            results.append(state)
        except exception.UnexpectedTaskState:
            pass

    threads = [threading.Thread(target=claim, args=("s%d" % i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 1
    assert db_api.instance_get_by_uuid(row["uuid"])["task_state"] == results[0]


def test_soft_delete_hides_instance(database):
    row = _instance()
    db_api.instance_destroy(row["uuid"])
    with pytest.raises(exception.InstanceNotFound):
        db_api.instance_get_by_uuid(row["uuid"])
    assert db_api.instance_get_by_uuid(row["uuid"], read_deleted=True)["vm_state"] == "deleted"
    with pytest.raises(exception.InstanceNotFound):
        db_api.instance_destroy(row["uuid"])


def test_instance_list_filters_and_pages(database):
    rows = [_instance(project="pa", display_name="web-%d" % i) for i in range(5)]
    _instance(project="pb")
    listed = db_api.instance_get_all({"project_id": "pa"})
    assert {r["uuid"] for r in listed} == {r["uuid"] for r in rows}
    first = db_api.instance_get_all({"project_id": "pa"}, limit=2)
    rest = db_api.instance_get_all({"project_id": "pa"}, marker=first[-1]["uuid"])
    assert len(first) == 2 and len(rest) == 3
    assert not {r["uuid"] for r in first} & {r["uuid"] for r in rest}
    assert len(db_api.instance_get_all({"project_id": "pa", "name": "web-3"})) == 1
    with pytest.raises(exception.InstanceNotFound):
        db_api.instance_get_all({"project_id": "pa"}, marker=str(uuid.uuid4()))


def test_bdm_queries(database):
    inst = _instance()
    vol = str(uuid.uuid4())
    bdm = db_api.bdm_create({"uuid": str(uuid.uuid4()), "instance_uuid": inst["uuid"],
                             "volume_id": vol, "destination_type": "volume",
                             "source_type": "volume", "device_name": "/dev/vdb",
                             "delete_on_termination": False, "no_device": False})
    assert db_api.bdm_get_by_volume_and_instance(vol, inst["uuid"])["id"] == bdm["id"]
    assert [b["id"] for b in db_api.bdm_get_by_instance_uuids([inst["uuid"]])] == [bdm["id"]]
    db_api.bdm_update(bdm["id"], {"attachment_id": "a" * 36})
    assert db_api.bdm_get_by_volume(vol)[0]["attachment_id"] == "a" * 36
    db_api.bdm_destroy(bdm["id"])
    with pytest.raises(exception.VolumeBDMNotFound):
        db_api.bdm_get_by_volume_and_instance(vol, inst["uuid"])


def test_services_heartbeat_and_minimum_version(database):
    a = db_api.service_create({"uuid": str(uuid.uuid4()), "host": "h1",
                               "binary": "volattach-compute", "version": 3,
                               "report_count": 0, "disabled": False, "forced_down": False})
    db_api.service_create({"uuid": str(uuid.uuid4()), "host": "h2",
                           "binary": "volattach-compute", "version": 2,
                           "report_count": 0, "disabled": False, "forced_down": False})
    db_api.service_heartbeat(a["id"])
    row = db_api.service_get(a["id"])
    assert row["report_count"] == 1 and row["last_seen_up"] is not None
    assert db_api.service_get_minimum_version("volattach-compute") == 2
    assert db_api.service_get_minimum_version("nothing") is None
    with pytest.raises(exception.ServiceNotFound):
        db_api.service_heartbeat(99999)


def _bdm_row(instance_uuid, **kw):
    values = {"uuid": str(uuid.uuid4()), "instance_uuid": instance_uuid,
              "volume_id": str(uuid.uuid4()), "destination_type": "volume",
              "source_type": "volume", "delete_on_termination": False,
              "no_device": False}
    values.update(kw)
    return db_api.bdm_create(values)


def test_instance_with_bdms_in_one_statement(database):
    from sqlalchemy import event
    inst = _instance(metadata='{"a": "b"}')
    other = _instance()
    mine = [_bdm_row(inst["uuid"], device_name="/dev/vd%s" % c) for c in "bc"]
    _bdm_row(other["uuid"])
    statements = []
    engine = db_engine.get_engine(database)
    listener = lambda *args: statements.append(args[2])    # noqa: E731
    event.listen(engine, "before_cursor_execute", listener)
    try:
        row, bdms = db_api.instance_get_with_bdms(inst["uuid"])
    finally:
        event.remove(engine, "before_cursor_execute", listener)
    assert len(statements) == 1
    # exactly what the one-table reads answer
    assert row == db_api.instance_get_by_uuid(inst["uuid"])
    assert bdms == db_api.bdm_get_by_instance_uuids([inst["uuid"]])
    assert [b["id"] for b in bdms] == [b["id"] for b in mine]
    assert row["metadata"] == '{"a": "b"}'


def test_instance_with_bdms_of_a_server_without_any(database):
    inst = _instance()
    row, bdms = db_api.instance_get_with_bdms(inst["uuid"])
    assert row["uuid"] == inst["uuid"] and bdms == []


def test_instance_with_bdms_of_a_missing_or_deleted_server(database):
    with pytest.raises(exception.InstanceNotFound):
        db_api.instance_get_with_bdms(str(uuid.uuid4()))
    inst = _instance()
    _bdm_row(inst["uuid"])
    db_api.instance_destroy(inst["uuid"])
    with pytest.raises(exception.InstanceNotFound):
        db_api.instance_get_with_bdms(inst["uuid"])


def test_instance_volume_attachments_are_the_volume_mappings(database):
    inst = _instance(project="p7")
    _bdm_row(inst["uuid"], destination_type="local", volume_id=None, boot_index=0)
    first = _bdm_row(inst["uuid"], tag="t", delete_on_termination=True,
                     attach_mode="ro", attachment_id=str(uuid.uuid4()))
    second = _bdm_row(inst["uuid"])
    _bdm_row(_instance()["uuid"])
    project_id, rows = db_api.instance_volume_attachments(inst["uuid"])
    assert project_id == "p7"
    assert [r.id for r in rows] == [first["id"], second["id"]]
    for row, stored in zip(rows, (first, second)):
        for name in ("uuid", "instance_uuid", "volume_id", "device_name", "tag",
                     "delete_on_termination", "attachment_id", "attach_mode"):
            assert getattr(row, name) == stored[name], name
    assert rows[0].delete_on_termination is True
    # a server without volume mappings, a missing one, a deleted one
    assert db_api.instance_volume_attachments(_instance()["uuid"]) == ("p1", [])
    with pytest.raises(exception.InstanceNotFound):
        db_api.instance_volume_attachments(str(uuid.uuid4()))
    db_api.instance_destroy(inst["uuid"])
    with pytest.raises(exception.InstanceNotFound):
        db_api.instance_volume_attachments(inst["uuid"])


def test_action_start_returns_the_stored_row(database):
    inst = _instance()
    row = db_api.action_start({"action": "attach_volume", "instance_uuid": inst["uuid"],
                               "request_id": "req-1", "user_id": "u1",
                               "project_id": "p1"})
    stored = db_api.action_get_by_request_id(inst["uuid"], "req-1")
    assert row == stored
    assert row["start_time"] is not None and row["finish_time"] is None
    assert row["message"] is None
    second = db_api.action_start({"action": "detach_volume",
                                  "instance_uuid": inst["uuid"], "request_id": "req-2"})
    assert second["id"] > row["id"] and second["user_id"] is None
    assert db_api.action_get_by_request_id(inst["uuid"], "req-2") == second


def test_prebuilt_reads_take_their_values_at_each_call(database):
    first, second = _instance(host="h1"), _instance(host="h2")
    assert db_api.instance_get_by_uuid(first["uuid"])["host"] == "h1"
    assert db_api.instance_get_by_uuid(second["uuid"])["host"] == "h2"
    assert db_api.bdm_get_by_instance_uuids([]) == []
    a, b = _bdm_row(first["uuid"]), _bdm_row(second["uuid"])
    assert [r["id"] for r in db_api.bdm_get_by_instance_uuids(
        [first["uuid"], second["uuid"]])] == [a["id"], b["id"]]
    for host in ("h1", "h2"):
        db_api.service_create({"uuid": str(uuid.uuid4()), "host": host,
                               "binary": "volattach-compute", "version": 4,
                               "report_count": 0, "disabled": False,
                               "forced_down": False})
    assert db_api.service_get_by_host_and_binary("h2", "volattach-compute")["host"] == "h2"
    assert db_api.service_get_by_host_and_binary("h2", "volattach-api") is None


def test_lone_statements_leave_no_transaction_open_and_are_committed(database):
    """The API's reads and its action INSERT run as lone statements: on
    PostgreSQL without BEGIN/ROLLBACK around them, and the INSERT is
    committed when the call returns (seen from another connection)."""
    from sqlalchemy import event, text
    inst = _instance()
    engine = db_engine.get_engine(database)
    states = []

    def after(conn, cursor, statement, *args):
        dbapi = conn.connection.dbapi_connection
        status = getattr(dbapi, "get_transaction_status", None)
        if status is not None:
            from psycopg2 import extensions
            states.append(status() == extensions.TRANSACTION_STATUS_IDLE)
    event.listen(engine, "after_cursor_execute", after)
    try:
        db_api.instance_get_with_bdms(inst["uuid"])
        db_api.instance_get_by_uuid(inst["uuid"])
        row = db_api.action_start({"action": "attach_volume",
                                   "instance_uuid": inst["uuid"], "request_id": "req-9"})
    finally:
        event.remove(engine, "after_cursor_execute", after)
    if engine.dialect.name == "postgresql":
        assert states == [True, True, True]
    other = db_engine.make_engine(database)
    with other.connect() as conn:
        assert conn.execute(text("SELECT action FROM instance_actions WHERE id = :id"),
                            {"id": row["id"]}).scalar() == "attach_volume"
    other.dispose()
    # the pooled connection went back to the pool's default (transactional) mode
    with engine.connect() as conn:
        assert conn.get_isolation_level() != "AUTOCOMMIT"


def test_workflow_writes_of_one_statement_run_without_a_transaction(database):
    """A workflow's BDM save, the start of an event under its request's
    action and a successful event's finish are one statement each: no
    BEGIN (SQLite) and, on PostgreSQL, no transaction open around them;
    each is committed when the call returns.  An event of a request with
    no action yet still gets both rows, in one transaction."""
    from sqlalchemy import event, text
    inst = _instance()
    bdm = _bdm_row(inst["uuid"])
    db_api.action_start({"action": "attach_volume", "instance_uuid": inst["uuid"],
                         "request_id": "req-1"})
    engine = db_engine.get_engine(database)
    statements, idle = [], []

    def after(conn, cursor, statement, *args):
        statements.append(statement)
        status = getattr(conn.connection.dbapi_connection, "get_transaction_status", None)
        if status is not None:
            from psycopg2 import extensions
            idle.append(status() == extensions.TRANSACTION_STATUS_IDLE)
    event.listen(engine, "after_cursor_execute", after)
    try:
        saved = db_api.bdm_update_returning(bdm["id"], {"attachment_id": "a1"})
        started = db_api.action_event_start_for_request(
            inst["uuid"], "req-1", "compute_attach_volume", "h1", {})
        db_api.action_event_finish_and_fail(started["id"], "Success")
    finally:
        event.remove(engine, "after_cursor_execute", after)
    assert saved["attachment_id"] == "a1"
    assert len(statements) == 3, statements
    assert not [s for s in statements if s.startswith("BEGIN")]
    if engine.dialect.name == "postgresql":
        assert idle == [True, True, True]
    other = db_engine.make_engine(database)
    with other.connect() as conn:
        assert conn.execute(text("SELECT attachment_id FROM block_device_mappings "
                                 "WHERE id = :id"), {"id": bdm["id"]}).scalar() == "a1"
        assert conn.execute(text("SELECT result FROM instance_actions_events "
                                 "WHERE id = :id"), {"id": started["id"]}).scalar() == "Success"
    other.dispose()
    # a request without an action: the action and the event, both stored
    lone = db_api.action_event_start_for_request(
        inst["uuid"], "req-2", "compute_detach_volume", "h1",
        {"action": "detach_volume"})
    action = db_api.action_get_by_request_id(inst["uuid"], "req-2")
    assert action["action"] == "detach_volume" and lone["action_id"] == action["id"]
    assert [e["id"] for e in db_api.action_events_get(action["id"])] == [lone["id"]]
