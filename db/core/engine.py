"""Per-process engines and transactions, for both services' databases.

SQLite (the embedded default): WAL journal so readers never block writers,
``busy_timeout`` so writers queue instead of failing, ``PRAGMA
synchronous`` from ``[database] sqlite_synchronous`` (``sqlite_settings``),
``check_same_thread`` off (threaded servers share the pool), and every
write transaction opened with ``BEGIN IMMEDIATE`` so that two writers never
both hold a read snapshot and then deadlock upgrading it.  pysqlite sends
no BEGIN of its own (``isolation_level = None``): ``begin(conn)`` sends
ours, right after SQLAlchemy's ``conn.begin()`` (not from a "begin" event
listener: any connection event listener makes SQLAlchemy run its event
hooks around every statement).

PostgreSQL: a sized pool whose connections are checked at checkout only
when it is worth it, not with a ``SELECT 1`` round trip every time
(``pool_pre_ping``): one the server hung up on is seen from its socket
(``hangup_check``), one left idle for a while is pinged (``idle_ping``).

``Database`` runs a function of a connection in one of four ways:

* ``write``: one write transaction (``BEGIN IMMEDIATE`` on SQLite), retried
  whole (bounded) when SQLite reports "database is locked" or PostgreSQL a
  deadlock or serialization failure;
* ``read``: one read transaction, a snapshot across its statements;
* ``read_single`` / ``write_single``: for a function that runs ONE
  statement, consistent on its own: no transaction around it (SQLite
  autocommit, psycopg2 autocommit via ``autocommit``), which saves SQLite's
  BEGIN and, on PostgreSQL, the BEGIN and ROLLBACK/COMMIT round trips.

All of them run the function again, once, when its connection turns out to
be dead (the database restarted) while it ran: the server rolled back what
it had not committed.  When no connection can be had (the server is down or
restarting), they try again for up to ``connect_retry_seconds`` (tenacity,
exponential backoff; nothing was sent, so this is always safe), then raise
``exception.DatabaseUnavailable`` (503 at the HTTP edges).  So does a
connection lost a second time, or lost during COMMIT (whose outcome is then
unknown: it is never replayed).

``orm_session(conn)`` gives an ORM session inside one of those transactions
for code that prefers mapped classes.

Engines are cached per ``Database`` *and per process*: a process forked
after an engine was built (gunicorn workers) builds its own and never
touches the parent's connections.
"""
import contextlib
import logging
import os
import random
import threading
import time

import sqlalchemy as sa
from sqlalchemy import event, exc as sa_exc
from sqlalchemy import orm
import tenacity

from volattach.db.core import autocommit as db_autocommit
from volattach.db.core import hangup_check
from volattach.db.core import idle_ping
from volattach.db.core import sqlite_settings
from volattach import exception

LOG = logging.getLogger(__name__)

SQLITE_BUSY_TIMEOUT_MS = 30000
LOCK_RETRY_ATTEMPTS = 5
# How long a transaction waits for the database to accept connections again
# before DatabaseUnavailable.
CONNECT_RETRY_SECONDS = 3.0
DEFAULT_POOL_SIZE = 5


def is_sqlite(url):
    return sa.engine.make_url(url).get_backend_name() == "sqlite"


def _configure_sqlite(engine, sa_url, synchronous=None):
    synchronous = sqlite_settings.synchronous(synchronous)

    @event.listens_for(engine, "connect")
    def _sqlite_connect(dbapi_connection, _record):
        # We emit BEGIN ourselves (``begin``): pysqlite's implicit
        # transactions would otherwise start DEFERRED.  Without a BEGIN
        # every statement is its own transaction (read_single).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        if sa_url.database and sa_url.database != ":memory:":
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=%d" % SQLITE_BUSY_TIMEOUT_MS)
        # With WAL, NORMAL syncs at checkpoints only: a process crash loses
        # nothing, an OS crash may lose the last commits (see the option).
        cursor.execute("PRAGMA synchronous=%s" % synchronous)
        cursor.close()
        # (off only while migrations run: db.core.migration)
        set_sqlite_foreign_keys(dbapi_connection, True)


