"""The compute database's ``Database``: one per URL, built on the shared
engine (``volattach.db.core.engine``).

``database(url)`` (default ``[database] connection``) gives the
``Database`` that every query of ``db.api`` runs through: its write
transactions start with ``BEGIN IMMEDIATE`` on SQLite and are retried on
lock contention, a transaction that lost its connection (a database
restart) runs again once, and while the server cannot be reached callers
get ``exception.DatabaseUnavailable``.  Its pool holds ``[database]
max_pool_size`` connections; a connection idle for more than
``POOL_PING_IDLE_SECONDS`` is pinged at checkout, one the server hung up on
is replaced (``db.core.idle_ping``, ``db.core.hangup_check``).  Each
``Database`` builds its engine in the process that uses it (gunicorn
forks its workers after the master may have built one).
"""
import threading

from volattach.conf import CONF
from volattach.db.core import engine as core_engine
from volattach.db.core import idle_ping

# A pooled connection idle for longer is pinged before use.
POOL_PING_IDLE_SECONDS = idle_ping.DEFAULT_IDLE_SECONDS

_lock = threading.Lock()
_databases = {}


def make_engine(url, pool_size=10, echo=False):
    """A new engine for ``url`` with the compute database's settings."""
    return core_engine.create_engine(
        url, debug=echo, idle_ping_seconds=POOL_PING_IDLE_SECONDS,
        pool_size=pool_size)


def database(url=None):
    """The ``Database`` of ``url`` (default ``[database] connection``)."""
    url = url or CONF.database.connection
    db = _databases.get(url)
    if db is None:
        with _lock:
            db = _databases.get(url)
            if db is None:
                db = core_engine.Database(
                    url, debug=CONF.database.connection_debug,
                    idle_ping_seconds=POOL_PING_IDLE_SECONDS,
                    pool_size=CONF.database.max_pool_size)
                _databases[url] = db
    return db


def get_engine(url=None):
    """The engine of ``database(url)`` in this process."""
    return database(url).engine


def dispose_all():
    with _lock:
        for db in _databases.values():
            db.dispose()
        _databases.clear()
