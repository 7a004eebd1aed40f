"""Top-level pytest configuration of volattach's tests.

The suites:

- ``tests/unit``: logic of one module; mocks allowed there only.
- ``tests/functional``: every service in one process over oslo.messaging's
  in-memory transport, SQLite.
- ``tests/integration``: the real daemons as separate processes over
  RabbitMQ and PostgreSQL (marker ``integration``); see
  ``tests/integration/conftest.py``.

``scripts/test`` starts RabbitMQ and PostgreSQL and exports
``VOLATTACH_TEST_RABBIT_URL`` and ``VOLATTACH_TEST_PG_URL``; tests that need
them skip when they are unset, except under CI (``CI=true``), where they fail.
Generic helpers live in ``tests/utils.py``.
"""

MARKERS = (
    "integration: starts the real daemons as separate processes; needs "
    "RabbitMQ (VOLATTACH_TEST_RABBIT_URL) and PostgreSQL "
    "(VOLATTACH_TEST_PG_URL)",
    "postgres: needs PostgreSQL (VOLATTACH_TEST_PG_URL)",
    "guest: boots real guests through libvirt (tools/start-libvirt.sh) "
    "with the file volume backend; see tests/guest/conftest.py",
    "conformance: compares volattach with a real Cinder 29 that it installs "
    "from PyPI into .ci-state/cinder-venv and runs on loopback",
    "interleaving: seeded concurrent operations on shared servers and "
    "volumes, invariants checked after every batch (tests/interleaving)",
    "fuzz: schema-driven and protocol-level fuzzing of both APIs "
    "(tests/fuzz)",
)


def pytest_configure(config):
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)
