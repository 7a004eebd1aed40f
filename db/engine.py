"""One SQLAlchemy engine per process and URL, created after any fork.

gunicorn forks its workers: an engine (and its pool) made in the master must
not be shared by them, so ``get_engine`` keys its cache by pid too.  SQLite
gets WAL, a busy timeout and foreign keys; PostgreSQL a sized pool.
"""
import os
import threading

from sqlalchemy import create_engine, event
from sqlalchemy.orm import sessionmaker

from volattach.conf import CONF

_lock = threading.Lock()
_engines = {}


def _on_sqlite_connect(dbapi_connection, _record):
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def make_engine(url, pool_size=10, echo=False):
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        engine = create_engine(url, echo=echo,
                               connect_args={"check_same_thread": False,
                                             "timeout": 30})
        event.listen(engine, "connect", _on_sqlite_connect)
        return engine
    return create_engine(url, echo=echo, pool_size=pool_size,
                         max_overflow=pool_size * 2, pool_pre_ping=True)


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


def dispose_all():
    with _lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()
