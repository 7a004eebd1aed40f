"""db.core.hangup_check and the compute engine's connection checks: a connection the
server closed is replaced at checkout, a healthy one is not pinged."""
import socket
import time

import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

import volattach  # noqa: F401
from volattach.db import engine as db_engine
from volattach.db.core import hangup_check as pool_ping
from tests import db_fixtures
from tests import utils


class _Connection:
    """A DBAPI connection stand-in whose socket is one end of a socketpair."""

    def __init__(self, sock):
        self.sock = sock

    def fileno(self):
        return self.sock.fileno()


class _Dialect:

    class loaded_dbapi:
        class Error(Exception):
            pass

    def __init__(self, ping_fails=False):
        self.pings = 0
        self.ping_fails = ping_fails

    def do_ping(self, dbapi_connection):
        self.pings += 1
        if self.ping_fails:
            raise self.loaded_dbapi.Error("server closed the connection")
        return True


@pytest.fixture
def pair():
    ours, server = socket.socketpair()
    yield ours, server
    ours.close()
    server.close()


def test_has_input_sees_data_and_hang_ups(pair):
    ours, server = pair
    assert not pool_ping.has_input(ours.fileno())
    server.sendall(b"E")
    assert pool_ping.has_input(ours.fileno())
    ours.recv(1)
    assert not pool_ping.has_input(ours.fileno())
    server.close()
    assert pool_ping.has_input(ours.fileno())


def test_quiet_connection_is_not_pinged(pair):
    dialect = _Dialect()
    assert pool_ping.check_on_checkout(dialect, _Connection(pair[0])) is False
    assert dialect.pings == 0


def test_connection_with_input_is_pinged_and_kept_when_alive(pair):
    ours, server = pair
    server.sendall(b"N")     # e.g. a notice: the ping answers, we keep it
    dialect = _Dialect()
    assert pool_ping.check_on_checkout(dialect, _Connection(ours)) is True
    assert dialect.pings == 1


def test_hung_up_connection_makes_the_pool_reconnect(pair):
    ours, server = pair
    server.close()
    with pytest.raises(sa_exc.DisconnectionError):
        pool_ping.check_on_checkout(_Dialect(ping_fails=True), _Connection(ours))


def test_connections_without_a_socket_are_left_alone():
    dialect = _Dialect()
    assert pool_ping.check_on_checkout(dialect, object()) is False
    assert dialect.pings == 0


def test_sqlite_engine_has_no_checks(tmp_path):
    engine = db_engine.make_engine("sqlite:///%s" % (tmp_path / "x.sqlite"))
    assert len(engine.pool.dispatch.checkout) == 0   # a file needs no ping
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT 1").scalar() == 1
    engine.dispose()


# -- on PostgreSQL ----------------------------------------------------------------------

def _backend_pid(engine):
    with engine.connect() as conn:
        return conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()


def _terminate(url, pid):
    admin = sa.create_engine(url)
    with admin.connect() as conn:
        assert conn.execute(sa.text("SELECT pg_terminate_backend(:pid)"),
                            {"pid": pid}).scalar()
    admin.dispose()
    time.sleep(0.2)     # the backend's goodbye reaches our socket


@pytest.fixture
def pg_url():
    base = utils.require_env(utils.PG_URL_ENV, "a PostgreSQL database test")
    with db_fixtures.fresh_postgres_database(base) as url:
        yield url


def _pinged(engine):
    """Count the dialect's pings on ``engine``."""
    counter = {"pings": 0}
    ping = engine.dialect.do_ping

    def counting(dbapi_connection):
        counter["pings"] += 1
        return ping(dbapi_connection)
    engine.dialect.do_ping = counting
    return counter


@pytest.mark.postgres
def test_pg_checkouts_of_a_busy_pool_send_no_ping(pg_url):
    engine = db_engine.make_engine(pg_url, pool_size=1)
    pings = _pinged(engine)
    for _ in range(5):
        _backend_pid(engine)
    assert pings["pings"] == 0
    engine.dispose()


@pytest.mark.postgres
def test_pg_terminated_backend_is_replaced_before_the_next_statement(pg_url):
    engine = db_engine.make_engine(pg_url, pool_size=1)
    pid = _backend_pid(engine)
    _terminate(pg_url, pid)
    # the pooled connection is dead, yet the next statement works, on a new
    # backend
    new_pid = _backend_pid(engine)
    assert new_pid != pid
    assert _backend_pid(engine) == new_pid
    engine.dispose()


@pytest.mark.postgres
def test_pg_without_the_check_the_next_statement_fails(pg_url):
    """What the check above prevents (no pre-ping, idle for under 5 s)."""
    engine = sa.create_engine(pg_url, pool_size=1)
    pid = _backend_pid(engine)
    _terminate(pg_url, pid)
    with pytest.raises(sa_exc.OperationalError):
        _backend_pid(engine)
    engine.dispose()


@pytest.mark.postgres
def test_pg_connection_idle_for_long_is_pinged(pg_url, monkeypatch):
    monkeypatch.setattr(db_engine, "POOL_PING_IDLE_SECONDS", 0.05)
    engine = db_engine.make_engine(pg_url, pool_size=1)
    pings = _pinged(engine)
    _backend_pid(engine)
    _backend_pid(engine)
    assert pings["pings"] == 0
    time.sleep(0.1)
    _backend_pid(engine)
    assert pings["pings"] == 1
    engine.dispose()
