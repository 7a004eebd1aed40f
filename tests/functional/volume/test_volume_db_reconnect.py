"""The volume service survives PostgreSQL closing its connections (a
database restart, an administrator's ``pg_terminate_backend``) without
pinging the server at every checkout.

The connections of the service under test carry an ``application_name`` of
their own, so that only they are terminated (other tests may share the
server).
"""
import uuid

import pytest
import sqlalchemy as sa

from tests.functional.volume.volume_testlib import build_api, make_conf
from volattach.volume.db import engine as db_engine

pytestmark = pytest.mark.postgres


@pytest.fixture
def named_url(pg_schema):
    """(URL of a private schema, the application_name its connections
    carry)."""
    name = "volattach_reconnect_%s" % uuid.uuid4().hex[:12]
    url = sa.engine.make_url(pg_schema.url).update_query_dict(
        {"application_name": name}).render_as_string(hide_password=False)
    return url, name


def _terminate(admin_engine, application_name):
    """Close every server connection of ``application_name`` (waiting up
    to 5 s for each backend to exit); returns how many there were."""
    with admin_engine.connect() as conn:
        return len(conn.execute(sa.text(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity "
            "WHERE application_name = :name"),
            {"name": application_name}).all())


def _backend_pid(conn):
    return conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()


@pytest.mark.parametrize("idle_ping_seconds, when, runs_after_termination", [
    # terminated while the function runs: fails once, runs again
    (3600.0, "during", 2),
    # terminated between uses: the server's goodbye is on the socket, the
    # hang-up check at checkout replaces the connection before the run
    (3600.0, "before", 1),
    # idle "too long": the ping finds it dead, reconnects
    (0.0, "before", 1),
])
def test_reads_and_writes_after_connections_are_terminated(
        pg_schema, named_url, idle_ping_seconds, when, runs_after_termination):
    url, name = named_url
    db = db_engine.Database(url, idle_ping_seconds=idle_ping_seconds)
    db.write(lambda conn: conn.exec_driver_sql(
        "CREATE TABLE t (x INT)"))
    for run in (db.read_single, db.read, db.write):
        before = run(_backend_pid)
        if when == "before":
            assert _terminate(pg_schema.engine, name) == 1
        calls = []

        def work(conn):
            calls.append(1)
            if when == "during" and len(calls) == 1:
                assert _terminate(pg_schema.engine, name) == 1
            if run == db.write:
                conn.exec_driver_sql("INSERT INTO t VALUES (1)")
            return _backend_pid(conn)
        after = run(work)
        assert after != before
        assert len(calls) == runs_after_termination
    # The write that lost its connection first left nothing behind.
    assert db.read(lambda conn: conn.exec_driver_sql(
        "SELECT count(*) FROM t").scalar()) == 1
    db.dispose()


def test_service_answers_after_its_connections_are_terminated(
        pg_schema, named_url, tmp_path):
    url, name = named_url
    api = build_api(make_conf(tmp_path, connection=url))
    volume = api.create_volume()
    assert api.volume(volume["id"])["status"] == "available"
    assert _terminate(pg_schema.engine, name) >= 1
    assert api.volume(volume["id"])["status"] == "available"   # a read
    assert _terminate(pg_schema.engine, name) >= 1
    r = api.reserve(volume["id"])                              # a write
    assert r.status_code == 200, r.text
    assert api.volume(volume["id"])["status"] == "reserved"
