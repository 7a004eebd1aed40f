"""Migration records of live migrations: GET /os-migrations and
GET /servers/{id}/migrations[/{id}], in one process with two computes.

Real live migrations (the fake driver's injected failures for the failed
ones) write the records; tempest's own MigrationsClient and ServersClient
read them, so every response they get is checked against tempest's response
schema of the microversion in use (2.1, 2.23, 2.59, 2.80).  Paginated
answers (``migrations_links``, which tempest's schemas do not know) and
error answers go through the plain HTTP client.  A migration is held in
progress by holding its server's compute lock (its destination's
pre_live_migration waits on it), as tests/functional/test_races.py does.
"""
import contextlib
import urllib.parse
import uuid

import pytest
from tempest.lib import exceptions as lib_exc
from tempest.lib.services.compute import migrations_client

from tests.functional.test_attach_detach import _new_server, _new_volume
from tests.functional.test_live_migration import (_attach, _instance, _migrate,
                                                  _other, _wait_done, failing)
from tests.integration import client as clients
from tests.tempest_style import clients as tempest_clients

ADMIN = tempest_clients.ADMIN_TOKEN


def _tempest_migrations(deployment, token=ADMIN):
    return migrations_client.MigrationsClient(
        tempest_clients.NoAuthProvider(deployment.api_url + "/v2.1", token),
        "compute", "RegionOne")


def _list(deployment, version, **params):
    """tempest's list_migrations at ``version`` (schema-checked)."""
    with tempest_clients.microversion(version):
        return _tempest_migrations(deployment).list_migrations(
            **params)["migrations"]


def _in_progress(deployment, server_id, version):
    """tempest's list_in_progress_live_migration (schema-checked)."""
    client = tempest_clients.servers_client(deployment.api_url, ADMIN)
    with tempest_clients.microversion(version):
        return client.list_in_progress_live_migration(server_id)["migrations"]


@pytest.fixture
def server(api, volumes, deployment):
    server_id = _new_server(api, name="mig")
    _attach(api, volumes, server_id, _new_volume(volumes))
    return server_id


def _live_migrate(admin_api, server_id, dest=None):
    status, body = _migrate(admin_api, server_id, dest)
    assert status == 202, body
    _wait_done(admin_api, server_id)


def _get(client, path, version, params=None):
    return client.request("GET", path, params=params, microversion=version)


def test_a_live_migration_is_recorded_completed(server, admin_api, deployment):
    instance = _instance(server)
    source, dest = instance.host, _other(instance.host)
    _live_migrate(admin_api, server, dest)
    assert _instance(server).host == dest

    [mig] = _list(deployment, None, instance_uuid=server)       # 2.1
    assert mig["status"] == "completed"
    assert (mig["source_compute"], mig["source_node"]) == (source, source)
    assert (mig["dest_compute"], mig["dest_node"]) == (dest, dest)
    assert mig["instance_uuid"] == server
    assert mig["old_instance_type_id"] == mig["new_instance_type_id"] \
        == instance.flavor.id
    assert mig["created_at"] and mig["updated_at"]
    assert "migration_type" not in mig and "uuid" not in mig

    [mig23] = _list(deployment, "2.23", instance_uuid=server)
    assert mig23["migration_type"] == "live-migration"
    assert "links" not in mig23          # only for a migration in progress
    assert mig23["id"] == mig["id"]

    [mig59] = _list(deployment, "2.59", instance_uuid=server)
    uuid.UUID(mig59["uuid"])
    assert "user_id" not in mig59

    [mig80] = _list(deployment, "2.80", instance_uuid=server)
    assert (mig80["user_id"], mig80["project_id"]) == ("admin", "admin")
    assert mig80["uuid"] == mig59["uuid"]
    # the server's own list holds only migrations in progress
    assert _in_progress(deployment, server, "2.80") == []