def set_sqlite_foreign_keys(dbapi_connection, enabled):
    """Turn SQLite's foreign key enforcement on or off for one DB-API
    connection.  SQLite ignores the pragma inside a transaction, so this
    must run between transactions; it raises RuntimeError when the setting
    did not take."""
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA foreign_keys=%s" % ("ON" if enabled else "OFF"))
        cursor.execute("PRAGMA foreign_keys")
        if bool(cursor.fetchone()[0]) != enabled:
            raise RuntimeError("PRAGMA foreign_keys=%s did not take effect "
                               "(inside a transaction?)"
                               % ("ON" if enabled else "OFF"))
    finally:
        cursor.close()


def begin(conn, immediate=False):
    """Start the database transaction of ``conn``, inside SQLAlchemy's
    ``conn.begin()``: on SQLite, ``BEGIN`` (``BEGIN IMMEDIATE`` for a
    writer); PostgreSQL's driver begins by itself."""
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def create_engine(url, debug=False,
                  idle_ping_seconds=idle_ping.DEFAULT_IDLE_SECONDS,
                  sqlite_synchronous=None, pool_size=DEFAULT_POOL_SIZE):
    """A new engine for ``url`` with the settings described above
    (``sqlite_synchronous``: NORMAL or FULL, default the configured
    ``[database] sqlite_synchronous``; ``pool_size`` connections kept,
    twice as many more allowed under load, on PostgreSQL)."""
    sa_url = sa.engine.make_url(url)
    if sa_url.get_backend_name() == "sqlite":
        if sa_url.database and sa_url.database != ":memory:":
            os.makedirs(os.path.dirname(os.path.abspath(sa_url.database)),
                        exist_ok=True)
        engine = sa.create_engine(
            sa_url, echo=debug,
            connect_args={"check_same_thread": False,
                          "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000.0})
        _configure_sqlite(engine, sa_url, sqlite_synchronous)
    else:
        engine = sa.create_engine(sa_url, echo=debug, pool_size=pool_size,
                                  max_overflow=pool_size * 2)
        idle_ping.install(engine, idle_ping_seconds)
        hangup_check.install(engine)
    return engine


@contextlib.contextmanager
def orm_session(conn):
    """An ORM session on ``conn``, inside the transaction ``Database`` runs
    (it neither commits nor rolls that back: ``Database`` does); pending
    changes are flushed when the block ends."""
    session = orm.Session(bind=conn, expire_on_commit=False)
    try:
        yield session
        session.flush()
    finally:
        session.close()


def _is_lock_contention(exc):
    if not isinstance(exc, sa_exc.OperationalError):
        return False
    text = str(exc.orig if exc.orig is not None else exc).lower()
    pgcode = getattr(exc.orig, "pgcode", None)
    return ("database is locked" in text or "database table is locked" in text
            or pgcode in ("40P01", "40001"))


def _lock_retry_delay(attempt):
    """Random exponential backoff: up to 50 ms after the first attempt,
    doubling, at most 1 s."""
    return random.uniform(0, min(1.0, 0.05 * 2 ** (attempt - 1)))


def _unavailable(error):
    LOG.warning("The database is unavailable: %s", error)
    return exception.DatabaseUnavailable()


class _ConnectionLost(Exception):
    """The connection died while the function ran, before any COMMIT was
    sent: the server rolled the transaction back, it may run again."""

    def __init__(self, error):
        super().__init__(str(error))
        self.error = error


class _Unreachable(Exception):
    """No connection could be had: nothing was sent, trying again is safe."""

    def __init__(self, error):
        super().__init__(str(error))
        self.error = error


@contextlib.contextmanager
def _lost_connection_is_retryable():
    try:
        yield
    except sa_exc.DBAPIError as exc:
        if exc.connection_invalidated:
            raise _ConnectionLost(exc) from exc
        raise


@contextlib.contextmanager
def _lost_commit_is_unavailable():
    """A connection lost at COMMIT: the outcome is unknown, so no replay,
    but the caller learns the database is unavailable, not a bug."""
    try:
        yield
    except sa_exc.DBAPIError as exc:
        if exc.connection_invalidated:
            raise _unavailable(exc) from exc
        raise


class Database:
    """One database, lazily connected per process."""

    def __init__(self, url, debug=False,
                 idle_ping_seconds=idle_ping.DEFAULT_IDLE_SECONDS,
                 sqlite_synchronous=None, pool_size=DEFAULT_POOL_SIZE,
                 connect_retry_seconds=CONNECT_RETRY_SECONDS):
        self.url = url
        self.sqlite_synchronous = sqlite_synchronous
        self.debug = debug
        self.idle_ping_seconds = idle_ping_seconds
        self.pool_size = pool_size
        self.connect_retry_seconds = connect_retry_seconds
        self._engine = None
        self._pid = None
        self._lock = threading.Lock()

    @property
    def engine(self):
        if self._engine is None or self._pid != os.getpid():
            with self._lock:
                if self._engine is None or self._pid != os.getpid():
                    if self._engine is not None:
                        # Forked: leave the parent's connections alone.
                        self._engine.dispose(close=False)
                    self._engine = create_engine(
                        self.url, self.debug, self.idle_ping_seconds,
                        self.sqlite_synchronous, self.pool_size)
                    self._pid = os.getpid()
        return self._engine

    @property
    def is_postgresql(self):
        return self.engine.dialect.name == "postgresql"

    def dispose(self):
        if self._engine is not None and self._pid == os.getpid():
            self._engine.dispose()
        self._engine = None

    # -- running functions ---------------------------------------------------

    def _connect(self):
        try:
            return self.engine.connect()
        except (sa_exc.DBAPIError, sa_exc.DisconnectionError) as exc:
            raise _Unreachable(exc) from exc
        except sa_exc.InvalidRequestError as exc:
            # the pool gave up reconnecting at checkout
            raise _Unreachable(exc) from exc

    def _in_transaction(self, fn, args, kwargs, immediate=False):
        with self._connect() as conn:
            with _lost_commit_is_unavailable():
                with conn.begin():
                    with _lost_connection_is_retryable():
                        begin(conn, immediate)
                        return fn(conn, *args, **kwargs)

    def _single(self, fn, args, kwargs):
        with self._connect() as conn:
            with _lost_connection_is_retryable():
                if conn.dialect.name == "postgresql":
                    with db_autocommit.autocommit(conn):
                        return fn(conn, *args, **kwargs)
                # SQLite: no BEGIN, the statement is its own transaction.
                return fn(conn, *args, **kwargs)

    @staticmethod
    def _retrying(run, lock_attempts=1):
        """``run()``, again once after a lost connection and up to
        ``lock_attempts`` times on lock contention."""
        attempt = 0
        reconnected = False
        while True:
            attempt += 1
            try:
                return run()
            except _ConnectionLost as lost:
                if reconnected:
                    raise _unavailable(lost.error) from lost.error
                reconnected = True
            except sa_exc.OperationalError as exc:
                if attempt >= lock_attempts or not _is_lock_contention(exc):
                    raise
                time.sleep(_lock_retry_delay(attempt))

    def _run(self, run, lock_attempts=1):
        """``_retrying(run)``, tried again while the database cannot be
        reached, for up to ``connect_retry_seconds``."""
        try:
            return self._retrying(run, lock_attempts)
        except _Unreachable:
            pass        # the common path above builds no Retrying
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(_Unreachable),
            stop=tenacity.stop_after_delay(self.connect_retry_seconds),
            wait=tenacity.wait_exponential(multiplier=0.05, max=0.5),
            reraise=True)
        try:
            return retrying(self._retrying, run, lock_attempts)
        except _Unreachable as unreachable:
            raise _unavailable(unreachable.error) from unreachable.error

    def read(self, fn, *args, **kwargs):
        """Run ``fn(conn, ...)`` in a read transaction (a snapshot)."""
        return self._run(lambda: self._in_transaction(fn, args, kwargs))

    def read_single(self, fn, *args, **kwargs):
        """Run ``fn(conn, ...)``, which must execute exactly one statement,
        outside any transaction."""
        return self._run(lambda: self._single(fn, args, kwargs))

    def write_single(self, fn, *args, **kwargs):
        """Run ``fn(conn, ...)``, which must execute exactly one write
        statement, as its own transaction (it may call ``conn.commit()``,
        a no-op there); run again (bounded) on lock contention, like
        ``write``: a statement that failed on it changed nothing."""
        return self._run(lambda: self._single(fn, args, kwargs),
                         lock_attempts=LOCK_RETRY_ATTEMPTS)

    def write(self, fn, *args, **kwargs):
        """Run ``fn(conn, ...)`` in one write transaction, retried whole
        (bounded) on lock contention that the busy timeout did not absorb."""
        return self._run(
            lambda: self._in_transaction(fn, args, kwargs, immediate=True),
            lock_attempts=LOCK_RETRY_ATTEMPTS)
