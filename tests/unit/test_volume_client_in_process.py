"""volume_client.in_process: the WSGI call that replaces a loopback request.

The answer (status, headers, body, an application's exception, a streamed
body), the environ the application sees, the caller's context kept, the
access log line, and ``http_transport.Transport`` handing a registered
origin's requests to it (and only those).
"""
import logging
import socket

import pytest
from oslo_context import context as oslo_context

from volattach import conf as volattach_conf
from volattach import context
from volattach import exception
from volattach.volume_client import cinder
from volattach.volume_client import http_transport
from volattach.volume_client import in_process
from volattach.wsgi import access_log

ORIGIN = "http://127.0.0.1:28776"
URL = ORIGIN + "/v3/demo/volumes/abc%20d?limit=2&marker=x%2Fy"


def _app(status="200 OK", headers=(("Content-Type", "application/json"),),
         body=(b'{"a": 1}',), seen=None):
    def app(environ, start_response):
        if seen is not None:
            seen.append(dict(environ, body=environ["wsgi.input"].read()))
        start_response(status, list(headers))
        return list(body)
    return app


def _in_process(app):
    return in_process.App(app, "volhost", 28776)


def test_status_headers_and_body():
    app = _app("201 Created", (("Content-Type", "application/json"),
                               ("X-OpenStack-Request-ID", "req-1")),
               (b'{"vol', b'ume": {}}'))
    response = _in_process(app).request("GET", URL, {})
    assert response.status_code == 201
    assert response.reason == "Created"
    assert response.headers["x-openstack-request-id"] == "req-1"
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"volume": {}}
    assert response.url == URL


def test_the_environ_the_application_sees():
    seen = []
    body = b'{"attachment": {}}'
    _in_process(_app(seen=seen)).request(
        "post", URL, {"X-Auth-Token": "alice:demo",
                      "OpenStack-API-Version": "volume 3.44",
                      "Content-Type": "application/json",
                      "X_Sneaky": "dropped"}, body)
    environ = seen[0]
    assert environ["REQUEST_METHOD"] == "POST"
    assert environ["REMOTE_ADDR"] == "127.0.0.1"
    assert environ["SERVER_NAME"] == "volhost"
    assert environ["SERVER_PORT"] == "28776"
    assert environ["SCRIPT_NAME"] == ""
    assert environ["PATH_INFO"] == "/v3/demo/volumes/abc d"
    assert environ["QUERY_STRING"] == "limit=2&marker=x%2Fy"
    assert environ["REQUEST_URI"] == "/v3/demo/volumes/abc%20d?limit=2&marker=x%2Fy"
    assert environ["HTTP_HOST"] == "127.0.0.1:28776"
    assert environ["HTTP_X_AUTH_TOKEN"] == "alice:demo"
    assert environ["HTTP_OPENSTACK_API_VERSION"] == "volume 3.44"
    assert environ["CONTENT_TYPE"] == "application/json"
    assert environ["CONTENT_LENGTH"] == str(len(body))
    assert "HTTP_X_SNEAKY" not in environ and "HTTP_X__SNEAKY" not in environ
    assert environ["body"] == body
    assert environ["wsgi.url_scheme"] == "http"
    assert environ["wsgi.version"] == (1, 0)


def test_no_body_no_content_length_and_a_bare_path():
    seen = []
    _in_process(_app(seen=seen)).request("GET", ORIGIN + "/v3", {})
    assert "CONTENT_LENGTH" not in seen[0]
    assert seen[0]["PATH_INFO"] == "/v3"
    assert seen[0]["QUERY_STRING"] == ""
    assert seen[0]["body"] == b""


def test_an_application_exception_is_waitress_500(caplog):
    def app(environ, start_response):
        raise RuntimeError("boom")
    with caplog.at_level(logging.ERROR, logger=in_process.__name__):
        response = _in_process(app).request("GET", URL, {})
    assert response.status_code == 500
    assert response.reason == "Internal Server Error"
    assert response.text.startswith("Internal Server Error")
    assert response.headers["content-length"] == str(len(response.content))
    assert any("Exception while serving /v3/demo/volumes/abc%20d" in r.message
               and r.exc_info for r in caplog.records)


def test_an_exception_while_streaming_is_a_500_not_half_a_body():
    closed = []

    class Body:
        def __iter__(self):
            yield b"{"
            raise ValueError("half way")

        def close(self):
            closed.append(True)

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "application/json")])
        return Body()
    response = _in_process(app).request("GET", URL, {})
    assert response.status_code == 500
    assert closed == [True]


