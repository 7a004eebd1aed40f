"""db.core.engine.Database as both services use it: waiting for an
unreachable database then DatabaseUnavailable (503 at the HTTP edges), no
replay after a connection lost at COMMIT; and the compute database's
queries surviving pg_terminate_backend between and during transactions."""
import json
import threading
import time
import uuid

import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

import volattach  # noqa: F401
from volattach.api import faults as api_faults
from volattach.db import api as db_api
from volattach.db import engine as db_engine
from volattach.db import migration as compute_migration
from volattach.db.core import engine as core_engine
from volattach import exception
from volattach.volume import faults as volume_faults
from tests import db_fixtures
from tests import utils


def _closed_port_url():
    return "postgresql+psycopg2://u:p@127.0.0.1:%d/nothing" % utils.free_port()


def test_unreachable_database_is_retried_then_unavailable():
    db = core_engine.Database(_closed_port_url(), connect_retry_seconds=0.6)
    attempts = []
    sa.event.listen(db.engine, "do_connect",
                    lambda *args: attempts.append(time.monotonic()))
    started = time.monotonic()
    for run in (db.read, db.read_single, db.write, db.write_single):
        del attempts[:]
        with pytest.raises(exception.DatabaseUnavailable) as err:
            run(lambda conn: conn.exec_driver_sql("SELECT 1").scalar())
        assert isinstance(err.value.__cause__, sa_exc.OperationalError)
        assert len(attempts) > 2            # tried again, with backoff
        assert attempts[-1] - attempts[0] < 1.5
    # the driver's message (host, port) is not what a client reads
    assert "127.0.0.1" not in str(err.value)
    assert time.monotonic() - started < 8
    db.dispose()


def test_database_back_within_the_retry_window(tmp_path, monkeypatch):
    db = core_engine.Database("sqlite:///%s" % (tmp_path / "b.sqlite"))
    real_connect = db.engine.connect
    failures = []

    def connect():
        if len(failures) < 2:
            failures.append(1)
            raise sa_exc.OperationalError("connect", {}, Exception("refused"))
        return real_connect()
    monkeypatch.setattr(db.engine, "connect", connect)
    assert db.read_single(lambda conn: conn.exec_driver_sql("SELECT 7").scalar()) == 7
    assert len(failures) == 2
    db.dispose()


def test_lone_write_runs_again_on_lock_contention(tmp_path, monkeypatch):
    """A write_single statement that failed on a lock (SQLite "database is
    locked", a PostgreSQL deadlock) changed nothing: it runs again, as a
    write transaction does, a bounded number of times."""
    monkeypatch.setattr(core_engine, "_lock_retry_delay", lambda attempt: 0)
    db = core_engine.Database("sqlite:///%s" % (tmp_path / "l.sqlite"))
    db.write(lambda conn: conn.exec_driver_sql("CREATE TABLE t (x INT)"))
    runs = []

    def insert(conn):
        runs.append(1)
        if len(runs) < 3:
            raise sa_exc.OperationalError("INSERT", {}, Exception("database is locked"))
        conn.exec_driver_sql("INSERT INTO t VALUES (1)")
    db.write_single(insert)
    assert len(runs) == 3
    assert db.read_single(lambda conn: conn.exec_driver_sql(
        "SELECT count(*) FROM t").scalar()) == 1

    def always_locked(conn):
        runs.append(1)
        raise sa_exc.OperationalError("INSERT", {}, Exception("database is locked"))
    del runs[:]
    with pytest.raises(sa_exc.OperationalError):
        db.write_single(always_locked)
    assert len(runs) == core_engine.LOCK_RETRY_ATTEMPTS
    db.dispose()


def test_connection_lost_at_commit_is_not_replayed(tmp_path, monkeypatch):
    db = core_engine.Database("sqlite:///%s" % (tmp_path / "c.sqlite"))
    db.write(lambda conn: conn.exec_driver_sql("CREATE TABLE t (x INT)"))
    calls = []

    def lost_commit(self):
        error = sa_exc.OperationalError("COMMIT", {}, Exception("server closed"))
        error.connection_invalidated = True
        raise error
    monkeypatch.setattr(sa.engine.Connection, "_commit_impl", lost_commit)

    def insert(conn):
        calls.append(1)
        conn.exec_driver_sql("INSERT INTO t VALUES (1)")
    with pytest.raises(exception.DatabaseUnavailable):
        db.write(insert)
    assert calls == [1]
    monkeypatch.undo()
    db.dispose()


def test_database_unavailable_is_503_at_both_edges():
    exc = exception.DatabaseUnavailable()
    assert api_faults.status_for(exc) == 503
    assert volume_faults.status_of(exc) == 503