@pytest.mark.parametrize("operation, status", [
    ("connect", "error"), ("pre_live_migration", "error"),
    ("live_migration", "failed"), ("post_live_migration", "failed")])
def test_a_failed_live_migration_is_recorded(server, admin_api, deployment,
                                             operation, status):
    source = _instance(server).host
    dest = _other(source)
    with failing(operation):
        _live_migrate(admin_api, server, dest)
    assert _instance(server).host == source
    [mig] = _list(deployment, "2.80", instance_uuid=server)
    assert mig["status"] == status
    assert (mig["source_compute"], mig["dest_compute"]) == (source, dest)
    assert mig["migration_type"] == "live-migration"


def test_a_refused_destination_is_recorded_as_error(server, admin_api,
                                                    deployment):
    """The conductor refuses the destination after the API's checks (its
    compute is not at the version live migration needs): Nova's record
    names the requested host and ends in error."""
    from volattach.conf import CONF
    source = _instance(server).host
    CONF.set_override("compute", "1.2", group="upgrade_levels")
    try:
        _live_migrate(admin_api, server, _other(source))
    finally:
        CONF.clear_override("compute", group="upgrade_levels")
    [mig] = _list(deployment, "2.59", instance_uuid=server)
    assert (mig["status"], mig["dest_compute"]) == ("error", _other(source))
    assert _instance(server).host == source


def test_filters(api, volumes, admin_api, deployment):
    moved, failed = (_new_server(api, name="f1"), _new_server(api, name="f2"))
    moved_from = _instance(moved).host
    failed_from = _instance(failed).host
    _live_migrate(admin_api, moved, _other(moved_from))
    with failing("live_migration"):
        _live_migrate(admin_api, failed, _other(failed_from))
    mine = {moved, failed}

    def servers(version=None, **params):
        return sorted(m["instance_uuid"] for m in _list(deployment, version,
                                                        **params)
                      if m["instance_uuid"] in mine)

    assert servers(instance_uuid=moved) == [moved]
    assert servers(status="completed") == [moved]
    assert servers(status="failed") == [failed]
    assert servers(status="running") == []
    assert servers("2.23", migration_type="live-migration") == sorted(mine)
    assert servers("2.23", migration_type="resize") == []
    # host: the source or the destination
    for host in ("compute1", "compute2"):
        assert servers(host=host) == sorted(mine)
    assert servers(host="nosuchhost") == []
    assert servers(source_compute=moved_from, instance_uuid=moved) == [moved]
    assert servers(source_compute=_other(moved_from),
                   instance_uuid=moved) == []
    # host wins over source_compute, as in Nova
    assert servers(host=_other(moved_from), source_compute="nosuchhost",
                   instance_uuid=moved) == [moved]
    assert servers("2.80", user_id="admin", instance_uuid=moved) == [moved]
    assert servers("2.80", project_id="nobody") == []
    # unknown parameters: ignored below 2.59, refused from then on
    assert servers(instance_uuid=failed, sort_key="id") == [failed]
    status, body, _ = _get(admin_api, "/os-migrations", "2.59",
                           {"sort_key": "id"})
    assert status == 400, body
    # user_id is a filter from 2.80 only
    status, body, _ = _get(admin_api, "/os-migrations", "2.79",
                           {"user_id": "admin"})
    assert status == 400, body


