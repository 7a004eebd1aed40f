"""Migration 0008 (services.images) on a compute database that holds the
rows of the release before (revision 0007): every services row keeps its
columns, ``images`` is NULL (those computes reported nothing), and the
Service objects read and write it after the upgrade, on SQLite and
PostgreSQL."""
import pytest
import sqlalchemy as sa

import volattach  # noqa: F401
from volattach import context
from volattach.db import migration
from volattach import objects
from volattach.objects import service as service_obj
from tests import db_fixtures

objects.register_all()

IMAGE = "155d900f-4e14-4e4c-a73d-069cbf4541e6"
CONNECTOR = '{"host": "compute1", "ip": "192.0.2.10"}'


@pytest.fixture(params=["sqlite", pytest.param("postgresql",
                                               marks=pytest.mark.postgres)])
def database_at_0007(request, tmp_path):
    """A compute database at revision 0007 with two services rows (a
    compute of service version 10 and its conductor), the global CONF
    pointing at it."""
    with db_fixtures.configured_compute_database(
            request.param, tmp_path, revision="0007") as url:
        db_fixtures.run_sql(url, (
            "INSERT INTO services (id, uuid, host, \"binary\", topic, "
            "report_count, disabled, forced_down, version, rpc_version, "
            "connector, created_at, last_seen_up) VALUES "
            "(1, 'a0000000-0000-4000-8000-000000000001', 'compute1', "
            "'volattach-compute', 'compute', 42, :f, :f, 10, '1.9', "
            ":connector, '2026-11-25 10:00:00', '2026-11-25 10:05:00'),"
            "(2, 'a0000000-0000-4000-8000-000000000002', 'ctl', "
            "'volattach-conductor', 'conductor', 7, :f, :f, 10, '1.7', NULL, "
            "'2026-11-25 10:00:00', NULL)",
            {"f": False, "connector": CONNECTOR}))
        yield url


def _rows(url):
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return [dict(r) for r in conn.execute(sa.text(
                "SELECT * FROM services ORDER BY id")).mappings()]
    finally:
        engine.dispose()


def test_upgrade_keeps_every_service_and_adds_images_null(database_at_0007):
    url = database_at_0007
    before = _rows(url)
    assert "images" not in before[0]

    migration.db_sync(url, revision="0008")

    assert migration.db_version(url) == "0008"
    after = _rows(url)
    assert [{k: v for k, v in row.items() if k != "images"} for row in after] == before
    assert [row["images"] for row in after] == [None, None]

    ctxt = context.get_admin_context()
    compute = objects.Service.get_by_host_and_binary(ctxt, "compute1",
                                                     "volattach-compute")
    assert compute.images is None and compute.report_count == 42
    assert compute.connector == {"host": "compute1", "ip": "192.0.2.10"}
    # a compute of the release before reports no list: the API accepts any
    # imageRef while it is up
    assert not compute.reports_images
    # the same compute, upgraded, registers with its list
    compute.version = service_obj.SERVICE_VERSION
    compute.images = [IMAGE]
    compute.save()
    [first, _] = objects.ServiceList.get_all(ctxt)
    assert first.images == [IMAGE] and first.reports_images
    assert _rows(url)[1]["images"] is None
