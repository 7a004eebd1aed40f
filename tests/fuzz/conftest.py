"""The fuzzing tier: request bodies generated from the project's own JSON
schemas (hypothesis-jsonschema), valid and mutated, and protocol-level
garbage, against both APIs of the all-in-one deployment (real HTTP).
``VOLATTACH_FUZZ_EXAMPLES`` sets the examples per schema (CI default in
``harness.py``); ``benchmarks/soak.py`` runs it longer."""
import os

import pytest

from tests.functional.conftest import deployment  # noqa: F401


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.path).startswith(here + os.sep):
            item.add_marker(pytest.mark.fuzz)
