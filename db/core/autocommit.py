"""One statement on PostgreSQL without BEGIN and ROLLBACK/COMMIT around it.

A lone SELECT, INSERT or UPDATE is a transaction by itself; psycopg2 would
send a BEGIN before it and the pool a ROLLBACK (or the caller a COMMIT)
after it: three round trips where one does.  ``autocommit(conn)`` puts the
checked-out connection's psycopg2 connection in autocommit mode for the
block and back afterwards.  It is set on the DBAPI connection, which costs
no round trip, unlike SQLAlchemy's ``isolation_level="AUTOCOMMIT"``, whose
reset when the connection returns to the pool sends one more message.
SQLAlchemy's own
``commit()`` and the pool's rollback are then no-ops on the driver.

Used by ``db.core.engine.Database.read_single`` and ``write_single``.
"""
import contextlib


@contextlib.contextmanager
def autocommit(conn):
    """The SQLAlchemy connection ``conn`` (psycopg2) in autocommit mode for
    the block."""
    dbapi_connection = conn.connection.dbapi_connection
    dbapi_connection.autocommit = True
    try:
        yield conn
    finally:
        if not dbapi_connection.closed:
            dbapi_connection.autocommit = False
