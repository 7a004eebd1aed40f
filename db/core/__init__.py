"""The database layer both services share: engines, transactions, migrations.

``engine`` builds per-process engines (SQLite tuned for concurrent writers,
PostgreSQL with a pool checked cheaply at checkout) and ``Database``, which
runs a function of a connection as one read or write transaction, retried
on lock contention and replayed after a lost connection;
``migration.Migrations`` runs one alembic script directory under a
migration lock.  ``autocommit``, ``hangup_check``, ``idle_ping`` and
``sqlite_settings`` are the helpers ``engine`` installs.

Each service keeps its own models, queries and migrations: the compute
database in ``volattach.db``, the volume service's in ``volattach.volume.db``.
"""
