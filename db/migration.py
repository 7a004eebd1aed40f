"""Run the compute database's alembic migrations (``volattach-manage db sync``)."""
import os

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from volattach.db import engine as db_engine

_SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "migrations")


def _config(connection):
    config = Config()
    config.set_main_option("script_location", _SCRIPTS)
    config.attributes["connection"] = connection
    return config


def db_sync(url=None, revision="head"):
    """Upgrade the database at ``url`` (default [database] connection)."""
    engine = db_engine.get_engine(url)
    with engine.begin() as connection:
        command.upgrade(_config(connection), revision)


def db_version(url=None):
    engine = db_engine.get_engine(url)
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision():
    config = Config()
    config.set_main_option("script_location", _SCRIPTS)
    return ScriptDirectory.from_config(config).get_current_head()
