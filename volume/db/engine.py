"""Per-process database engines and transactions for the volume service.

SQLite (the embedded default): WAL journal so readers never block writers,
``busy_timeout`` so writers queue instead of failing, ``PRAGMA
synchronous`` from ``[database] sqlite_synchronous`` (NORMAL by default:
with WAL only an OS crash can lose the last commits), ``check_same_thread``
off (the threaded wsgiref server shares the pool), and every write
transaction opened with ``BEGIN IMMEDIATE`` so that two writers never both
hold a read snapshot and then deadlock upgrading it.  pysqlite sends no
BEGIN of its own (``isolation_level = None``): ``begin(conn)`` sends ours,
right after SQLAlchemy's ``conn.begin()`` (not from a "begin" event
listener: any connection event listener makes SQLAlchemy run its event
hooks around every statement, some 15 us each).

PostgreSQL: a regular pool whose connections are pinged only after sitting
idle (``volattach.db_idle_ping``; ``pool_pre_ping`` would cost a round trip per
transaction); correctness comes from the row locks taken by the
compare-and-swap UPDATEs and SELECT ... FOR UPDATE in ``volume.db.api``.

Three ways to run a function of a connection:

* ``write``: one write transaction (``BEGIN IMMEDIATE`` on SQLite), retried
  whole (bounded) when SQLite reports "database is locked" or PostgreSQL a
  deadlock;
* ``read``: one read transaction, a snapshot across its statements;
* ``read_single``: for a function that runs ONE statement, which is
  consistent on its own: no transaction around it (SQLite autocommit,
  psycopg2 autocommit), which saves SQLite's BEGIN and, on PostgreSQL, the
  BEGIN and ROLLBACK round trips.

All three run again, once, when the connection turns out to be dead (the
database restarted) while the function ran: nothing was committed then.

Engines are cached per URL *and per process*: a process forked after an
engine was built (gunicorn workers) builds its own and never touches the
parent's connections.
"""
import contextlib
import os
import random
import threading
import time

import sqlalchemy as sa
from sqlalchemy import event, exc as sa_exc

from volattach import db_autocommit
from volattach import db_hangup_check as hangup_check
from volattach import db_idle_ping as liveness
from volattach import sqlite_settings

SQLITE_BUSY_TIMEOUT_MS = 30000
# PRAGMA synchronous values offered by ``[database] sqlite_synchronous``.
LOCK_RETRY_ATTEMPTS = 5


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
        cursor.execute("PRAGMA foreign_keys=ON")
        # With WAL, NORMAL syncs at checkpoints only: a process crash loses
        # nothing, an OS crash may lose the last commits (see the option).
        cursor.execute("PRAGMA synchronous=%s" % synchronous)
        cursor.close()


def begin(conn, immediate=False):
    """Start the database transaction of ``conn``, inside SQLAlchemy's
    ``conn.begin()``: on SQLite, ``BEGIN`` (``BEGIN IMMEDIATE`` for a
    writer); PostgreSQL's driver begins by itself."""
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def create_engine(url, debug=False,
                  idle_ping_seconds=liveness.DEFAULT_IDLE_SECONDS,
                  sqlite_synchronous=None):
    """A new engine for ``url`` with the settings described above
    (``sqlite_synchronous``: NORMAL or FULL, default the configured
    ``[database] sqlite_synchronous``)."""
    sa_url = sa.engine.make_url(url)
    if sa_url.get_backend_name() == "sqlite":
        engine = sa.create_engine(
            sa_url, echo=debug,
            connect_args={"check_same_thread": False,
                          "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000.0})
        _configure_sqlite(engine, sa_url, sqlite_synchronous)
    else:
        engine = sa.create_engine(sa_url, echo=debug, pool_size=5,
                                  max_overflow=10)
        liveness.install(engine, idle_ping_seconds)
        hangup_check.install(engine)
    return engine


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


class _ConnectionLost(Exception):
    """The connection died while the function ran, before any COMMIT was
    sent: the server rolled the transaction back, it may run again."""

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


class Database:
    """The database of one volume service, lazily connected per process."""

    def __init__(self, url, debug=False,
                 idle_ping_seconds=liveness.DEFAULT_IDLE_SECONDS,
                 sqlite_synchronous=None):
        self.url = url
        self.sqlite_synchronous = sqlite_synchronous
        self.debug = debug
        self.idle_ping_seconds = idle_ping_seconds
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
                        self.sqlite_synchronous)
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

    def _in_transaction(self, fn, args, kwargs, immediate=False):
        with self.engine.connect() as conn:
            with conn.begin():
                with _lost_connection_is_retryable():
                    begin(conn, immediate)
                    return fn(conn, *args, **kwargs)

    def _single(self, fn, args, kwargs):
        with self.engine.connect() as conn:
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
                    raise lost.error from None
                reconnected = True
            except sa_exc.OperationalError as exc:
                if attempt >= lock_attempts or not _is_lock_contention(exc):
                    raise
                time.sleep(_lock_retry_delay(attempt))

    def read(self, fn, *args, **kwargs):
        """Run ``fn(conn, ...)`` in a read transaction (a snapshot)."""
        return self._retrying(
            lambda: self._in_transaction(fn, args, kwargs))

    def read_single(self, fn, *args, **kwargs):
        """Run ``fn(conn, ...)``, which must execute exactly one statement,
        outside any transaction."""
        return self._retrying(lambda: self._single(fn, args, kwargs))

    def write(self, fn, *args, **kwargs):
        """Run ``fn(conn, ...)`` in one write transaction, retried whole
        (bounded) on lock contention that the busy timeout did not absorb."""
        return self._retrying(
            lambda: self._in_transaction(fn, args, kwargs, immediate=True),
            lock_attempts=LOCK_RETRY_ATTEMPTS)
