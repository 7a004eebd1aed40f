"""os-migrations and /servers/{id}/migrations over the real WSGI stack and a
fake facade: tempest's response schemas at every microversion tempest
knows, the fields and links each version adds, the filters, paging and
errors the handler passes on, the admin-only policy."""
import datetime
import uuid

import pytest
from tempest.lib.services.compute import migrations_client
from tempest.lib.services.compute import servers_client

from volattach import exception
from volattach import objects
from volattach.api import microversions
from tests.unit.api import fakes
from tests.unit.api.conftest import ADMIN
from tests.unit.api.conftest import USER
from tests.unit.api.test_tempest_schemas import check
from tests.unit.api.test_tempest_schemas import tempest_schema

VERSIONS = [v for v, _note in microversions.VERSIONS
            if microversions.Version.parse(v) <= "2.100"]
SERVER_VERSIONS = [v for v in VERSIONS
                   if microversions.Version.parse(v) >= "2.23"]
T0 = datetime.datetime(2026, 8, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)


def make_migration(instance, id, status, migration_type="live-migration",
                   **kw):
    values = dict(
        id=id, uuid=str(uuid.uuid4()), instance_uuid=instance.uuid,
        source_compute="compute1", dest_compute="compute2",
        source_node="compute1", dest_node="compute2", dest_host=None,
        old_instance_type_id=1, new_instance_type_id=1, status=status,
        migration_type=migration_type, hidden=False, user_id="root",
        project_id="admin-project", deleted=False,
        created_at=T0 + datetime.timedelta(minutes=id),
        updated_at=T0 + datetime.timedelta(minutes=id, seconds=30))
    values.update(kw)
    return objects.Migration(**values)


class MigrationsFacade(fakes.FakeFacade):
    """The fake facade with the migration records of MigrationsAPI."""

    def __init__(self):
        super().__init__()
        self.migrations = []

    def get_migrations(self, ctx, filters, limit=None, marker=None):
        self._record("get_migrations", ctx, filters, limit=limit,
                     marker=marker)
        found = sorted(self.migrations, key=lambda m: m.id, reverse=True)
        if marker is not None:
            uuids = [m.uuid for m in found]
            if marker not in uuids:
                raise exception.MarkerNotFound(marker=marker)
            found = found[uuids.index(marker) + 1:]
        return found[:limit] if limit is not None else found

    def get_migrations_in_progress_by_instance(self, ctx, instance_uuid,
                                               migration_type="live-migration"):
        self._record("get_migrations_in_progress_by_instance", ctx,
                     instance_uuid, migration_type)
        return [m for m in self.migrations
                if m.instance_uuid == instance_uuid and m.in_progress
                and m.migration_type == migration_type]

    def get_migration_by_id_and_instance(self, ctx, migration_id,
                                         instance_uuid):
        self._record("get_migration_by_id_and_instance", ctx, migration_id,
                     instance_uuid)
        for m in self.migrations:
            if str(m.id) == str(migration_id) \
                    and m.instance_uuid == instance_uuid:
                return m
        raise exception.MigrationNotFoundForInstance(
            migration_id=migration_id, instance_id=instance_uuid)


@pytest.fixture
def facade():
    return MigrationsFacade()


@pytest.fixture
def server(facade):
    instance = facade.add_instance()
    facade.migrations += [
        make_migration(instance, 1, "completed"),
        make_migration(instance, 2, "error", dest_compute=None,
                       dest_node=None, updated_at=None),
        make_migration(instance, 3, "running"),
        make_migration(instance, 4, "running", migration_type="resize"),
        make_migration(instance, 5, "completed", hidden=True),
    ]
    return instance


