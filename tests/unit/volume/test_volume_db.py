"""volume.db: migrations agree with the models; SQLite engine settings;
the whole-transaction retry on lock contention."""
import sqlalchemy as sa
from alembic import autogenerate
from alembic.migration import MigrationContext
from sqlalchemy import exc as sa_exc

from volattach.volume.db import engine as db_engine
from volattach.volume.db import migration
from volattach.volume.db import models


def test_db_sync_creates_the_models_tables(tmp_path):
    url = "sqlite:///%s" % (tmp_path / "v.sqlite")
    assert migration.db_version(url) is None
    migration.db_sync(url)
    migration.db_sync(url)  # idempotent
    assert migration.db_version(url) == migration.head_revision()
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        tables = set(sa.inspect(conn).get_table_names())
        assert tables == {"volume_alembic_version", "services",
                          "volume_types", "volume_type_extra_specs",
                          "volumes", "volume_attachments",
                          "attachment_specs", "encryption"}
        diff = autogenerate.compare_metadata(
            MigrationContext.configure(conn, opts={
                "version_table": migration.VERSION_TABLE}),
            models.Base.metadata)
        default = conn.execute(sa.text(
            "SELECT name FROM volume_types")).scalars().all()
    engine.dispose()
    assert diff == []
    assert default == ["__DEFAULT__"]


def test_sqlite_engine_settings(tmp_path):
    db = db_engine.Database("sqlite:///%s" % (tmp_path / "e.sqlite"))
    pragmas = db.read(lambda conn: (
        conn.exec_driver_sql("PRAGMA journal_mode").scalar(),
        conn.exec_driver_sql("PRAGMA busy_timeout").scalar(),
        conn.exec_driver_sql("PRAGMA foreign_keys").scalar()))
    assert pragmas == ("wal", db_engine.SQLITE_BUSY_TIMEOUT_MS, 1)
    begun = []
    sa.event.listen(db.engine, "before_cursor_execute",
                    lambda conn, cursor, stmt, *a: begun.append(stmt))
    db.write(lambda conn: conn.exec_driver_sql("SELECT 1"))
    db.read(lambda conn: conn.exec_driver_sql("SELECT 2"))
    assert begun == ["BEGIN IMMEDIATE", "SELECT 1", "BEGIN", "SELECT 2"]
    db.dispose()


def test_write_retries_whole_transaction_when_locked(tmp_path):
    db = db_engine.Database("sqlite:///%s" % (tmp_path / "r.sqlite"))
    db.write(lambda conn: conn.exec_driver_sql("CREATE TABLE t (x INT)"))
    attempts = []

    def flaky(conn):
        attempts.append(1)
        conn.exec_driver_sql("INSERT INTO t VALUES (%d)" % len(attempts))
        if len(attempts) < 3:
            raise sa_exc.OperationalError("INSERT", {},
                                          Exception("database is locked"))
        return "done"
    assert db.write(flaky) == "done"
    # The failed attempts were rolled back: only the third insert stays.
    assert db.read(lambda c: c.exec_driver_sql(
        "SELECT x FROM t").scalars().all()) == [3]

    def broken(conn):
        raise sa_exc.OperationalError("X", {}, Exception("no such table"))
    attempts.clear()
    try:
        db.write(lambda conn: (attempts.append(1), broken(conn)))
    except sa_exc.OperationalError:
        pass
    assert len(attempts) == 1  # other errors are not retried
    db.dispose()
