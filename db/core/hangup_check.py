"""Pooled connections the server hung up on are replaced before use.

``db.core.idle_ping`` pings a pooled connection at checkout only when it
sat idle for a while (``pool_pre_ping`` pinged on every checkout: a
``SELECT 1`` round trip per transaction).  A connection used a moment ago
that the server has since closed (``pg_terminate_backend``, a restart, an
``idle_session_timeout``) would still fail its next statement.  This module
catches that case without a round trip: a PostgreSQL server that closes a
session first sends the client an error message, then closes the socket, so
the idle connection's socket has something to read.  At checkout we poll the
socket without waiting (a system call, no network traffic); only when it
has input does the connection get a real ping, and a failed ping makes the
pool open a new connection instead (the other pooled connections are
checked the same way when their turn comes).

A healthy idle session has nothing to read (PostgreSQL sends nothing
unprompted unless asked to LISTEN; a rare notice or parameter change just
costs one harmless ping).  A peer that vanished without closing (a network
cut) is what ``db.core.idle_ping``'s idle ping is for.

Works for any DBAPI connection that has ``fileno()`` (psycopg2); others
(sqlite3) are left alone.  ``db.core.engine`` installs it beside ``db.core.idle_ping`` on every
PostgreSQL engine.
"""
import select

from sqlalchemy import event
from sqlalchemy import exc as sa_exc


def has_input(fileno):
    """True when the socket ``fileno`` can be read without blocking (data,
    or the peer closed it); never waits."""
    if not hasattr(select, "poll"):      # not on Linux: select() will do
        return bool(select.select([fileno], [], [], 0)[0])
    poller = select.poll()
    poller.register(fileno, select.POLLIN | select.POLLPRI)
    return bool(poller.poll(0))


def _fileno(dbapi_connection):
    fileno = getattr(dbapi_connection, "fileno", None)
    if fileno is None:
        return None
    try:
        return fileno()
    except Exception:     # closed connection: let the statement report it
        return None


def check_on_checkout(dialect, dbapi_connection):
    """Ping ``dbapi_connection`` if its socket has input; raise
    DisconnectionError (the pool then reconnects) when the ping fails."""
    fileno = _fileno(dbapi_connection)
    if fileno is None or not has_input(fileno):
        return False
    try:
        dialect.do_ping(dbapi_connection)
    except dialect.loaded_dbapi.Error as exc:
        raise sa_exc.DisconnectionError(
            "the database server closed this pooled connection: %s" % exc) from exc
    return True


def install(engine):
    """Check ``engine``'s connections at each checkout (see the module
    docstring); returns the engine."""
    dialect = engine.dialect

    @event.listens_for(engine, "checkout")
    def _checked_out(dbapi_connection, connection_record, connection_proxy):
        check_on_checkout(dialect, dbapi_connection)
    return engine
