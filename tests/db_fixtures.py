"""Database fixtures shared by the suites: a fresh compute database on
SQLite, and on PostgreSQL when VOLATTACH_TEST_PG_URL is set."""
import contextlib
import uuid

import sqlalchemy as sa

from tests import utils


@contextlib.contextmanager
def fresh_postgres_database(base_url):
    """Create a uniquely named database next to ``base_url`` and drop it after."""
    name = "va_" + uuid.uuid4().hex[:12]
    admin = sa.make_url(base_url).set(database="postgres")
    engine = sa.create_engine(admin.render_as_string(hide_password=False),
                              isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text('CREATE DATABASE "%s"' % name))
    try:
        yield sa.make_url(base_url).set(database=name).render_as_string(hide_password=False)
    finally:
        from volattach.db import engine as db_engine
        db_engine.dispose_all()
        with engine.connect() as conn:
            conn.execute(sa.text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = :n AND pid <> pg_backend_pid()"), {"n": name})
            conn.execute(sa.text('DROP DATABASE IF EXISTS "%s"' % name))
        engine.dispose()


@contextlib.contextmanager
def compute_database(kind, tmp_path):
    """A migrated compute database URL of ``kind`` ('sqlite' or 'postgresql')."""
    from volattach.db import migration
    if kind == "sqlite":
        url = "sqlite:///%s" % (tmp_path / "compute.sqlite")
        migration.db_sync(url)
        yield url
        return
    base = utils.require_env(utils.PG_URL_ENV, "a PostgreSQL database test")
    with fresh_postgres_database(base) as url:
        migration.db_sync(url)
        yield url


@contextlib.contextmanager
def configured_compute_database(kind, tmp_path):
    """``compute_database(kind)`` as the ``[database] connection`` of the
    global CONF for the block; its engines are disposed of afterwards."""
    from volattach.db import engine as db_engine
    from volattach.conf import CONF
    CONF([], project="volattach", default_config_files=[])
    with compute_database(kind, tmp_path) as url:
        CONF.set_override("connection", url, group="database")
        try:
            yield url
        finally:
            CONF.clear_override("connection", group="database")
            db_engine.dispose_all()


def terminate_backends(url, settle=0.2):
    """pg_terminate_backend every session of ``url``'s database but this
    one (what a PostgreSQL restart does to a pool); returns how many.  Then
    waits ``settle`` seconds for the backends' goodbye to reach the
    sockets."""
    import time
    name = sa.make_url(url).database
    admin = sa.create_engine(url)
    try:
        with admin.connect() as conn:
            killed = conn.execute(sa.text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = :n AND pid <> pg_backend_pid()"), {"n": name}).scalar()
    finally:
        admin.dispose()
    time.sleep(settle)
    return killed
