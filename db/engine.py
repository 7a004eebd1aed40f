"""One SQLAlchemy engine per process and URL, created after any fork.

gunicorn forks its workers: an engine (and its pool) made in the master must
not be shared by them, so ``get_engine`` keys its cache by pid too.  SQLite
gets WAL, a busy timeout, foreign keys and ``PRAGMA synchronous`` from
``[database] sqlite_synchronous`` (NORMAL by default); PostgreSQL a sized
pool whose connections are checked at checkout only when it is worth it,
not with a ``SELECT 1`` round trip every time (``pool_pre_ping``): a
connection the server hung up on is seen from its socket
(``volattach.db_hangup_check``), one left idle for more than ``POOL_PING_IDLE_SECONDS``
is pinged (``volattach.db_idle_ping``, shared with the volume service's
engine).
"""
import contextlib
import os
import threading

from sqlalchemy import create_engine, event
from sqlalchemy.orm import sessionmaker

from volattach import db_autocommit
from volattach import db_hangup_check as hangup_check
from volattach import db_idle_ping as liveness
from volattach import sqlite_settings
from volattach.conf import CONF

# A pooled connection idle for longer is pinged before use.
POOL_PING_IDLE_SECONDS = liveness.DEFAULT_IDLE_SECONDS

_lock = threading.Lock()
_engines = {}


def _sqlite_connect_listener(synchronous):
    """The "connect" listener of a SQLite engine: WAL, busy timeout, foreign
    keys and ``PRAGMA synchronous`` (``[database] sqlite_synchronous``)."""
    synchronous = sqlite_settings.synchronous(synchronous)

    def _on_sqlite_connect(dbapi_connection, _record):
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=%s" % synchronous)
        cursor.close()
    return _on_sqlite_connect


def make_engine(url, pool_size=10, echo=False):
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        engine = create_engine(url, echo=echo,
                               connect_args={"check_same_thread": False,
                                             "timeout": 30})
        event.listen(engine, "connect", _sqlite_connect_listener(
            CONF.database.sqlite_synchronous))
        return engine
    engine = create_engine(url, echo=echo, pool_size=pool_size,
                           max_overflow=pool_size * 2)
    liveness.install(engine, idle_seconds=POOL_PING_IDLE_SECONDS)
    hangup_check.install(engine)
    return engine


def get_engine(url=None):
    url = url or CONF.database.connection
    key = (os.getpid(), url)
    engine = _engines.get(key)
    if engine is None:
        with _lock:
            engine = _engines.get(key)
            if engine is None:
                engine = make_engine(url, CONF.database.max_pool_size,
                                     CONF.database.connection_debug)
                engine.sessionmaker = sessionmaker(bind=engine,
                                                   expire_on_commit=False)
                _engines[key] = engine
    return engine


def session(url=None):
    """A new ORM session (use as a context manager; commit explicitly)."""
    return get_engine(url).sessionmaker()


@contextlib.contextmanager
def lone_statement(url=None):
    """A connection for one statement that is a transaction by itself (a
    single SELECT, INSERT or UPDATE): use as a context manager.

    On PostgreSQL the connection is in autocommit mode for the checkout
    (``volattach.db_autocommit``: one round trip instead of three).
    SQLite's driver reads without a transaction already and wraps a lone
    write in one of its own: nothing to change there.  A write still calls
    ``commit()`` (a no-op in autocommit mode)."""
    with get_engine(url).connect() as conn:
        if conn.dialect.name == "postgresql":
            with db_autocommit.autocommit(conn):
                yield conn
        else:
            yield conn


def dispose_all():
    with _lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()