def test_pages_newest_first_by_limit_and_marker(server, admin_api,
                                                deployment):
    for _ in range(3):
        _live_migrate(admin_api, server)
    every = _list(deployment, "2.59", instance_uuid=server)
    assert len(every) == 3
    assert [m["id"] for m in every] == sorted((m["id"] for m in every),
                                              reverse=True)
    assert [m["status"] for m in every] == ["completed"] * 3

    params = {"instance_uuid": server, "limit": 2}
    status, body, _ = _get(admin_api, "/os-migrations", "2.59", params)
    assert status == 200, body
    assert [m["uuid"] for m in body["migrations"]] == [
        m["uuid"] for m in every[:2]]
    [link] = body["migrations_links"]
    assert link["rel"] == "next"
    url = urllib.parse.urlsplit(link["href"])
    assert url.path.endswith("/v2.1/os-migrations")
    query = urllib.parse.parse_qs(url.query)
    assert query["marker"] == [every[1]["uuid"]]
    assert query["instance_uuid"] == [server] and query["limit"] == ["2"]

    status, body, _ = _get(admin_api, "/os-migrations", "2.59",
                           dict(params, marker=every[1]["uuid"]))
    assert status == 200, body
    assert [m["uuid"] for m in body["migrations"]] == [every[2]["uuid"]]
    assert "migrations_links" not in body
    # below 2.59 there is no paging: limit is not a parameter there
    status, body, _ = _get(admin_api, "/os-migrations", "2.58", params)
    assert status == 200 and len(body["migrations"]) == 3, body
    assert "migrations_links" not in body

    status, body, _ = _get(admin_api, "/os-migrations", "2.59",
                           dict(params, marker=str(uuid.uuid4())))
    assert status == 400, body
    assert "could not be found" in body["badRequest"]["message"]
    status, body, _ = _get(admin_api, "/os-migrations", "2.59",
                           dict(params, limit="-1"))
    assert status == 400, body


def test_changes_since_and_before(server, admin_api, deployment):
    _live_migrate(admin_api, server)
    [mig] = _list(deployment, "2.66", instance_uuid=server)
    updated = mig["updated_at"]

    def count(version, **params):
        return len(_list(deployment, version, instance_uuid=server, **params))

    assert count("2.59", **{"changes-since": updated}) == 1
    assert count("2.59", **{"changes-since": "2999-01-01T00:00:00Z"}) == 0
    assert count("2.66", **{"changes-before": updated}) == 1
    assert count("2.66", **{"changes-before": "2000-01-01T00:00:00Z"}) == 0
    # below 2.59 changes-since is ignored, as Nova ignores it
    assert count("2.58", **{"changes-since": "2999-01-01T00:00:00Z"}) == 1
    status, body, _ = _get(admin_api, "/os-migrations", "2.59",
                           {"changes-before": updated})
    assert status == 400, body
    status, body, _ = _get(admin_api, "/os-migrations", "2.66",
                           {"changes-since": "2999-01-01T00:00:00Z",
                            "changes-before": "2000-01-01T00:00:00Z"})
    assert status == 400, body


def test_only_admins_read_migrations(server, api, admin_api, deployment):
    for version in ("2.1", "2.80"):
        status, body, _ = _get(api, "/os-migrations", version)
        assert status == 403, body
    with pytest.raises(lib_exc.Forbidden):
        _tempest_migrations(deployment, "alice:demo").list_migrations()
    for path in ("/servers/%s/migrations" % server,
                 "/servers/%s/migrations/1" % server):
        status, body, _ = _get(api, path, "2.23")
        assert status == 403, body


@contextlib.contextmanager
def _held_in_progress(admin_api, server_id):
    """A live migration of ``server_id`` waiting at its destination's
    pre_live_migration (the server's compute lock is held) for the block."""
    from volattach.compute import locks
    with locks.lock(server_id):
        status, body = _migrate(admin_api, server_id)
        assert status == 202, body
        yield clients._wait(
            lambda: _in_progress_plain(admin_api, server_id),
            lambda found: len(found) == 1, "a migration in progress",
            timeout=30, interval=0.1)[0]
    _wait_done(admin_api, server_id)


def _in_progress_plain(admin_api, server_id):
    status, body, _ = _get(admin_api, "/servers/%s/migrations" % server_id,
                           "2.23")
    assert status == 200, body
    return body["migrations"]


