"""Pooled connections checked for liveness only after they sat idle.

SQLAlchemy's ``pool_pre_ping=True`` pings the server on *every* checkout:
one extra round trip (and a ``SELECT 1`` for the server) per transaction.
A connection that was used a moment ago is almost certainly alive, so this
module pings only connections that stayed in the pool longer than
``idle_seconds``: a connection left idle across a database restart (or
closed by a firewall or ``idle_session_timeout``) is replaced before it is
handed out, a busy pool pays nothing.

The connection that was in use, or used less than ``idle_seconds`` ago,
when the server went away fails on its next statement instead: SQLAlchemy
then invalidates it and every other connection of the pool, and
``db.core.engine.Database`` runs the transaction again on a new one.

``install(engine)`` works on any SQLAlchemy engine; ``db.core.engine``
installs it on every PostgreSQL engine of both services.
"""
import time

from sqlalchemy import event
from sqlalchemy import exc as sa_exc

DEFAULT_IDLE_SECONDS = 5.0
# Key of the connection record's ``info`` dict: time.monotonic() of the
# last check-in.  ``info`` lives as long as the DBAPI connection: a
# reconnect starts with an empty one (a fresh connection needs no ping).
CHECKED_IN_AT = "volattach_checked_in_at"


def needs_ping(checked_in_at, now, idle_seconds):
    """True if a connection checked in at ``checked_in_at`` (None: never
    checked in, i.e. new) must be pinged before use at ``now``."""
    return checked_in_at is not None and now - checked_in_at > idle_seconds


def install(engine, idle_seconds=DEFAULT_IDLE_SECONDS, clock=time.monotonic):
    """Ping ``engine``'s connections that were idle for ``idle_seconds``
    at checkout; a failed ping makes the pool reconnect (and drop its
    other connections, which are most likely dead too)."""
    dialect = engine.dialect

    @event.listens_for(engine, "checkin")
    def _checked_in(dbapi_connection, connection_record):
        connection_record.info[CHECKED_IN_AT] = clock()

    @event.listens_for(engine, "checkout")
    def _checked_out(dbapi_connection, connection_record, connection_proxy):
        if not needs_ping(connection_record.info.get(CHECKED_IN_AT),
                          clock(), idle_seconds):
            return
        try:
            dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as exc:
            # The server probably restarted: the pool drops every
            # connection opened before now and opens a new one for us.
            raise sa_exc.InvalidatePoolError(
                "idle connection failed its ping: %s" % exc) from exc
    return engine