def test_compute_sqlite_writes_begin_immediate(tmp_path):
    with db_fixtures.configured_compute_database("sqlite", tmp_path) as url:
        engine = db_engine.get_engine(url)
        statements = []
        listener = lambda conn, cursor, text, *a: statements.append(text)  # noqa: E731
        sa.event.listen(engine, "before_cursor_execute", listener)
        try:
            row = _instance()
            db_api.instance_update(row["uuid"], {"task_state": "attaching"},
                                   expected_task_state=[None])
        finally:
            sa.event.remove(engine, "before_cursor_execute", listener)
        assert statements.count("BEGIN IMMEDIATE") == 2
        assert db_api.instance_get_by_uuid(row["uuid"])["task_state"] == "attaching"


# -- on PostgreSQL ----------------------------------------------------------------

def _instance():
    return db_api.instance_create({
        "uuid": str(uuid.uuid4()), "project_id": "p1", "user_id": "u1",
        "vm_state": "active", "power_state": 1, "locked": False,
        "launch_index": 0, "deleted": 0, "flavor": json.dumps({"flavorid": "1"})})


def _terminate_all(url):
    return db_fixtures.terminate_backends(url)


@pytest.fixture
def pg_compute(tmp_path):
    with db_fixtures.configured_compute_database("postgresql", tmp_path) as url:
        yield url


@pytest.mark.postgres
def test_compute_queries_after_terminated_backends(pg_compute):
    inst = _instance()
    bdm = db_api.bdm_create({"uuid": str(uuid.uuid4()),
                             "instance_uuid": inst["uuid"], "source_type": "volume",
                             "destination_type": "volume", "volume_id": "v1",
                             "device_name": "/dev/vdb"})
    # several pooled connections, all of them killed between calls
    threads = [threading.Thread(target=db_api.instance_get_by_uuid, args=(inst["uuid"],))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    calls = [
        lambda: db_api.instance_get_by_uuid(inst["uuid"])["uuid"] == inst["uuid"],
        lambda: db_api.instance_get_with_bdms(inst["uuid"])[1][0]["id"] == bdm["id"],
        lambda: db_api.instance_update(
            inst["uuid"], {"task_state": "attaching"},
            expected_task_state=[None])["task_state"] == "attaching",
        lambda: db_api.bdm_update_returning(
            bdm["id"], {"attachment_id": "a1"})["attachment_id"] == "a1",
        lambda: db_api.action_start({"action": "attach_volume",
                                     "instance_uuid": inst["uuid"],
                                     "request_id": "req-1"})["id"] > 0,
        lambda: [a["request_id"] for a in db_api.actions_get(inst["uuid"])] == ["req-1"],
        lambda: db_api.service_get_all() == [],
    ]
    for call in calls:
        assert _terminate_all(pg_compute) >= 1
        assert call()
    # the compare-and-swap still refuses a second start
    _terminate_all(pg_compute)
    with pytest.raises(exception.UnexpectedTaskState):
        db_api.instance_update(inst["uuid"], {"task_state": "attaching"},
                               expected_task_state=[None])


@pytest.mark.postgres
def test_transaction_killed_midway_runs_again_once(pg_compute):
    database = db_engine.database(pg_compute)
    database.write(lambda conn: conn.exec_driver_sql("CREATE TABLE t (x INT)"))
    calls = []

    def insert_then_die(conn):
        calls.append(1)
        conn.exec_driver_sql("INSERT INTO t VALUES (%d)" % len(calls))
        if len(calls) == 1:
            pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
            _terminate_pid(pg_compute, pid)
            conn.exec_driver_sql("SELECT 1")    # fails: the backend is gone
        return len(calls)
    assert database.write(insert_then_die) == 2
    assert database.read(lambda conn: conn.exec_driver_sql(
        "SELECT x FROM t").scalars().all()) == [2]


def _terminate_pid(url, pid):
    admin = sa.create_engine(url)
    with admin.connect() as conn:
        conn.execute(sa.text("SELECT pg_terminate_backend(:p)"), {"p": pid})
    admin.dispose()


@pytest.mark.postgres
def test_concurrent_compute_db_sync_is_serialized(tmp_path):
    base = utils.require_env(utils.PG_URL_ENV, "a PostgreSQL database test")
    with db_fixtures.fresh_postgres_database(base) as url:
        errors = []

        def sync():
            try:
                compute_migration.MIGRATIONS.db_sync(url)
            except Exception as exc:     # noqa: BLE001 - reported below
                errors.append(exc)
        threads = [threading.Thread(target=sync) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert (compute_migration.MIGRATIONS.db_version(url)
                == compute_migration.head_revision())
