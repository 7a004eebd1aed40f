"""Run the compute database's alembic migrations (``volattach-manage db
sync``) with the shared runner (``db.core.migration``: one transaction,
under a migration lock)."""
import os

from volattach.db import engine as db_engine
from volattach.db.core import migration as core_migration

_ADVISORY_LOCK_KEY = 0x636f6d70757465  # "compute"

MIGRATIONS = core_migration.Migrations(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "migrations"),
    lock_key=_ADVISORY_LOCK_KEY)


def db_sync(url=None, revision="head"):
    """Upgrade the database at ``url`` (default [database] connection)."""
    database = db_engine.database(url)
    MIGRATIONS.db_sync(database.url, revision, engine=database.engine)


def db_version(url=None):
    database = db_engine.database(url)
    return MIGRATIONS.db_version(database.url, engine=database.engine)


def head_revision():
    return MIGRATIONS.head_revision()