@pytest.mark.parametrize("version", VERSIONS)
def test_os_migrations_at_every_version(api, server, version):
    schema = tempest_schema(migrations_client.MigrationsClient, version)
    mv = microversions.Version.parse(version)
    result = api.get("/v2.1/os-migrations", version=version, token=ADMIN)
    check(schema.list_migrations, result)
    body = result.json
    assert set(body) == {"migrations"}
    shown = {m["id"]: m for m in body["migrations"]}
    assert list(shown) == [4, 3, 2, 1]          # newest first, no hidden one
    assert shown[2]["dest_compute"] is None and shown[2]["updated_at"] is None
    assert shown[1]["created_at"] == "2026-08-01T12:01:00.000000"
    assert ("migration_type" in shown[1]) == (mv >= "2.23")
    assert ("uuid" in shown[1]) == (mv >= "2.59")
    assert ("user_id" in shown[1] and "project_id" in shown[1]) == (
        mv >= "2.80")
    # links: a live migration in progress only, from 2.23
    assert [i for i, m in shown.items() if "links" in m] == (
        [3] if mv >= "2.23" else [])
    if mv >= "2.23":
        hrefs = {link["rel"]: link["href"] for link in shown[3]["links"]}
        assert hrefs["self"].endswith(
            "/v2.1/servers/%s/migrations/3" % server.uuid)
        assert hrefs["bookmark"].endswith(
            "/servers/%s/migrations/3" % server.uuid)
        assert "/v2.1/" not in hrefs["bookmark"]


def test_filters_reach_the_facade(api, facade, server):
    api.get("/v2.1/os-migrations", token=ADMIN, params=(
        "host=h1&status=a&status=running&instance_uuid=i&source_compute=s"
        "&migration_type=live-migration&hidden=0&limit=1&changes-since=x"
        "&user_id=u"))
    (_ctx, filters), kwargs = facade.last_call("get_migrations")
    # below 2.59: the last value of each filter; no paging, nothing else
    assert filters == {"host": "h1", "status": "running", "instance_uuid": "i",
                       "source_compute": "s",
                       "migration_type": "live-migration", "hidden": False}
    assert kwargs == {"limit": None, "marker": None}

    result = api.get("/v2.1/os-migrations", version="2.80", token=ADMIN,
                     params="changes-since=2026-08-01T12:00:00Z"
                            "&changes-before=2026-08-02T00:00:00Z"
                            "&user_id=u&project_id=p&limit=2")
    assert result.status_code == 200, result.text
    (_ctx, filters), kwargs = facade.last_call("get_migrations")
    assert filters == {"user_id": "u", "project_id": "p",
                       "changes-since": T0,
                       "changes-before": T0 + datetime.timedelta(hours=12)}
    assert kwargs == {"limit": 2, "marker": None}


def test_a_full_page_links_the_next_one_by_uuid(api, facade, server):
    # the newest page holds the hidden migration, which is not shown: the
    # page is not full, so there is no next link (Nova's rule)
    result = api.get("/v2.1/os-migrations", version="2.59", token=ADMIN,
                     params="limit=2")
    assert result.status_code == 200, result.text
    assert [m["id"] for m in result.json["migrations"]] == [4]
    assert "migrations_links" not in result.json
    marker = facade.migrations[3].uuid           # migration 4
    result = api.get("/v2.1/os-migrations", version="2.59", token=ADMIN,
                     params="limit=2&marker=%s" % marker)
    page = result.json["migrations"]
    assert [m["id"] for m in page] == [3, 2]
    [link] = result.json["migrations_links"]
    assert link["rel"] == "next"
    assert "marker=%s" % page[-1]["uuid"] in link["href"]
    assert "limit=2" in link["href"]
    assert link["href"].split("?")[0].endswith("/v2.1/os-migrations")
    _args, kwargs = facade.last_call("get_migrations")
    assert kwargs == {"limit": 2, "marker": marker}
    # a limit above [api] max_limit is capped
    api.get("/v2.1/os-migrations", version="2.59", token=ADMIN,
            params="limit=100000")
    _args, kwargs = facade.last_call("get_migrations")
    assert kwargs["limit"] == 1000


