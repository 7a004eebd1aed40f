"""Migration 0010 (tags, quotas, the quota lock, instances.vcpus and
memory_mb) on a compute database of the release before (revision 0009)
holding a server with metadata and a lock reason: the server keeps every
column, gets its flavor's vcpus and memory_mb, the new tables are empty,
and after the upgrade the server takes tags, counts in its project's
usage and its delete drops its tags; on SQLite and PostgreSQL."""
import pytest
import sqlalchemy as sa

import volattach  # noqa: F401
from volattach import context
from volattach.db import api as db_api
from volattach.db import migration
from volattach import objects
from tests import db_fixtures

objects.register_all()

SERVER = "b0000000-0000-4000-8000-000000000010"
FLAVOR = ('{"flavorid": "3", "name": "m1.medium", "vcpus": 2, '
          '"memory_mb": 4096, "root_gb": 40}')


@pytest.fixture(params=["sqlite", pytest.param("postgresql",
                                               marks=pytest.mark.postgres)])
def database_at_0009(request, tmp_path):
    with db_fixtures.configured_compute_database(
            request.param, tmp_path, revision="0009") as url:
        db_fixtures.run_sql(url, (
            "INSERT INTO instances (id, uuid, project_id, user_id, host, "
            "vm_state, power_state, locked, locked_by, locked_reason, "
            "launch_index, flavor, metadata, deleted, created_at) VALUES "
            "(1, :server, 'demo', 'alice', 'compute1', 'active', 1, :t, "
            "'owner', 'frozen', 0, :flavor, '{\"k\": \"v\"}', 0, "
            "'2026-11-27 10:00:00')",
            {"server": SERVER, "t": True, "flavor": FLAVOR}))
        yield url


def _rows(url, table):
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return [dict(r) for r in conn.execute(sa.text(
                "SELECT * FROM %s ORDER BY 1" % table)).mappings()]
    finally:
        engine.dispose()


def test_upgrade_keeps_the_server_and_sizes_it(database_at_0009):
    url = database_at_0009
    before = _rows(url, "instances")
    assert not sa.inspect(sa.create_engine(url)).has_table("instance_tags")

    migration.db_sync(url, "0010")
    assert migration.db_version(url) == "0010"
    migration.db_sync(url)          # and on to the newest schema
    after = _rows(url, "instances")
    assert [{k: v for k, v in r.items() if k not in ("vcpus", "memory_mb")}
            for r in after] == before
    assert (after[0]["vcpus"], after[0]["memory_mb"]) == (2, 4096)
    for table in ("instance_tags", "quotas", "quota_classes",
                  "quota_project_locks"):
        assert _rows(url, table) == []

    ctxt = context.get_admin_context()
    instance = objects.Instance.get_by_uuid(ctxt, SERVER)
    assert (instance.metadata, instance.locked_reason) == ({"k": "v"},
                                                           "frozen")
    assert db_api.quota_usages("demo") == {
        "instances": 1, "cores": 2, "ram": 4096, "key_pairs": 0}
    assert db_api.tag_add(SERVER, "kept", 50) is True
    assert db_api.tags_by_instances([SERVER]) == {SERVER: ["kept"]}
    instance.destroy()
    assert _rows(url, "instance_tags") == []
    assert db_api.quota_usages("demo")["instances"] == 0
