"""The volume service's database engine: the shared one.

The engine, ``Database`` (read / write / read_single transactions, lock
retries, replay after a lost connection, ``DatabaseUnavailable`` while the
server is down) and ``begin`` live in ``volattach.db.core.engine``, which
the compute database uses too; this module names them for the volume
service's code (``volume.db.api`` functions take the connection that
``Database`` hands them).
"""
from volattach.db.core.engine import (  # noqa: F401
    Database, LOCK_RETRY_ATTEMPTS, SQLITE_BUSY_TIMEOUT_MS, begin,
    create_engine, is_sqlite)
