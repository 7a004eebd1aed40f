"""The quota race on PostgreSQL: the all-in-one deployment on fresh
PostgreSQL databases (``VOLATTACH_TEST_PG_URL``), 20 parallel creates
against an instances quota of 10 make 10 servers, never 11 (the
per-project lock row of ``db.api.quotas``: READ COMMITTED alone would let
two creates count the same usage)."""
import pytest

from tests.functional import quota_race
from tests.functional.test_postgresql_input import deployment, pg_databases  # noqa: F401

pytestmark = pytest.mark.postgres


def test_twenty_parallel_creates_against_a_quota_of_ten(deployment):  # noqa: F811
    quota_race.twenty_creates_against_ten(deployment)
