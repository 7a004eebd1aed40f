"""The gunicorn daemons keep an idle client connection open for
``[wsgi] keepalive_timeout`` (60 s by default), not gunicorn's 2 s: with 2 s,
a client sending on a connection at the instant the server closes it gets
no answer ("Remote end closed connection without response", seen by the
interleaving tier on the daemons), and a POST cannot be retried."""
import http.client
import select
import time
import urllib.parse

import pytest

pytestmark = pytest.mark.integration

# Past gunicorn's own 2 s and the second its keep-alive sweep may lag.
IDLE = 4


def _connection(url):
    parts = urllib.parse.urlsplit(url)
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)


def _get_root(conn):
    conn.request("GET", "/")
    response = conn.getresponse()
    response.read()
    return response.status


@pytest.mark.parametrize("service", ["api_url", "volume_url"])
def test_an_idle_connection_outlives_gunicorns_default(deployment, service):
    conn = _connection(getattr(deployment, service))
    try:
        assert _get_root(conn) in (200, 300)
        sock = conn.sock
        time.sleep(IDLE)
        # A server-side close would make the socket readable (EOF).
        readable, _, _ = select.select([sock], [], [], 0)
        assert readable == [], "the daemon closed an idle connection"
        assert _get_root(conn) in (200, 300)
        assert conn.sock is sock            # the same connection, reused
    finally:
        conn.close()
