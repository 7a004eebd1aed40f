"""One alembic migration runner for both services' databases.

``Migrations(script_location, version_table, lock_key)`` runs the scripts
of one directory (no alembic.ini): ``db_sync(url)`` upgrades the database
at ``url`` in one transaction, ``db_version(url)`` reads its revision,
``head_revision()`` the newest script's.  Concurrent ``db_sync`` calls
(several services starting at once) are serialized: on SQLite by the
``BEGIN IMMEDIATE`` transaction, on PostgreSQL by a transaction-scoped
advisory lock keyed ``lock_key``.  The script directory's ``env.py`` takes
the open connection from ``config.attributes['connection']``.
"""
from alembic import command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script
import sqlalchemy as sa

from volattach.db.core import engine as db_engine

DEFAULT_VERSION_TABLE = "alembic_version"


class Migrations:
    """The migrations of one database schema."""

    def __init__(self, script_location, lock_key,
                 version_table=DEFAULT_VERSION_TABLE):
        self.script_location = script_location
        self.lock_key = lock_key
        self.version_table = version_table

    def _config(self, connection_url=None):
        cfg = alembic_config.Config()
        cfg.set_main_option("script_location", self.script_location)
        if connection_url is not None:
            cfg.set_main_option("sqlalchemy.url",
                                connection_url.replace("%", "%%"))
        return cfg

    def db_sync(self, url, revision="head", engine=None):
        """Upgrade the database at ``url`` (or behind ``engine``, which is
        left open) to ``revision``, holding the migration lock."""
        own = engine is None
        engine = engine or db_engine.create_engine(url)
        cfg = self._config(url)
        try:
            with engine.connect() as conn:
                with conn.begin():
                    db_engine.begin(conn, immediate=True)
                    if conn.dialect.name == "postgresql":
                        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"),
                                     {"k": self.lock_key})
                    cfg.attributes["connection"] = conn
                    command.upgrade(cfg, revision)
        finally:
            if own:
                engine.dispose()

    def db_version(self, url, engine=None):
        """The current revision of the database, or None before db_sync."""
        own = engine is None
        engine = engine or db_engine.create_engine(url)
        try:
            with engine.connect() as conn:
                ctx = alembic_migration.MigrationContext.configure(
                    conn, opts={"version_table": self.version_table})
                return ctx.get_current_revision()
        finally:
            if own:
                engine.dispose()

    def head_revision(self):
        script = alembic_script.ScriptDirectory.from_config(self._config())
        return script.get_current_head()
