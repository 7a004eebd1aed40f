"""alembic environment of the compute database (run by db.migration)."""
from alembic import context

from volattach.db import models

config = context.config
target_metadata = models.Base.metadata


def run_migrations_online():
    connectable = config.attributes.get("connection")
    context.configure(connection=connectable, target_metadata=target_metadata,
                      render_as_batch=connectable.dialect.name == "sqlite")
    with context.begin_transaction():
        context.run_migrations()


run_migrations_online()
