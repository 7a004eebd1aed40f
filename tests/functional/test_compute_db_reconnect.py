"""The compute API on PostgreSQL answers correctly, never 500, when every
backend of its database was terminated (pg_terminate_backend, what a
database restart does to the pools) between two requests: the API's reads,
the conductor's workflow writes and the services' heartbeats get a new
connection or run again on one."""
import pytest

from tests import db_fixtures
from tests import utils

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def compute_pg_url(request):
    base = utils.require_env(utils.PG_URL_ENV, "a PostgreSQL database test")
    with db_fixtures.fresh_postgres_database(base) as url:
        request.module.CONF_OVERRIDES = {("database", "connection"): url}
        yield url


@pytest.fixture(scope="module")
def deployment(compute_pg_url, deployment):
    return deployment


def _kill(url):
    assert db_fixtures.terminate_backends(url) >= 1


def test_requests_after_terminated_backends(api, volumes, compute_pg_url):
    status, body, _ = api.create_server(name="pg", microversion="2.37")
    assert status == 202, body
    server_id = body["server"]["id"]
    api.wait_for_server_status(server_id, "ACTIVE")
    status, body, _ = volumes.create_volume(size=1)
    assert status == 202, body
    volume_id = body["volume"]["id"]
    volumes.wait_for_volume_status(volume_id, "available")

    _kill(compute_pg_url)
    status, body, _ = api.show_server(server_id)
    assert status == 200, body
    assert body["server"]["id"] == server_id and body["server"]["status"] == "ACTIVE"

    _kill(compute_pg_url)
    status, body, _ = api.attach_volume(server_id, volume_id)
    assert status == 200, body
    assert body["volumeAttachment"]["volumeId"] == volume_id
    volumes.wait_for_volume_status(volume_id, "in-use")

    _kill(compute_pg_url)
    status, body, _ = api.list_volume_attachments(server_id)
    assert status == 200, body
    assert [a["volumeId"] for a in body["volumeAttachments"]] == [volume_id]

    _kill(compute_pg_url)
    status, body, _ = api.list_servers()
    assert status == 200, body
    assert [s["id"] for s in body["servers"]] == [server_id]

    _kill(compute_pg_url)
    status, body, _ = api.detach_volume(server_id, volume_id)
    assert status == 202, body
    api.wait_for_volume_attachment_gone(server_id, volume_id)
    volumes.wait_for_volume_status(volume_id, "available")

    _kill(compute_pg_url)
    status, body, _ = api.delete_server(server_id)
    assert status == 204, body
    api.wait_for_server_deleted(server_id)
