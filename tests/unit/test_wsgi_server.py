"""volattach.wsgi_server: the in-process HTTP/1.1 keep-alive WSGI server
(over real loopback sockets, with small WSGI apps) and the gunicorn
options of the daemons."""
import http.client
import io
import json
import socket
import threading
import time
import weakref

import pytest

from volattach import wsgi_server


def echo_app(environ, start_response):
    """Answers what it saw: environ fields, the body, the serving thread."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length)
    seen = {key: value for key, value in environ.items()
            if isinstance(value, str)}
    seen.update(body=body.decode("latin-1"), thread=threading.get_ident(),
                url_scheme=environ["wsgi.url_scheme"],
                multithread=environ["wsgi.multithread"])
    out = json.dumps(seen).encode()
    start_response("200 OK", [("Content-Type", "application/json"),
                              ("Content-Length", str(len(out)))])
    return [out]


class Served:
    """A server on a free loopback port with a swappable app."""

    def __init__(self):
        self.app = echo_app
        self.server = wsgi_server.serve_in_thread(
            lambda env, start: self.app(env, start), "127.0.0.1", 0,
            poll_interval=0.05)
        self.port = self.server.server_address[1]

    def connection(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)

    def raw(self):
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        return sock

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def served():
    s = Served()
    yield s
    s.stop()


def get_json(conn, method="GET", path="/", body=None, headers=None):
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    return response, json.loads(response.read())


_readers = weakref.WeakKeyDictionary()


def read_response(sock, no_body=False):
    """(status line, {lower header: value}, body) of one response read
    from a raw socket: framed by Content-Length or chunks (returned raw),
    else up to the close (nothing for 204, 304 and ``no_body``)."""
    rfile = _readers.get(sock)
    if rfile is None:
        rfile = _readers[sock] = sock.makefile("rb")
    status = rfile.readline().decode("latin-1").rstrip("\r\n")
    assert status, "closed before the response"
    headers = {}
    while True:
        line = rfile.readline().decode("latin-1").rstrip("\r\n")
        if not line:
            break
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if no_body or status.split()[1] in ("204", "304"):
        return status, headers, b""
    if headers.get("transfer-encoding") == "chunked":
        body = b""
        while not body.endswith(b"\r\n0\r\n\r\n"):
            body += rfile.readline()
        return status, headers, body
    if "content-length" in headers:
        return status, headers, rfile.read(int(headers["content-length"]))
    return status, headers, rfile.read()


def closed_by_server(sock, timeout=3.0):
    """True when the server closes its end (EOF) within ``timeout``."""
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


# -- keep-alive ---------------------------------------------------------------

def test_two_requests_reuse_one_connection(served):
    conn = served.connection()
    first, seen1 = get_json(conn, path="/one")
    sock = conn.sock
    second, seen2 = get_json(conn, path="/two")
    assert (first.status, second.status) == (200, 200)
    assert conn.sock is sock   # http.client did not reconnect
    # one server thread per connection: the same one
    assert seen1["thread"] == seen2["thread"]
    assert first.getheader("Connection") is None
    assert (seen1["PATH_INFO"], seen2["PATH_INFO"]) == ("/one", "/two")
    assert seen1["SERVER_PROTOCOL"] == "HTTP/1.1"
    conn.close()


def test_post_bodies_on_a_kept_alive_connection(served):
    conn = served.connection()
    _, seen1 = get_json(conn, "POST", "/a", body=b'{"x": 1}',
                        headers={"Content-Type": "application/json"})
    _, seen2 = get_json(conn, "PUT", "/b", body=b"second body")
    assert seen1["body"] == '{"x": 1}'
    assert seen1["CONTENT_LENGTH"] == "8"
    assert seen1["CONTENT_TYPE"] == "application/json"
    assert seen2["body"] == "second body"
    assert seen1["thread"] == seen2["thread"]


def test_unread_body_is_skipped_before_the_next_request(served):
    def app(environ, start_response):
        start_response("200 OK", [("Content-Length", "2")])
        return [environ["wsgi.input"].read(2)]   # reads 2 of the body
    served.app = app
    conn = served.connection()
    conn.request("POST", "/", body=b"0123456789")
    assert conn.getresponse().read() == b"01"
    conn.request("POST", "/", body=b"abcdef")
    assert conn.getresponse().read() == b"ab"


def test_input_never_reads_past_the_body(served):
    reads = []

    def app(environ, start_response):
        stream = environ["wsgi.input"]
        reads.append((stream.readline(), stream.read(), stream.read()))
        start_response("204 No Content", [])
        return []
    served.app = app
    conn = served.connection()
    for body in (b"line\nrest", b"x"):
        conn.request("POST", "/", body=body)
        response = conn.getresponse()
        assert (response.status, response.read()) == (204, b"")
    assert reads == [(b"line\n", b"rest", b""), (b"x", b"", b"")]


@pytest.mark.parametrize("status", ["204 No Content", "202 Accepted",
                                    "304 Not Modified"])
def test_empty_responses_keep_the_connection(served, status):
    def app(environ, start_response):
        start_response(status, [("X-Thing", "1")])
        return []
    served.app = app
    sock = served.raw()
    for _ in range(2):
        sock.sendall(b"DELETE /x HTTP/1.1\r\nHost: h\r\n\r\n")
        line, headers, body = read_response(sock)
        assert line == "HTTP/1.1 " + status
        assert body == b""
        assert "connection" not in headers
        assert "transfer-encoding" not in headers
        if status.startswith("202"):
            assert headers["content-length"] == "0"
        else:   # no body by definition: no framing header added
            assert "content-length" not in headers
    sock.close()


def test_head_gets_no_body(served):
    conn = served.connection()
    conn.request("HEAD", "/")
    response = conn.getresponse()
    assert response.status == 200
    assert response.read() == b""
    assert int(response.getheader("Content-Length")) > 0   # the app's
    _, seen = get_json(conn)   # the connection is still in step
    assert seen["REQUEST_METHOD"] == "GET"


# -- HTTP/1.0 and Connection: close -------------------------------------------

def test_http10_client_is_answered_and_closed(served):
    sock = served.raw()
    sock.sendall(b"GET /old?q=1 HTTP/1.0\r\n\r\n")
    line, headers, body = read_response(sock)
    assert line == "HTTP/1.1 200 OK"
    assert headers["connection"] == "close"
    seen = json.loads(body)
    assert seen["SERVER_PROTOCOL"] == "HTTP/1.0"
    assert seen["QUERY_STRING"] == "q=1"
    assert closed_by_server(sock)
    sock.close()


def test_http10_keep_alive_when_asked(served):
    sock = served.raw()
    for _ in range(2):
        sock.sendall(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        line, headers, _ = read_response(sock)
        assert line == "HTTP/1.1 200 OK"
        assert headers["connection"] == "keep-alive"
    sock.close()


def test_client_connection_close_is_honoured(served):
    sock = served.raw()
    sock.sendall(b"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    _, headers, body = read_response(sock)
    assert headers["connection"] == "close"
    assert json.loads(body)["HTTP_CONNECTION"] == "close"
    assert closed_by_server(sock)
    sock.close()


def test_app_connection_close_is_honoured(served):
    def app(environ, start_response):
        start_response("200 OK", [("Content-Length", "2"),
                                  ("Connection", "close")])
        return [b"ok"]
    served.app = app
    sock = served.raw()
    sock.sendall(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    _, headers, body = read_response(sock)
    assert (headers["connection"], body) == ("close", b"ok")
    assert closed_by_server(sock)
    sock.close()


# -- streamed responses -------------------------------------------------------

def streaming_app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])

    def body():
        yield b"first,"
        yield b""
        yield b"second,"
        yield b"third"
    return body()


def test_streamed_response_is_chunked_for_http11(served):
    served.app = streaming_app
    sock = served.raw()
    sock.sendall(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    _, headers, body = read_response(sock)
    assert headers["transfer-encoding"] == "chunked"
    assert "content-length" not in headers
    assert body == b"6\r\nfirst,\r\n7\r\nsecond,\r\n5\r\nthird\r\n0\r\n\r\n"
    # and the connection goes on
    served.app = echo_app
    sock.sendall(b"GET /next HTTP/1.1\r\nHost: h\r\n\r\n")
    _, _, body = read_response(sock)
    assert json.loads(body)["PATH_INFO"] == "/next"
    sock.close()


def test_streamed_response_to_http11_client_library(served):
    served.app = streaming_app
    conn = served.connection()
    conn.request("GET", "/")
    assert conn.getresponse().read() == b"first,second,third"
    conn.request("GET", "/")
    assert conn.getresponse().read() == b"first,second,third"


def test_streamed_response_to_http10_ends_with_the_close(served):
    served.app = streaming_app
    sock = served.raw()
    sock.sendall(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
    _, headers, body = read_response(sock)   # read up to the close
    assert headers["connection"] == "close"
    assert "transfer-encoding" not in headers
    assert body == b"first,second,third"
    sock.close()


def test_write_callable_and_short_body_close_the_connection(served):
    def app(environ, start_response):
        write = start_response("200 OK", [("Content-Length", "10")])
        write(b"abc")
        return [b"de"]   # 5 bytes of the 10 declared
    served.app = app
    sock = served.raw()
    sock.sendall(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    time.sleep(0.2)
    data = sock.recv(65536)
    assert data.endswith(b"\r\n\r\nabcde")
    assert closed_by_server(sock)   # the framing is broken: no reuse
    sock.close()


# -- environ ------------------------------------------------------------------

def test_path_is_unquoted_and_query_kept_raw(served):
    conn = served.connection()
    _, seen = get_json(conn, path="/v2.1/a%20b/%C3%A9%2F?name=x%20y&all=1")
    # as wsgiref: percent-decoded, bytes read as ISO-8859-1
    assert seen["PATH_INFO"] == "/v2.1/a b/\u00c3\u00a9/"
    assert seen["QUERY_STRING"] == "name=x%20y&all=1"
    assert seen["SCRIPT_NAME"] == ""


def test_environ_fields(served):
    sock = served.raw()
    sock.sendall(b"GET /x HTTP/1.1\r\nHost: h\r\nX-Auth-Token: u:p\r\n"
                 b"X-Multi: a\r\nx-multi: b\r\n"
                 b"OpenStack-API-Version: compute 2.101\r\n\r\n")
    _, _, body = read_response(sock)
    seen = json.loads(body)
    assert seen["HTTP_X_AUTH_TOKEN"] == "u:p"
    assert seen["HTTP_X_MULTI"] == "a,b"
    assert seen["HTTP_OPENSTACK_API_VERSION"] == "compute 2.101"
    assert seen["HTTP_HOST"] == "h"
    assert seen["REMOTE_ADDR"] == "127.0.0.1"
    assert seen["SERVER_PORT"] == str(served.port)
    assert seen["SERVER_NAME"]
    assert seen["REQUEST_METHOD"] == "GET"
    assert seen["CONTENT_TYPE"] == "text/plain"   # wsgiref's default
    assert seen["CONTENT_LENGTH"] == ""
    assert seen["url_scheme"] == "http"
    assert seen["multithread"] is True
    sock.close()


# -- request bodies and bad requests ------------------------------------------

def test_chunked_request_body_is_decoded(served):
    sock = served.raw()
    sock.sendall(b"POST / HTTP/1.1\r\nHost: h\r\n"
                 b"Transfer-Encoding: chunked\r\n"
                 b"\r\n4\r\nWiki\r\n6;ext=1\r\npedia \r\n0\r\nTrailer: x\r\n"
                 b"\r\nGET /after HTTP/1.1\r\nHost: h\r\n\r\n")
    _, _, body = read_response(sock)
    seen = json.loads(body)
    assert seen["body"] == "Wikipedia "
    assert seen["CONTENT_LENGTH"] == "10"
    _, _, body = read_response(sock)
    assert json.loads(body)["PATH_INFO"] == "/after"
    sock.close()


def test_expect_100_continue(served):
    sock = served.raw()
    sock.sendall(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n"
                 b"Expect: 100-continue\r\n\r\n")
    assert sock.recv(65536) == b"HTTP/1.1 100 Continue\r\n\r\n"
    sock.sendall(b"hello")
    _, _, body = read_response(sock)
    assert json.loads(body)["body"] == "hello"
    sock.close()


@pytest.mark.parametrize("head, status", [
    (b"POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\nContent-Length: 1\r\n"
     b"Content-Length: 2\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\nContent-Length: 3\r\n"
     b"Transfer-Encoding: chunked\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
    (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
    (b"GET /\r\n\r\n", 400),
    (b"GET / HTTP/x\r\n\r\n", 400),
    (b"GET / HTTP/2.0\r\n\r\n", 505),
    (b"GET / HTTP/1.1\r\nNo colon here\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nX-A: 1\r\n folded\r\n\r\n", 400),
    (b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n", 414),
    (b"GET / HTTP/1.1\r\nX-A: " + b"a" * 70000 + b"\r\n\r\n", 431),
])
def test_bad_requests_get_an_error_and_a_close(served, head, status):
    called = []
    served.app = lambda env, start: called.append(1) or echo_app(env, start)
    sock = served.raw()
    sock.sendall(head)
    line, headers, _ = read_response(sock)
    assert line.startswith("HTTP/1.1 %d " % status)
    assert headers["connection"] == "close"
    assert closed_by_server(sock)
    assert called == []
    sock.close()


def test_app_error_is_a_500_and_a_close(served):
    def app(environ, start_response):
        raise RuntimeError("boom")
    served.app = app
    sock = served.raw()
    sock.sendall(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    line, headers, body = read_response(sock)
    assert line == "HTTP/1.1 500 Internal Server Error"
    assert body == wsgi_server.INTERNAL_ERROR_BODY
    assert headers["connection"] == "close"
    assert closed_by_server(sock)
    sock.close()


def test_app_error_after_start_response_replaces_the_response(served):
    def app(environ, start_response):
        start_response("200 OK", [("Content-Length", "100")])
        raise ValueError("later")
    served.app = app
    conn = served.connection()
    conn.request("GET", "/")
    response = conn.getresponse()
    assert response.status == 500
    assert int(response.getheader("Content-Length")) == len(
        wsgi_server.INTERNAL_ERROR_BODY)


# -- timeouts and shutdown ----------------------------------------------------

def test_idle_connection_is_closed_after_the_keepalive_timeout(served):
    served.server.keepalive_timeout = 0.3
    sock = served.raw()
    sock.sendall(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    read_response(sock)
    started = time.monotonic()
    assert closed_by_server(sock, timeout=3)
    assert time.monotonic() - started < 2.5
    sock.close()


def test_shutdown_closes_idle_kept_alive_connections():
    s = Served()
    conn = s.connection()
    get_json(conn)
    sock = conn.sock
    assert len(s.server.connections) == 1
    started = time.monotonic()
    s.stop()
    assert closed_by_server(sock, timeout=3)
    assert time.monotonic() - started < 2.5
    deadline = time.monotonic() + 3
    while s.server.connections and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not s.server.connections          # its thread ended
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", s.port), timeout=2)
    s.server.server_close()   # idempotent, as volattach-all calls both


def test_request_in_progress_at_shutdown_finishes_with_a_close():
    entered, release = threading.Event(), threading.Event()

    def app(environ, start_response):
        entered.set()
        release.wait(5)
        start_response("200 OK", [("Content-Length", "4")])
        return [b"done"]
    s = Served()
    s.app = app
    sock = s.raw()
    sock.sendall(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    assert entered.wait(5)
    stopper = threading.Thread(target=s.stop)
    stopper.start()
    time.sleep(0.2)
    release.set()
    _, headers, body = read_response(sock)
    assert body == b"done"
    assert headers["connection"] == "close"
    assert closed_by_server(sock)
    stopper.join(5)
    sock.close()


def test_access_log_at_debug(served, caplog):
    import logging
    served.server.access_log = logging.getLogger("test.wsgi.access")
    with caplog.at_level(logging.DEBUG, logger="test.wsgi.access"):
        conn = served.connection()
        get_json(conn, path="/logged?x=1")
        deadline = time.monotonic() + 3   # logged once the answer is out
        while not any('"GET /logged?x=1 HTTP/1.1" 200' in r.getMessage()
                      for r in caplog.records):
            assert time.monotonic() < deadline, caplog.records
            time.sleep(0.01)


# -- pieces -------------------------------------------------------------------

def test_bounded_input():
    stream = io.BytesIO(b"ab\ncd\nef-next request")
    body = wsgi_server.BoundedInput(stream, 8)
    assert list(body) == [b"ab\n", b"cd\n", b"ef"]
    assert body.read() == b""
    assert stream.read() == b"-next request"

    body = wsgi_server.BoundedInput(io.BytesIO(b"0123456789"), 6)
    assert body.read(4) == b"0123"
    assert body.discard_rest()
    assert body.read() == b""

    short = wsgi_server.BoundedInput(io.BytesIO(b"abc"), 10)
    assert short.read() == b"abc"
    assert short.truncated and not short.discard_rest()

    big = wsgi_server.BoundedInput(io.BytesIO(b""),
                                   wsgi_server.MAX_DISCARD + 1)
    assert not big.discard_rest()


def test_gunicorn_workers_are_gthread_even_with_one_thread():
    options = wsgi_server.gunicorn_options("127.0.0.1:8776", workers=2)
    assert options["worker_class"] == "gthread"
    assert options["threads"] == 1
    assert options["workers"] == 2
    assert options["bind"] == "127.0.0.1:8776"


def test_run_passes_the_options_to_gunicorn(monkeypatch):
    ran = []

    class FakeApplication:
        def __init__(self, app_uri, options):
            ran.append((app_uri, options))

        def run(self):
            ran.append("ran")
    monkeypatch.setattr(wsgi_server, "_Application", FakeApplication)
    wsgi_server.run("volattach.volume.wsgi:application", bind="127.0.0.1:1", workers=3,
                    extra={"keepalive": 5})
    (uri, options), state = ran
    assert (uri, state) == ("volattach.volume.wsgi:application", "ran")
    assert options["worker_class"] == "gthread"
    assert (options["workers"], options["keepalive"]) == (3, 5)
