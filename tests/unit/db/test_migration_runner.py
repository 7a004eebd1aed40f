"""The shared migration runner (``db.core.migration``) on SQLite databases
that hold rows: a migration that copies a table (alembic's batch mode)
keeps the rows of the tables that point at it, even through ``ON DELETE
CASCADE``; rows left pointing nowhere fail the sync, which commits nothing;
the pooled connection enforces foreign keys again afterwards.

Most tests run scripts of their own (a parent table, a child table pointing
at it with ON DELETE CASCADE); one runs the volume service's own
migrations from ``0001_initial`` over an attached volume, the in-place
upgrade that failed with "FOREIGN KEY constraint failed".
"""
import textwrap

import pytest
import sqlalchemy as sa

from volattach.db.core import engine as db_engine
from volattach.db.core import migration as core_migration
from volattach.volume.db import migration as volume_migration

ENV_PY = '''
from alembic import context

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=None,
                  render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
'''

INITIAL = '''
from alembic import op
import sqlalchemy as sa

revision = "0001"
down_revision = None


def upgrade():
    op.create_table(
        "parent",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(20), nullable=False))
    op.create_table(
        "child",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("parent_id", sa.Integer,
                  sa.ForeignKey("parent.id", ondelete="CASCADE"),
                  nullable=False))
'''

# Copies "parent" (a server default that is an expression makes alembic
# recreate the table on SQLite; "always" makes sure of it).
COPY_PARENT = '''
from alembic import op
import sqlalchemy as sa

revision = "0002"
down_revision = "0001"


def upgrade():
    with op.batch_alter_table("parent", recreate="always") as batch:
        batch.add_column(sa.Column("flag", sa.Boolean, nullable=False,
                                   server_default=sa.false()))
'''

# Leaves a child pointing at no parent (foreign keys are off meanwhile).
ORPHAN_CHILD = '''
from alembic import op
import sqlalchemy as sa

revision = "0002"
down_revision = "0001"


def upgrade():
    op.add_column("parent", sa.Column("note", sa.String(20)))
    op.execute("INSERT INTO child (id, parent_id) VALUES (99, 12345)")
'''


def _scripts(tmp_path, second):
    """A script directory: 0001 (parent, child) and ``second``."""
    root = tmp_path / "migrations"
    (root / "versions").mkdir(parents=True)
    (root / "env.py").write_text(ENV_PY)
    (root / "versions" / "0001_initial.py").write_text(
        textwrap.dedent(INITIAL))
    (root / "versions" / "0002_second.py").write_text(textwrap.dedent(second))
    return core_migration.Migrations(str(root), lock_key=1)


def _url(tmp_path):
    return "sqlite:///%s" % (tmp_path / "db.sqlite")


def _rows(url, sql):
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.exec_driver_sql(sql).all()]
    finally:
        engine.dispose()


def _fill(url):
    """Two parents, three children (inserted with foreign keys on)."""
    engine = db_engine.create_engine(url)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(
                "INSERT INTO parent (id, name) VALUES (1, 'a'), (2, 'b')")
            conn.exec_driver_sql(
                "INSERT INTO child (id, parent_id) VALUES (10, 1), (11, 1), "
                "(20, 2)")
    finally:
        engine.dispose()


def test_copying_a_cascade_parent_keeps_every_child_row(tmp_path):
    migrations = _scripts(tmp_path, COPY_PARENT)
    url = _url(tmp_path)
    migrations.db_sync(url, revision="0001")
    _fill(url)

    migrations.db_sync(url)

    assert migrations.db_version(url) == "0002"
    assert _rows(url, "SELECT id, name, flag FROM parent ORDER BY id") == [
        (1, "a", 0), (2, "b", 0)]
    # foreign keys on during the DROP of the old "parent" would have
    # deleted these through ON DELETE CASCADE
    assert _rows(url, "SELECT id, parent_id FROM child ORDER BY id") == [
        (10, 1), (11, 1), (20, 2)]
    # ... and the copied table is still the one "child" points at
    assert _rows(url, "PRAGMA foreign_key_check") == []


