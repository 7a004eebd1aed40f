"""The interleaving tier: seeded concurrent operations on shared servers
and volumes, invariants checked after every batch (``engine.py``).

``test_all_in_one.py`` drives the in-process deployment of the functional
tests (every role in this process, real HTTP, SQLite);
``test_daemons.py`` the real daemons over RabbitMQ and PostgreSQL.
``VOLATTACH_INTERLEAVING_SEEDS`` (comma-separated) and
``VOLATTACH_INTERLEAVING_STEPS`` replace the CI defaults, to replay a
failing seed or run longer; ``benchmarks/soak.py`` runs for a duration.
"""
import os

import pytest

# The in-process deployment and its clients (module scope).
from tests.functional.conftest import deployment  # noqa: F401


def seeds(default):
    raw = os.environ.get("VOLATTACH_INTERLEAVING_SEEDS")
    if not raw:
        return list(default)
    return [int(s) for s in raw.split(",") if s.strip()]


def steps(default):
    return int(os.environ.get("VOLATTACH_INTERLEAVING_STEPS", default))


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.path).startswith(here + os.sep):
            item.add_marker(pytest.mark.interleaving)
