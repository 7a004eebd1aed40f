"""The fuzzing tier on the production shape: the real daemons
(volattach-api under gunicorn, conductor, two computes, the volume
service) over RabbitMQ and PostgreSQL, where the all-in-one runs on SQLite.
The same tests as ``test_schemas``, ``test_paths`` and the query strings
of ``test_protocol``, with ``VOLATTACH_FUZZ_DAEMON_EXAMPLES`` examples per
test (CI default below: a few minutes in all)."""
import os

import pytest

from tests.fuzz import harness
from tests.integration import conftest as integration
# The tests run here again, with this module's ``state``.
from tests.fuzz.test_paths import (  # noqa: F401
    test_hostile_ids_in_the_url, test_hostile_query_values,
    test_hostile_strings_in_bodies)
from tests.fuzz.test_protocol import test_absurd_query_strings  # noqa: F401
from tests.fuzz.test_schemas import test_schema_bodies  # noqa: F401

pytestmark = pytest.mark.integration

EXAMPLES = int(os.environ.get("VOLATTACH_FUZZ_DAEMON_EXAMPLES", "5"))


@pytest.fixture(scope="module")
def daemons(tmp_path_factory):
    with integration.running_deployment(
            tmp_path_factory.mktemp("fuzz-daemons")) as dep:
        yield dep


@pytest.fixture(scope="module")
def state(daemons):
    saved = harness.EXAMPLES
    harness.EXAMPLES = EXAMPLES
    try:
        yield harness.State(daemons)
        total = harness.Tally.total
        print("\nfuzz (daemons) total: requests %d, 5xx %d" % (
            total["requests"], total["5xx"]))
    finally:
        harness.EXAMPLES = saved
