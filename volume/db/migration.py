"""Run the volume service's alembic migrations programmatically.

``db_sync(url)`` upgrades the database at ``url`` to the newest revision (no
alembic.ini: the script location is this package's ``migrations``).  The
version is kept in the table ``volume_alembic_version``.  Concurrent
``db_sync`` calls are serialized (SQLite: an IMMEDIATE transaction;
PostgreSQL: a transaction-scoped advisory lock).
"""
import os

from alembic import command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script
import sqlalchemy as sa

from volattach.volume.db import engine as db_engine

VERSION_TABLE = "volume_alembic_version"
_ADVISORY_LOCK_KEY = 0x766f6c756d65  # "volume"


def _config(connection_url):
    cfg = alembic_config.Config()
    cfg.set_main_option("script_location", os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "migrations"))
    cfg.set_main_option("sqlalchemy.url",
                        connection_url.replace("%", "%%"))
    return cfg


def db_sync(connection_url, revision="head"):
    """Upgrade the volume database at ``connection_url`` to ``revision``."""
    cfg = _config(connection_url)
    engine = db_engine.create_engine(connection_url)
    try:
        with engine.connect() as conn:
            with conn.begin():
                db_engine.begin(conn, immediate=True)
                if conn.dialect.name == "postgresql":
                    conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"),
                                 {"k": _ADVISORY_LOCK_KEY})
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, revision)
    finally:
        engine.dispose()


def db_version(connection_url):
    """The current revision of the database, or None before db_sync."""
    engine = db_engine.create_engine(connection_url)
    try:
        with engine.connect() as conn:
            ctx = alembic_migration.MigrationContext.configure(
                conn, opts={"version_table": VERSION_TABLE})
            return ctx.get_current_revision()
    finally:
        engine.dispose()


def head_revision():
    script = alembic_script.ScriptDirectory.from_config(_config("sqlite://"))
    return script.get_current_head()
