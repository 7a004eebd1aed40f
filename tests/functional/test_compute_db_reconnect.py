"""The compute API on PostgreSQL never answers 500 for a database restart.

When every backend of its database was terminated (pg_terminate_backend,
what a restart does to the pools) between two requests, the API's reads,
the conductor's workflow writes and the services' heartbeats get a new
connection or run again on one: correct answers.  While the database is
down (a TCP proxy in front of PostgreSQL is stopped) a request waits a
bounded time and answers 503 serviceUnavailable; when it comes back within
that time, the request succeeds.
"""
import threading
import time

import pytest

import sqlalchemy as sa

from tests import db_fixtures
from tests import utils

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def compute_pg(request):
    """The fresh database's direct URL and the proxy the deployment uses."""
    base = utils.require_env(utils.PG_URL_ENV, "a PostgreSQL database test")
    with db_fixtures.fresh_postgres_database(base) as url:
        target = sa.make_url(url)
        proxy = db_fixtures.TcpProxy(target.host, target.port or 5432).start()
        request.module.CONF_OVERRIDES = {("database", "connection"): proxy.url_for(url)}
        try:
            yield url, proxy
        finally:
            proxy.stop()


@pytest.fixture(scope="module")
def compute_pg_url(compute_pg):
    return compute_pg[0]


@pytest.fixture(scope="module")
def proxy(compute_pg):
    return compute_pg[1]


@pytest.fixture(scope="module")
def deployment(compute_pg, deployment):
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


def _new_server(api, name):
    status, body, _ = api.create_server(name=name, microversion="2.37")
    assert status == 202, body
    api.wait_for_server_status(body["server"]["id"], "ACTIVE")
    return body["server"]["id"]


def test_database_down_is_503_then_back(api, proxy):
    server_id = _new_server(api, "down")
    proxy.stop()
    try:
        started = time.monotonic()
        status, body, _ = api.show_server(server_id)
        waited = time.monotonic() - started
    finally:
        proxy.start()
    assert status == 503, body
    assert body["serviceUnavailable"]["code"] == 503
    assert "127.0.0.1" not in body["serviceUnavailable"]["message"]
    from volattach.db.core import engine as core_engine
    assert waited >= core_engine.CONNECT_RETRY_SECONDS * 0.9
    status, body, _ = api.show_server(server_id)
    assert status == 200 and body["server"]["id"] == server_id

    # back within the retry window: the request waits and succeeds
    proxy.stop()
    timer = threading.Timer(1.0, proxy.start)
    timer.start()
    try:
        status, body, _ = api.show_server(server_id)
    finally:
        timer.join()
    assert status == 200, body
    assert body["server"]["status"] == "ACTIVE"
    status, _, _ = api.delete_server(server_id)
    assert status == 204
    api.wait_for_server_deleted(server_id)
