"""alembic environment of the volume database (run by ``migration.db_sync``,
which passes an open connection in ``config.attributes['connection']``)."""
from alembic import context
import sqlalchemy as sa

from volattach.volume.db import models

VERSION_TABLE = "volume_alembic_version"

config = context.config
target_metadata = models.Base.metadata


def run_migrations_offline():
    context.configure(url=config.get_main_option("sqlalchemy.url"),
                      target_metadata=target_metadata,
                      version_table=VERSION_TABLE,
                      literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online():
    connection = config.attributes.get("connection")
    if connection is None:
        engine = sa.create_engine(config.get_main_option("sqlalchemy.url"))
        with engine.begin() as connection:
            _run(connection)
        engine.dispose()
    else:
        _run(connection)


def _run(connection):
    context.configure(connection=connection, target_metadata=target_metadata,
                      version_table=VERSION_TABLE, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
