"""The compute database: models, engine, data access and migrations.

``core`` is the database layer both services share (engines, transactions
with their retries, the migration runner); the volume service imports that
subpackage only.  The rest (``models``, ``engine``, ``api``, ``migration``)
is the compute database, which only the API and the conductor import; a
compute daemon imports none of this package.
"""
