"""volume_client.http_transport's connections send a request's head and body in
one send, and requests without a body as before."""
import http.client
import json

import pytest
from oslo_config import cfg
from urllib3 import exceptions as u3_exc

from volattach import conf as volattach_conf
from volattach import embedded_server
from volattach.volume_client import http_transport


def echo(environ, start_response):
    body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    out = json.dumps({"method": environ["REQUEST_METHOD"],
                      "path": environ["PATH_INFO"],
                      "length": environ.get("CONTENT_LENGTH"),
                      "body": body.decode()}).encode()
    start_response("200 OK", [("Content-Type", "application/json"),
                              ("Content-Length", str(len(out)))])
    return [out]


@pytest.fixture
def server():
    conf = cfg.ConfigOpts()
    conf.register_opts(volattach_conf.wsgi_opts, group="wsgi")
    conf([], default_config_files=[])
    srv = embedded_server.serve_in_thread(echo, "127.0.0.1", 0, conf=conf)
    yield srv
    srv.shutdown()


@pytest.fixture
def transport():
    conf = cfg.ConfigOpts()
    volattach_conf.register_opts(conf)
    conf([], default_config_files=[])
    return http_transport.Transport(conf.cinder)


@pytest.fixture
def sends(monkeypatch):
    """What each connection hands to its socket, one item per send."""
    sent = []
    original = http.client.HTTPConnection.send

    def send(self, data):
        sent.append(bytes(data))
        return original(self, data)
    monkeypatch.setattr(http.client.HTTPConnection, "send", send)
    return sent


@pytest.mark.parametrize("method", ["POST", "PUT"])
def test_head_and_body_go_out_in_one_send(server, transport, sends, method):
    body = json.dumps({"attachment": {"connector": {"host": "h"}}}).encode()
    response = transport.request(method, server.url + "/v3/p/attachments",
                                 {"Content-Type": "application/json"}, body)
    assert response.status_code == 200
    assert response.json() == {"method": method, "path": "/v3/p/attachments",
                               "length": str(len(body)),
                               "body": body.decode()}
    assert len(sends) == 1
    assert sends[0].startswith(method.encode() + b" /v3/p/attachments ")
    assert sends[0].endswith(b"\r\n\r\n" + body)


@pytest.mark.parametrize("body", [None, b""])
def test_requests_without_a_body_send_the_head(server, transport, sends, body):
    for _ in range(2):   # and the connection is usable afterwards
        response = transport.request("POST" if body is not None else "GET",
                                     server.url + "/v3/p/volumes/v1", {}, body)
        assert response.status_code == 200
        assert response.json()["body"] == ""
    assert len(sends) == 2
    assert all(s.endswith(b"\r\n\r\n") for s in sends)


def test_a_failed_send_leaves_no_head_behind():
    # urllib3 throws a connection away after an error; the connection
    # itself keeps nothing either
    conn = http_transport._HTTPConnection("127.0.0.1", 9, timeout=5)
    with pytest.raises(u3_exc.NewConnectionError):
        conn.request("PUT", "/v3/p/a", body=b"{}", headers={})
    assert conn._held_head is None and not conn._hold_head
    conn.close()


def test_pools_use_the_one_send_connections(server, transport):
    transport.request("GET", server.url + "/", {})
    (pool, direct), = transport._by_origin.values()
    assert direct and pool.ConnectionCls is http_transport._HTTPConnection
