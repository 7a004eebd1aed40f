"""Per-process database engines and transactions for the volume service.

SQLite (the embedded default): WAL journal so readers never block writers,
``busy_timeout`` so writers queue instead of failing, ``check_same_thread``
off (the threaded wsgiref server shares the pool), and every write
transaction opened with ``BEGIN IMMEDIATE`` so that two writers never both
hold a read snapshot and then deadlock upgrading it.  PostgreSQL: a regular
pool with pre-ping; correctness comes from row locks taken by the
compare-and-swap UPDATEs in ``volume.db.api``.

Engines are cached per URL *and per process*: a process forked after an
engine was built (gunicorn workers) builds its own and never touches the
parent's connections.  ``Database.write`` retries a whole transaction when
SQLite reports "database is locked" or PostgreSQL a deadlock.
"""
import contextlib
import os
import threading

import sqlalchemy as sa
from sqlalchemy import event, exc as sa_exc
import tenacity

SQLITE_BUSY_TIMEOUT_MS = 30000
_IMMEDIATE = "volattach_begin_immediate"


def is_sqlite(url):
    return sa.engine.make_url(url).get_backend_name() == "sqlite"


def create_engine(url, debug=False):
    """A new engine for ``url`` with the settings described above."""
    sa_url = sa.engine.make_url(url)
    if sa_url.get_backend_name() == "sqlite":
        engine = sa.create_engine(
            sa_url, echo=debug,
            connect_args={"check_same_thread": False,
                          "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000.0})

        @event.listens_for(engine, "connect")
        def _sqlite_connect(dbapi_connection, _record):
            # We emit BEGIN ourselves (below): pysqlite's implicit
            # transactions would otherwise start DEFERRED.
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            if sa_url.database and sa_url.database != ":memory:":
                cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA busy_timeout=%d" % SQLITE_BUSY_TIMEOUT_MS)
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _sqlite_begin(connection):
            if connection.get_execution_options().get(_IMMEDIATE):
                connection.exec_driver_sql("BEGIN IMMEDIATE")
            else:
                connection.exec_driver_sql("BEGIN")
    else:
        engine = sa.create_engine(sa_url, echo=debug, pool_pre_ping=True,
                                  pool_size=5, max_overflow=10)
    return engine


def _retryable(exc):
    if not isinstance(exc, sa_exc.OperationalError):
        return False
    text = str(exc.orig if exc.orig is not None else exc).lower()
    pgcode = getattr(exc.orig, "pgcode", None)
    return ("database is locked" in text or "database table is locked" in text
            or pgcode in ("40P01", "40001"))


class Database:
    """The database of one volume service, lazily connected per process."""

    def __init__(self, url, debug=False):
        self.url = url
        self.debug = debug
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
                    self._engine = create_engine(self.url, self.debug)
                    self._pid = os.getpid()
        return self._engine

    @property
    def is_postgresql(self):
        return self.engine.dialect.name == "postgresql"

    def dispose(self):
        if self._engine is not None and self._pid == os.getpid():
            self._engine.dispose()
        self._engine = None

    @contextlib.contextmanager
    def _transaction(self, immediate):
        with self.engine.connect() as conn:
            if immediate:
                conn.execution_options(**{_IMMEDIATE: True})
            with conn.begin():
                yield conn

    def read(self, fn, *args, **kwargs):
        """Run ``fn(conn, ...)`` in a read transaction."""
        with self._transaction(immediate=False) as conn:
            return fn(conn, *args, **kwargs)

    def write(self, fn, *args, **kwargs):
        """Run ``fn(conn, ...)`` in one write transaction, retried whole
        (bounded) on lock contention that the busy timeout did not absorb."""
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception(_retryable),
            stop=tenacity.stop_after_attempt(5),
            wait=tenacity.wait_random_exponential(multiplier=0.05, max=1),
            reraise=True)
        for attempt in retrying:
            with attempt:
                with self._transaction(immediate=True) as conn:
                    return fn(conn, *args, **kwargs)
