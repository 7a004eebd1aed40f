"""The volume service's alembic migrations, run by the shared runner
(``volattach.db.core.migration``).

``db_sync(url)`` upgrades the database at ``url`` to the newest revision
(the scripts are this package's ``migrations``); the version is kept in
the table ``volume_alembic_version``.  Concurrent ``db_sync`` calls are
serialized by the runner's migration lock.
"""
import os

from volattach.db.core import migration as core_migration

VERSION_TABLE = "volume_alembic_version"
_ADVISORY_LOCK_KEY = 0x766f6c756d65  # "volume"

MIGRATIONS = core_migration.Migrations(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "migrations"),
    lock_key=_ADVISORY_LOCK_KEY, version_table=VERSION_TABLE)


def db_sync(connection_url, revision="head"):
    """Upgrade the volume database at ``connection_url`` to ``revision``."""
    MIGRATIONS.db_sync(connection_url, revision)


def db_version(connection_url):
    """The current revision of the database, or None before db_sync."""
    return MIGRATIONS.db_version(connection_url)


def head_revision():
    return MIGRATIONS.head_revision()
