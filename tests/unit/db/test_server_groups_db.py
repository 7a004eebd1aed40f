"""Migration 0011 (server groups, aggregates) on a compute database of the
release before (revision 0009) that holds a server and a compute, and the
group placement under the group's row lock (``instance_group_place``) with
placements racing, on SQLite and PostgreSQL."""
import collections
import concurrent.futures
import threading

import pytest
import sqlalchemy as sa

import volattach  # noqa: F401
from volattach import context
from volattach.db import api as db_api
from volattach.db import migration
from volattach import exception
from volattach import objects
from tests import db_fixtures

objects.register_all()

SERVER = "b0000000-0000-4000-8000-000000000001"
SERVICE = "a0000000-0000-4000-8000-000000000001"
PARAMS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(params=PARAMS)
def database_at_0009(request, tmp_path):
    with db_fixtures.configured_compute_database(
            request.param, tmp_path, revision="0009") as url:
        db_fixtures.run_sql(url, (
            "INSERT INTO instances (id, uuid, project_id, user_id, host, "
            "vm_state, power_state, locked, launch_index, flavor, deleted, "
            "created_at) VALUES (1, :server, 'demo', 'alice', 'compute1', "
            "'active', 1, :f, 0, '{\"flavorid\": \"1\"}', 0, "
            "'2026-11-25 10:00:00')", {"server": SERVER, "f": False}), (
            "INSERT INTO services (id, uuid, host, \"binary\", topic, "
            "report_count, disabled, forced_down, version) VALUES "
            "(1, :uuid, 'compute1', 'volattach-compute', 'compute', 3, :f, "
            ":f, 12)", {"uuid": SERVICE, "f": False}))
        yield url


@pytest.fixture(params=PARAMS)
def database(request, tmp_path):
    with db_fixtures.configured_compute_database(request.param,
                                                 tmp_path) as url:
        yield url


def _rows(url, table):
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return [dict(r) for r in conn.execute(sa.text(
                "SELECT * FROM %s ORDER BY 1" % table)).mappings()]
    finally:
        engine.dispose()


def test_upgrade_keeps_servers_and_services_and_groups_work(database_at_0009):
    url = database_at_0009
    servers, services = _rows(url, "instances"), _rows(url, "services")

    migration.db_sync(url, revision="0011")

    assert migration.db_version(url) == "0011"
    # (0010 on the way adds the sizes it fills from each flavor)
    assert [{k: v for k, v in r.items() if k not in ("vcpus", "memory_mb")}
            for r in _rows(url, "instances")] == servers
    assert _rows(url, "services") == services
    for table in ("instance_groups", "instance_group_members", "aggregates",
                  "aggregate_hosts", "aggregate_metadata"):
        assert _rows(url, table) == []
    # the server already there joins a group; its delete drops the member
    ctxt = context.get_admin_context()
    group = objects.InstanceGroup(ctxt, name="g", policy="anti-affinity",
                                  rules={"max_server_per_host": 2},
                                  project_id="demo", user_id="alice")
    group.create()
    group.add_members([SERVER])
    fresh = objects.InstanceGroup.get_by_instance_uuid(ctxt, SERVER)
    assert (fresh.uuid, fresh.members, fresh.max_server_per_host) == (
        group.uuid, [SERVER], 2)
    objects.Instance.get_by_uuid(ctxt, SERVER).destroy()
    assert objects.InstanceGroup.get_by_uuid(ctxt, group.uuid).members == []
    assert _rows(url, "instance_group_members") == []
    # the compute joins a zoned aggregate
    agg = db_api.aggregate_create("rack1", {"availability_zone": "az1"})
    db_api.aggregate_host_add(agg["id"], "compute1")
    assert db_api.aggregate_host_zones(["compute1", "compute2"]) == {
        "compute1": "az1"}
    group.destroy()
    with pytest.raises(exception.InstanceGroupNotFound):
        objects.InstanceGroup.get_by_uuid(ctxt, group.uuid)


def _scheduling_server(n):
    return db_fixtures.instance_row(
        uuid="b0000000-0000-4000-8000-%012d" % n, task_state="scheduling",
        vm_state="building", host=None)


def test_racing_placements_never_break_anti_affinity(database):
    """Eight placements of one anti-affinity group at once on three hosts:
    each sees the ones before it (the lock), so three are placed, one per
    host, and five find no host."""
    ctxt = context.get_admin_context()
    group = objects.InstanceGroup(ctxt, name="g", policy="anti-affinity",
                                  project_id="demo", user_id="alice")
    group.create()
    servers = [_scheduling_server(n) for n in range(8)]
    group.add_members(servers)
    start = threading.Barrier(8)

    def choose(group_row, member_hosts):
        taken = set(member_hosts.values())
        free = [h for h in ("h1", "h2", "h3") if h not in taken]
        if not free:
            raise exception.NoValidHost(reason="none")
        return {current.uuid: free[0]}

    current = threading.local()

    def place(uuid):
        current.uuid = uuid
        start.wait()
        try:
            return db_api.instance_group_place(group.uuid, choose)[uuid]
        except exception.NoValidHost:
            return None

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        placed = list(pool.map(place, servers))
    assert sorted(h for h in placed if h) == ["h1", "h2", "h3"], placed
    hosts = collections.Counter(
        objects.Instance.get_by_uuid(ctxt, u).host for u in servers)
    assert hosts == {"h1": 1, "h2": 1, "h3": 1, None: 5}
