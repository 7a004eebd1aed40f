"""One alembic migration runner for both services' databases.

``Migrations(script_location, version_table, lock_key)`` runs the scripts
of one directory (no alembic.ini): ``db_sync(url)`` upgrades the database
at ``url`` in one transaction, ``db_version(url)`` reads its revision,
``head_revision()`` the newest script's.  Concurrent ``db_sync`` calls
(several services starting at once) are serialized: on SQLite by the
``BEGIN IMMEDIATE`` transaction, on PostgreSQL by a transaction-scoped
advisory lock keyed ``lock_key``.  The script directory's ``env.py`` takes
the open connection from ``config.attributes['connection']``.

On SQLite, a migration that changes a table the way ``ALTER TABLE`` cannot
(alembic's batch mode) copies it into a new table and drops the old one.
With foreign keys enforced (``PRAGMA foreign_keys=ON``, as the engine
connects) that DROP is a DELETE of every row: it fails when other tables
point at them, or silently deletes their rows through ``ON DELETE
CASCADE``.  So migrations run with foreign keys off (set on the connection
before BEGIN: inside a transaction the pragma does nothing), as SQLite's own
procedure for such changes asks, then ``PRAGMA foreign_key_check`` runs
before COMMIT: any row left pointing nowhere fails the sync with
``ForeignKeyCheckFailed`` and rolls every migration of it back (SQLite's
DDL is transactional).  The connection gets foreign keys back before it
returns to the pool.  PostgreSQL alters tables in place and checks its
constraints as it goes.
"""
import contextlib

from alembic import command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script
import sqlalchemy as sa

from volattach import exception
from volattach.db.core import engine as db_engine

DEFAULT_VERSION_TABLE = "alembic_version"
# rows of PRAGMA foreign_key_check shown in the error
_SHOWN_VIOLATIONS = 10


class ForeignKeyCheckFailed(exception.VolattachException):
    """The migrations left rows whose foreign keys point at no row (found
    by SQLite's ``PRAGMA foreign_key_check``); nothing was committed.  A
    ``VolattachException``: ``volattach-manage db sync`` prints it as one
    line, not a traceback."""

    def __init__(self, url, violations):
        self.violations = violations
        shown = "; ".join(
            "%s rowid %s -> %s (foreign key %s)" % tuple(v)
            for v in violations[:_SHOWN_VIOLATIONS])
        more = len(violations) - _SHOWN_VIOLATIONS
        super().__init__(
            message="db sync of %s rolled back: %d row(s) violate foreign keys after "
            "the migrations: %s%s" % (
                sa.engine.make_url(url).render_as_string(hide_password=True),
                len(violations), shown,
                " and %d more" % more if more > 0 else ""))


@contextlib.contextmanager
def _sqlite_foreign_keys_off(conn):
    """Foreign keys off on ``conn`` (SQLite, no transaction open) for the
    block, on again after it whatever happens."""
    dbapi_connection = conn.connection.dbapi_connection
    db_engine.set_sqlite_foreign_keys(dbapi_connection, False)
    try:
        yield
    finally:
        try:
            db_engine.set_sqlite_foreign_keys(dbapi_connection, True)
        except Exception:
            # never hand the pool a connection that does not enforce them
            conn.invalidate()
            raise


def _foreign_key_violations(conn):
    return [tuple(row) for row in
            conn.exec_driver_sql("PRAGMA foreign_key_check").all()]


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
        left open) to ``revision``, holding the migration lock; on SQLite
        with foreign keys off, checked before COMMIT
        (``ForeignKeyCheckFailed``: nothing committed)."""
        own = engine is None
        engine = engine or db_engine.create_engine(url)
        cfg = self._config(url)
        try:
            with engine.connect() as conn:
                sqlite = conn.dialect.name == "sqlite"
                with (_sqlite_foreign_keys_off(conn) if sqlite
                      else contextlib.nullcontext()):
                    with conn.begin():
                        db_engine.begin(conn, immediate=True)
                        if conn.dialect.name == "postgresql":
                            conn.execute(
                                sa.text("SELECT pg_advisory_xact_lock(:k)"),
                                {"k": self.lock_key})
                        cfg.attributes["connection"] = conn
                        command.upgrade(cfg, revision)
                        violations = sqlite and _foreign_key_violations(conn)
                        if violations:
                            raise ForeignKeyCheckFailed(url, violations)
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