def test_server_migrations_list_and_show_a_migration_in_progress(
        server, admin_api, deployment):
    source = _instance(server).host
    with _held_in_progress(admin_api, server) as held:
        assert held["status"] == "preparing"
        assert (held["source_compute"], held["dest_compute"]) == (
            source, _other(source))
        assert held["server_uuid"] == server
        assert "uuid" not in held
        # tempest's schemas, with uuid at 2.59 and user/project at 2.80
        [listed] = _in_progress(deployment, server, "2.23")
        assert listed["id"] == held["id"]
        # (tempest's ServersClient checks 2.59 .. 2.61 with its 2.58 schema,
        # which has no uuid: its first version with uuid is 2.62's)
        [listed] = _in_progress(deployment, server, "2.62")
        uuid.UUID(listed["uuid"])
        [listed] = _in_progress(deployment, server, "2.80")
        assert (listed["user_id"], listed["project_id"]) == ("admin", "admin")
        for version, extra in (("2.23", set()), ("2.59", {"uuid"}),
                               ("2.80", {"uuid", "user_id", "project_id"})):
            status, body, _ = _get(
                admin_api, "/servers/%s/migrations/%s" % (server, held["id"]),
                version)
            assert status == 200, body
            assert body["migration"]["id"] == held["id"]
            assert set(body["migration"]) == set(held) | extra
        # os-migrations links a live migration in progress from 2.23
        [mig] = _list(deployment, "2.23", instance_uuid=server)
        assert mig["status"] == "preparing"
        hrefs = {link["rel"]: link["href"] for link in mig["links"]}
        assert hrefs["self"].endswith(
            "/v2.1/servers/%s/migrations/%s" % (server, held["id"]))
        assert hrefs["bookmark"].endswith(
            "/servers/%s/migrations/%s" % (server, held["id"]))
        assert "/v2.1/" not in hrefs["bookmark"]
        [mig] = _list(deployment, None, instance_uuid=server)
        assert "links" not in mig
    # done: nothing in progress, and the finished one is not shown
    assert _in_progress(deployment, server, "2.80") == []
    status, body, _ = _get(
        admin_api, "/servers/%s/migrations/%s" % (server, held["id"]), "2.23")
    assert status == 404, body
    assert body["itemNotFound"]["message"] == (
        "Live migration %s for server %s is not in progress."
        % (held["id"], server))
    [mig] = _list(deployment, "2.23", instance_uuid=server)
    assert mig["status"] == "completed" and "links" not in mig


def test_server_migrations_not_found(server, admin_api, deployment):
    # below 2.23 the route does not exist
    for path in ("/servers/%s/migrations" % server,
                 "/servers/%s/migrations/1" % server):
        status, body, _ = _get(admin_api, path, "2.22")
        assert status == 404, body
    unknown = str(uuid.uuid4())
    for path in ("/servers/%s/migrations" % unknown,
                 "/servers/%s/migrations/1" % unknown):
        status, body, _ = _get(admin_api, path, "2.23")
        assert status == 404, body
        assert unknown in body["itemNotFound"]["message"]
    for migration_id in ("123456", "nope"):
        status, body, _ = _get(
            admin_api, "/servers/%s/migrations/%s" % (server, migration_id),
            "2.23")
        assert status == 404, body
        assert body["itemNotFound"]["message"] == (
            "In-progress live migration %s is not found for server %s."
            % (migration_id, server))
    # another server's migration is not this server's
    other = _new_server(clients.ComputeClient(deployment.api_url,
                                              "alice:demo"), name="other")
    _live_migrate(admin_api, other)
    [mig] = _list(deployment, "2.23", instance_uuid=other)
    status, body, _ = _get(
        admin_api, "/servers/%s/migrations/%s" % (server, mig["id"]), "2.23")
    assert status == 404, body
    assert "is not found for server %s" % server in \
        body["itemNotFound"]["message"]
    # unknown query parameters are refused from 2.102
    path = "/servers/%s/migrations" % server
    assert _get(admin_api, path, "2.101", {"x": "1"})[0] == 200
    assert _get(admin_api, path, "2.102", {"x": "1"})[0] == 400
