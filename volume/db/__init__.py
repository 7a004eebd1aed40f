"""The volume service's own database: models, data access, migrations.

``models`` declares the tables, ``engine`` builds per-process engines
(SQLite tuned for concurrent writers, PostgreSQL with row locks),
``api`` holds every query and the transactional primitives the manager
composes, and ``migration.db_sync`` runs the alembic migrations.
"""
