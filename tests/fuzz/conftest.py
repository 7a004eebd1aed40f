"""The fuzzing tier: request bodies generated from the project's own JSON
schemas (hypothesis-jsonschema), valid and mutated, hostile route ids,
query values and body strings (``test_paths``), and protocol-level
garbage, against both APIs of the all-in-one deployment (real HTTP,
SQLite), and again against the daemons over RabbitMQ and PostgreSQL
(``test_daemons``).  ``VOLATTACH_FUZZ_EXAMPLES`` sets the examples per
schema (CI default in ``harness.py``), ``VOLATTACH_FUZZ_DAEMON_EXAMPLES``
those of the daemon run; ``benchmarks/soak.py`` runs them longer."""
import os

import pytest

from tests.functional.conftest import deployment  # noqa: F401


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.path).startswith(here + os.sep):
            item.add_marker(pytest.mark.fuzz)
