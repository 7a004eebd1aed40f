"""db.core.idle_ping: pooled connections are pinged only after sitting idle
longer than the threshold, and a failed ping gives a new connection;
volume.db.engine: a transaction that lost its connection runs again once."""
import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from volattach.volume.db import engine as db_engine
from volattach import exception
from volattach.db.core import idle_ping as liveness


@pytest.mark.parametrize("checked_in_at, now, expected", [
    (None, 100.0, False),   # a new connection: never pinged
    (100.0, 100.0, False),
    (100.0, 104.9, False),
    (100.0, 105.0, False),  # exactly the threshold: still fresh enough
    (100.0, 105.1, True),
    (100.0, 1000.0, True),
])
def test_needs_ping_after_idle_threshold(checked_in_at, now, expected):
    assert liveness.needs_ping(checked_in_at, now, 5.0) is expected


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def engine(tmp_path):
    engine = sa.create_engine("sqlite:///%s" % (tmp_path / "l.sqlite"))
    yield engine
    engine.dispose()


def _pings(engine, monkeypatch, fail=False):
    pings = []

    def do_ping(dbapi_connection):
        pings.append(dbapi_connection)
        if fail:
            raise engine.dialect.loaded_dbapi.OperationalError("server gone")
        return True
    monkeypatch.setattr(engine.dialect, "do_ping", do_ping)
    return pings


def _use(engine):
    with engine.connect() as conn:
        conn.exec_driver_sql("SELECT 1").scalar()
        return conn.connection.dbapi_connection


def test_only_idle_connections_are_pinged(engine, monkeypatch):
    clock = FakeClock()
    liveness.install(engine, idle_seconds=5.0, clock=clock)
    pings = _pings(engine, monkeypatch)
    first = _use(engine)            # new connection: no ping
    clock.now += 4.0
    assert _use(engine) is first    # used 4 s ago: no ping
    assert pings == []
    clock.now += 6.0
    assert _use(engine) is first    # idle 6 s: pinged, alive, kept
    assert pings == [first]
    clock.now += 1.0
    _use(engine)
    assert pings == [first]         # the ping's checkout counts as a use


def test_failed_ping_replaces_the_connection(engine, monkeypatch):
    clock = FakeClock()
    liveness.install(engine, idle_seconds=5.0, clock=clock)
    first = _use(engine)
    pings = _pings(engine, monkeypatch, fail=True)
    clock.now += 60.0
    second = _use(engine)           # ping failed: a new connection serves
    assert pings == [first]
    assert second is not first
    pings.clear()
    clock.now += 1.0
    assert _use(engine) is second   # the new one is fresh: no ping
    assert pings == []


def _lost(what="server closed the connection unexpectedly"):
    error = sa_exc.OperationalError("SELECT 1", {}, Exception(what))
    error.connection_invalidated = True
    return error


def test_transaction_runs_again_once_after_a_lost_connection(tmp_path):
    db = db_engine.Database("sqlite:///%s" % (tmp_path / "r.sqlite"))
    db.write(lambda conn: conn.exec_driver_sql("CREATE TABLE t (x INT)"))
    calls = []

    def flaky(conn):
        calls.append(1)
        conn.exec_driver_sql("INSERT INTO t VALUES (%d)" % len(calls))
        if len(calls) == 1:
            raise _lost()
        return "done"
    assert db.write(flaky) == "done"
    assert db.read(lambda c: c.exec_driver_sql(
        "SELECT x FROM t").scalars().all()) == [2]

    calls.clear()

    def always_lost(conn):
        calls.append(1)
        raise _lost()
    for run in (db.write, db.read, db.read_single):
        calls.clear()
        with pytest.raises(exception.DatabaseUnavailable) as err:
            run(always_lost)
        assert err.value.__cause__.connection_invalidated
        assert len(calls) == 2      # once again, not more
    db.dispose()


def test_other_errors_are_not_run_again(tmp_path):
    db = db_engine.Database("sqlite:///%s" % (tmp_path / "o.sqlite"))
    calls = []

    def broken(conn):
        calls.append(1)
        raise sa_exc.OperationalError("X", {}, Exception("no such table"))
    for run in (db.write, db.read, db.read_single):
        calls.clear()
        with pytest.raises(sa_exc.OperationalError):
            run(broken)
        assert len(calls) == 1
    db.dispose()


def test_read_single_runs_without_a_transaction(tmp_path):
    db = db_engine.Database("sqlite:///%s" % (tmp_path / "s.sqlite"))
    seen = []
    sa.event.listen(db.engine, "before_cursor_execute",
                    lambda conn, cursor, stmt, *a: seen.append(stmt))
    assert db.read_single(
        lambda conn: conn.exec_driver_sql("SELECT 3").scalar()) == 3
    assert db.read(
        lambda conn: conn.exec_driver_sql("SELECT 4").scalar()) == 4
    assert seen == ["SELECT 3", "BEGIN", "SELECT 4"]
    db.dispose()