def test_a_foreign_key_violation_fails_the_sync_and_commits_nothing(tmp_path):
    migrations = _scripts(tmp_path, ORPHAN_CHILD)
    url = _url(tmp_path)
    migrations.db_sync(url, revision="0001")
    _fill(url)

    with pytest.raises(core_migration.ForeignKeyCheckFailed) as caught:
        migrations.db_sync(url)

    message = str(caught.value)
    assert "rolled back" in message, message
    assert "1 row(s) violate foreign keys" in message, message
    assert "child rowid 99 -> parent" in message, message
    assert caught.value.violations == [("child", 99, "parent", 0)]
    assert migrations.db_version(url) == "0001"
    assert _rows(url, "SELECT id FROM child ORDER BY id") == [
        (10,), (11,), (20,)]
    columns = [c["name"] for c in
               sa.inspect(sa.create_engine(url)).get_columns("parent")]
    assert columns == ["id", "name"]


@pytest.mark.parametrize("second", [COPY_PARENT, ORPHAN_CHILD],
                         ids=["synced", "failed"])
def test_the_pooled_connection_enforces_foreign_keys_again(tmp_path, second):
    migrations = _scripts(tmp_path, second)
    url = _url(tmp_path)
    engine = db_engine.create_engine(url)
    try:
        migrations.db_sync(url, revision="0001", engine=engine)
        try:
            migrations.db_sync(url, engine=engine)
        except core_migration.ForeignKeyCheckFailed:
            pass
        # the one pooled connection, the one the migrations ran on
        assert engine.pool.checkedin() == 1
        with engine.connect() as conn:
            with conn.begin():
                assert conn.exec_driver_sql(
                    "PRAGMA foreign_keys").scalar() == 1
            with pytest.raises(sa.exc.IntegrityError):
                with conn.begin():
                    conn.exec_driver_sql(
                        "INSERT INTO child (id, parent_id) VALUES (7, 777)")
    finally:
        engine.dispose()


def test_volume_database_with_attachments_upgrades_from_its_first_revision(
        tmp_path):
    """The volume service's migrations copy ``volumes`` (which attachments
    point at) and ``volume_attachments`` (which attachment_specs point at
    with ON DELETE CASCADE)."""
    url = _url(tmp_path)
    volume_migration.db_sync(url, revision="0001_initial")
    engine = db_engine.create_engine(url)
    with engine.begin() as conn:
        type_id = conn.exec_driver_sql(
            "SELECT id FROM volume_types").scalar_one()
        conn.exec_driver_sql(
            "INSERT INTO volumes (id, project_id, user_id, size, status, "
            "availability_zone, volume_type_id, multiattach, readonly, "
            "shared_targets, bootable, metadata, created_at) VALUES "
            "('v1', 'p', 'u', 1, 'in-use', 'nova', ?, 1, 0, 0, 0, '{}', "
            "'2026-11-21 00:00:00')", (type_id,))
        conn.exec_driver_sql(
            "INSERT INTO volume_attachments (id, volume_id, project_id, "
            "instance_uuid, attach_status, attach_mode, created_at) VALUES "
            "('a1', 'v1', 'p', 's1', 'attached', 'rw', '2026-11-21 00:00:00'),"
            " ('a2', 'v1', 'p', 's2', 'attached', 'rw', "
            "'2026-11-21 00:00:00')")
        conn.exec_driver_sql(
            "INSERT INTO attachment_specs (attachment_id, key, value) VALUES "
            "('a1', 'host', 'compute1'), ('a2', 'host', 'compute2')")
    engine.dispose()

    volume_migration.db_sync(url)

    assert volume_migration.db_version(url) == volume_migration.head_revision()
    assert _rows(url, "SELECT id, status, multiattach, readonly_set "
                      "FROM volumes") == [("v1", "in-use", 1, 0)]
    assert _rows(url, "SELECT id, volume_id, instance_uuid, legacy FROM "
                      "volume_attachments ORDER BY id") == [
        ("a1", "v1", "s1", 0), ("a2", "v1", "s2", 0)]
    assert _rows(url, "SELECT attachment_id, key, value FROM "
                      "attachment_specs ORDER BY attachment_id") == [
        ("a1", "host", "compute1"), ("a2", "host", "compute2")]