@pytest.mark.parametrize("params, version", [
    ("marker=%s" % uuid.UUID(int=1), "2.59"),     # unknown marker
    ("limit=-1", "2.59"), ("limit=x", "2.59"),
    ("sort_key=id", "2.59"),                        # unknown parameter
    ("changes-before=2026-08-01T00:00:00Z", "2.65"),
    ("changes-since=yesterday", "2.59"),
    ("changes-since=2026-08-02T00:00:00Z&changes-before=2026-08-01T00:00:00Z",
     "2.66"),
    ("user_id=u", "2.79"), ("limit=1&limit=2", "2.59"),
])
def test_bad_queries_are_400(api, server, params, version):
    result = api.get("/v2.1/os-migrations", version=version, token=ADMIN,
                     params=params)
    assert result.status_code == 400, result.text
    assert result.json["badRequest"]["message"]


def test_unknown_queries_are_ignored_below_2_59(api, server):
    result = api.get("/v2.1/os-migrations", version="2.58", token=ADMIN,
                     params="sort_key=id&marker=nope&limit=-1")
    assert result.status_code == 200, result.text


@pytest.mark.parametrize("version", ["2.1", "2.59", "2.80"])
def test_only_admins_list_migrations(api, facade, server, version):
    result = api.get("/v2.1/os-migrations", version=version, token=USER)
    assert result.status_code == 403, result.text
    assert not facade.called("get_migrations")


@pytest.mark.parametrize("version", SERVER_VERSIONS)
def test_server_migrations_at_every_version(api, server, version):
    mv = microversions.Version.parse(version)
    url = "/v2.1/servers/%s/migrations" % server.uuid
    result = api.get(url, version=version, token=ADMIN)
    if not mv.matches("2.59", "2.61"):
        # tempest checks 2.59 .. 2.61 with its 2.58 schema (no uuid)
        schema = tempest_schema(servers_client.ServersClient, version)
        check(schema.list_live_migrations, result)
    [shown] = result.json["migrations"]     # the running live migration
    expected = {"created_at", "dest_compute", "dest_host", "dest_node",
                "disk_processed_bytes", "disk_remaining_bytes",
                "disk_total_bytes", "id", "memory_processed_bytes",
                "memory_remaining_bytes", "memory_total_bytes", "server_uuid",
                "source_compute", "source_node", "status", "updated_at"}
    if mv >= "2.59":
        expected.add("uuid")
    if mv >= "2.80":
        expected |= {"user_id", "project_id"}
    assert set(shown) == expected
    assert (shown["id"], shown["server_uuid"], shown["status"]) == (
        3, server.uuid, "running")
    result = api.get(url + "/3", version=version, token=ADMIN)
    assert result.status_code == 200, result.text
    assert result.json == {"migration": shown}


@pytest.mark.parametrize("migration_id, message", [
    ("1", "Live migration 1 for server %s is not in progress."),
    ("4", "Migration 4 for server %s is not live-migration."),
    ("99", "In-progress live migration 99 is not found for server %s."),
])
def test_show_of_anything_but_a_live_migration_in_progress_is_404(
        api, server, migration_id, message):
    result = api.get("/v2.1/servers/%s/migrations/%s"
                     % (server.uuid, migration_id), version="2.23",
                     token=ADMIN)
    assert result.status_code == 404, result.text
    assert result.json["itemNotFound"]["message"] == message % server.uuid


def test_server_migrations_below_2_23_unknown_server_and_policy(
        api, facade, server):
    url = "/v2.1/servers/%s/migrations" % server.uuid
    for path in (url, url + "/3"):
        result = api.get(path, version="2.22", token=ADMIN)
        assert result.status_code == 404, result.text
        assert result.json["itemNotFound"]["message"] == \
            "The resource could not be found."
        assert api.get(path, version="2.23", token=USER).status_code == 403
        missing = path.replace(server.uuid, str(uuid.uuid4()))
        assert api.get(missing, version="2.23",
                       token=ADMIN).status_code == 404
    assert not facade.called("get_migrations_in_progress_by_instance")
    assert not facade.called("get_migration_by_id_and_instance")
    # unknown query parameters: ignored until 2.102
    assert api.get(url, version="2.101", token=ADMIN,
                   params="x=1").status_code == 200
    assert api.get(url, version="2.102", token=ADMIN,
                   params="x=1").status_code == 400
    assert api.get(url + "/3", version="2.102", token=ADMIN,
                   params="x=1").status_code == 400