def test_a_streamed_body_and_write_are_read_whole_and_closed():
    closed = []

    class Body:
        def __iter__(self):
            yield b"b"
            yield b""
            yield b"c"

        def close(self):
            closed.append(True)

    def app(environ, start_response):
        write = start_response("200 OK", [("Content-Length", "3")])
        write(b"a")
        return Body()
    response = _in_process(app).request("GET", URL, {})
    assert response.content == b"abc"
    assert closed == [True]


def test_start_response_with_exc_info_replaces_the_answer():
    def app(environ, start_response):
        start_response("200 OK", [("X-First", "1")])
        try:
            raise KeyError("x")
        except KeyError:
            import sys
            start_response("503 Service Unavailable", [("X-Second", "2")],
                           sys.exc_info())
        return [b"later"]
    response = _in_process(app).request("GET", URL, {})
    assert response.status_code == 503
    assert "x-first" not in response.headers
    assert response.headers["x-second"] == "2"


def test_no_start_response_is_a_500():
    response = _in_process(lambda environ, start: [b"x"]).request(
        "GET", URL, {})
    assert response.status_code == 500


def test_the_callers_context_is_kept():
    caller = context.from_noauth_token("bob:other")
    caller.update_store()

    def app(environ, start_response):
        context.from_noauth_token("alice:demo").update_store()
        start_response("200 OK", [])
        return [b""]
    try:
        _in_process(access_log.AccessLog(app)).request("GET", URL, {})
        assert oslo_context.get_current() is caller
    finally:
        context.clear_current()


def test_the_access_log_line_is_written(caplog):
    def app(environ, start_response):
        context.from_noauth_token("alice:demo", request_id="req-42")
        start_response("200 OK", [("Content-Length", "2"),
                                  ("x-openstack-request-id", "req-42")])
        return [b"{}"]
    with caplog.at_level(logging.INFO, logger=access_log.LOG.name):
        _in_process(access_log.AccessLog(app)).request("GET", URL, {})
    lines = [r.getMessage() for r in caplog.records
             if r.name == access_log.LOG.name]
    assert lines == ['127.0.0.1 "GET /v3/demo/volumes/abc%20d?limit=2&'
                     'marker=x%2Fy" status: 200 len: 2 microversion: - '
                     'time: ' + lines[0].rsplit(" ", 1)[1]]


def _closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def conf():
    conf = volattach_conf.CONF
    conf([], project="volattach", default_config_files=[])
    volattach_conf.set_embedded_defaults(conf)
    port = _closed_port()
    conf.set_override("endpoint", "http://127.0.0.1:%d/v3" % port,
                      group="cinder")
    conf.set_override("retry_seconds", 0.0, group="cinder")
    yield conf
    conf.clear_override("endpoint", group="cinder")
    conf.clear_override("retry_seconds", group="cinder")


def test_the_transport_sends_a_registered_origin_to_its_app(conf):
    origin = conf.cinder.endpoint[:-len("/v3")]
    seen = []
    transport = http_transport.Transport(conf.cinder)
    http_transport.serve_in_process(origin, _in_process(_app(seen=seen)))
    try:
        response = transport.request("GET", origin + "/v3/demo/volumes", {})
        assert response.status_code == 200 and len(seen) == 1
        # another origin still goes over a socket (nothing listens there)
        other = "http://127.0.0.1:%d" % _closed_port()
        with pytest.raises(http_transport.NotSent):
            transport.request("GET", other + "/v3/demo/volumes", {})
    finally:
        http_transport.stop_serving_in_process(origin)
    with pytest.raises(http_transport.NotSent):
        transport.request("GET", origin + "/v3/demo/volumes", {})


def test_the_volume_client_reads_in_process_errors_as_from_a_socket(conf):
    origin = conf.cinder.endpoint[:-len("/v3")]
    not_found = _app("404 Not Found", (("Content-Type", "application/json"),),
                     (b'{"itemNotFound": {"code": 404, "message": "no"}}',))

    def broken(environ, start_response):
        raise RuntimeError("boom")
    api = cinder.VolumeAPI(conf)
    ctx = context.from_noauth_token("alice:demo")
    try:
        http_transport.serve_in_process(origin, _in_process(not_found))
        with pytest.raises(exception.VolumeNotFound):
            api.get(ctx, "abc")
        http_transport.serve_in_process(origin, _in_process(broken))
        with pytest.raises(exception.CinderAPIError) as info:
            api.get(ctx, "abc")
        assert info.value.kwargs["code"] == 500
    finally:
        http_transport.stop_serving_in_process(origin)
        context.clear_current()
