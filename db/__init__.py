"""The compute database: models, engine, data access and migrations.

Only the API and the conductor import this package; a compute never does.
"""
