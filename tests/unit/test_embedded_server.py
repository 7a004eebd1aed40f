"""volattach.embedded_server: waitress inside the process, probed over raw
sockets as a hostile client would (underscore headers, malformed heads,
slow heads, connection cap, body and head size limits)."""
import http.client
import json
import socket
import threading
import time

import pytest
from oslo_config import cfg

from volattach import conf as volattach_conf
from volattach import embedded_server


def echo_app(environ, start_response):
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length)
    seen = {key: value for key, value in environ.items()
            if isinstance(value, str)}
    seen["body"] = body.decode("latin-1")
    out = json.dumps(seen).encode()
    start_response("200 OK", [("Content-Type", "application/json"),
                              ("Content-Length", str(len(out)))])
    return [out]


def make_conf(**wsgi):
    conf = cfg.ConfigOpts()
    conf.register_opts(volattach_conf.wsgi_opts, group="wsgi")
    conf([], default_config_files=[])
    for name, value in wsgi.items():
        conf.set_override(name, value, group="wsgi")
    return conf


class Served:
    def __init__(self, app=echo_app, **wsgi):
        self.calls = 0

        def counted(environ, start_response):
            self.calls += 1
            return app(environ, start_response)
        self.server = embedded_server.serve_in_thread(
            counted, "127.0.0.1", 0, conf=make_conf(**wsgi))
        self.port = self.server.port

    def raw(self, timeout=5):
        return socket.create_connection(("127.0.0.1", self.port),
                                        timeout=timeout)

    def exchange(self, data, timeout=5):
        """Send ``data``, read until the server closes; (bytes, seconds)."""
        sock = self.raw(timeout)
        start = time.monotonic()
        sock.sendall(data)
        out = b""
        try:
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                out += chunk
        finally:
            sock.close()
        return out, time.monotonic() - start

    def connection(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)

    def stop(self):
        self.server.shutdown()


@pytest.fixture
def served():
    s = Served()
    yield s
    s.stop()


def read_response(sock):
    """One whole response (with a Content-Length) from ``sock``."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def status_of(response):
    return int(response.split(b" ", 2)[1])


def body_of(response):
    return json.loads(response.split(b"\r\n\r\n", 1)[1])


def test_underscore_headers_are_dropped(served):
    out, _ = served.exchange(b"GET /a HTTP/1.1\r\nHost: x\r\nX-Roles: member\r\n"
                             b"X_Roles: admin\r\nConnection: close\r\n\r\n")
    assert status_of(out) == 200
    assert body_of(out)["HTTP_X_ROLES"] == "member"


@pytest.mark.parametrize("head", [
    b"GET /a HTTP/1.1\nHost: x\n\n",                       # bare LF
    b"GET /a HTTP/1.1\r\nHost: x\nX-A: b\r\n\r\n",         # one bare LF
    b"GET /a HTTP/1.1\r\nHo\x01st: x\r\n\r\n",             # control char
    b"GET /a HTTP/1.1\r\nHo st: x\r\n\r\n",                # space in name
    b"GET http://evil/x HTTP/1.1\r\nHost: x\r\n\r\n",      # absolute-form
    b"GET /a HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
])
def test_malformed_heads_are_refused_and_closed(served, head):
    out, seconds = served.exchange(head)
    assert status_of(out) == 400
    assert b"connection: close" in out.lower()
    assert served.calls == 0
    assert seconds < 2


def test_slow_head_is_cut_off_after_header_timeout():
    s = Served(header_timeout=0.5)
    try:
        sock = s.raw()
        sock.sendall(b"GET /a HTTP/1.1\r\n")
        start = time.monotonic()
        closed_after = None
        for _ in range(40):   # one byte every 0.1 s, never finishing
            try:
                sock.sendall(b"X")
                sock.settimeout(0.1)
                if sock.recv(1) == b"":
                    closed_after = time.monotonic() - start
                    break
            except socket.timeout:
                continue
            except OSError:
                closed_after = time.monotonic() - start
                break
        sock.close()
        assert closed_after is not None, "slow head never cut off"
        assert 0.4 < closed_after < 3.0
        assert s.calls == 0
    finally:
        s.stop()


def test_complete_heads_are_not_cut_off_by_header_timeout():
    s = Served(header_timeout=0.5)
    try:
        conn = s.connection()
        for _ in range(3):    # idle longer than header_timeout in between
            conn.request("GET", "/a")
            assert conn.getresponse().read()
            time.sleep(0.7)
        conn.close()
    finally:
        s.stop()


def test_idle_kept_alive_connection_is_closed():
    s = Served(keepalive_timeout=1)
    try:
        sock = s.raw()
        sock.sendall(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.settimeout(6)
        assert status_of(read_response(sock)) == 200
        start = time.monotonic()
        assert sock.recv(1) == b""
        assert time.monotonic() - start < 5
        sock.close()
    finally:
        s.stop()


def test_connection_cap():
    s = Served(max_connections=3)
    try:
        held = [s.raw() for _ in range(3)]
        for sock in held:   # make sure the server accepted each
            sock.sendall(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
            assert status_of(read_response(sock)) == 200
        extra = s.raw()
        extra.sendall(b"GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        extra.settimeout(1.5)
        with pytest.raises(socket.timeout):
            extra.recv(65536)   # waiting in the backlog, not served
        held.pop().close()
        extra.settimeout(5)
        assert status_of(read_response(extra)) == 200
        for sock in held + [extra]:
            sock.close()
    finally:
        s.stop()


def test_body_over_the_limit_is_413():
    s = Served(max_request_body_size=1000)
    try:
        out, _ = s.exchange(b"POST /a HTTP/1.1\r\nHost: x\r\n"
                            b"Content-Length: 2000\r\n\r\n" + b"x" * 2000)
        assert status_of(out) == 413
        chunk = b"400\r\n" + b"y" * 1024 + b"\r\n"
        out, _ = s.exchange(b"POST /a HTTP/1.1\r\nHost: x\r\n"
                            b"Transfer-Encoding: chunked\r\n\r\n"
                            + chunk * 2 + b"0\r\n\r\n")
        assert status_of(out) == 413
        out, _ = s.exchange(b"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5"
                            b"\r\nConnection: close\r\n\r\nhello")
        assert status_of(out) == 200 and body_of(out)["body"] == "hello"
        assert s.calls == 1
    finally:
        s.stop()


def test_head_over_the_limit_is_431():
    s = Served(max_request_header_size=2048)
    try:
        out, _ = s.exchange(b"GET /a HTTP/1.1\r\nHost: x\r\nX-Big: "
                            + b"a" * 4096 + b"\r\n\r\n")
        assert status_of(out) == 431
        assert s.calls == 0
    finally:
        s.stop()


def test_requests_reuse_one_connection(served):
    conn = served.connection()
    conn.request("POST", "/one?x=1", body=b"abc")
    first = json.loads(conn.getresponse().read())
    sock = conn.sock
    conn.request("GET", "/two%20b")
    second = json.loads(conn.getresponse().read())
    assert conn.sock is sock
    assert (first["PATH_INFO"], first["QUERY_STRING"], first["body"]) == (
        "/one", "x=1", "abc")
    assert second["PATH_INFO"] == "/two b"
    conn.close()


def test_chunked_request_body_is_decoded(served):
    out, _ = served.exchange(b"POST /a HTTP/1.1\r\nHost: x\r\n"
                             b"Transfer-Encoding: chunked\r\nConnection: close"
                             b"\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
    assert body_of(out)["body"] == "abcde"


def test_app_error_is_a_500(served):
    def broken(environ, start_response):
        raise RuntimeError("boom")
    s = Served(app=broken)
    try:
        out, _ = s.exchange(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status_of(out) == 500
        assert b"boom" not in out
    finally:
        s.stop()


def test_shutdown_lets_a_running_request_finish():
    started = threading.Event()

    def slow(environ, start_response):
        started.set()
        time.sleep(0.5)
        start_response("200 OK", [("Content-Length", "4")])
        return [b"done"]
    s = Served(app=slow)
    result = {}

    def client():
        conn = s.connection()
        conn.request("GET", "/slow")
        result["body"] = conn.getresponse().read()
    thread = threading.Thread(target=client)
    thread.start()
    assert started.wait(5)
    s.stop()
    thread.join(5)
    assert result.get("body") == b"done"
    assert s.server.thread is None
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", s.port), timeout=1).recv(1)


# -- what volattach changes of waitress's per-request work --------------------

def status_app(status, body=b""):
    def app(environ, start_response):
        environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        headers = [("Content-Type", "text/plain")]
        if body:
            headers.append(("Content-Length", str(len(body))))
        start_response(status, headers)
        return [body]
    return app


@pytest.mark.parametrize("status", ["204 No Content", "304 Not Modified"])
def test_bodiless_answers_keep_the_connection(status):
    # waitress alone closes any HTTP/1.1 answer without Content-Length; a
    # 204 or 304 has none, and ends with its head
    s = Served(app=status_app(status))
    try:
        sock = s.raw()
        for _ in range(3):
            sock.sendall(b"POST /a HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Length: 2\r\n\r\nab")
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = sock.recv(65536)
                assert chunk, "the server closed the connection"
                head += chunk
            assert status_of(head) == int(status[:3])
            assert b"connection: close" not in head.lower()
            assert b"content-length" not in head.lower()
            assert head.endswith(b"\r\n\r\n")
        sock.close()
        assert s.calls == 3
    finally:
        s.stop()


def test_bodiless_answer_to_connection_close_still_closes():
    s = Served(app=status_app("204 No Content"))
    try:
        out, seconds = s.exchange(b"GET /a HTTP/1.1\r\nHost: x\r\n"
                                  b"Connection: close\r\n\r\n")
        assert status_of(out) == 204
        assert b"connection: close" in out.lower()
        assert seconds < 2
    finally:
        s.stop()


def test_answer_without_length_is_still_chunked_and_kept(served):
    def streamed(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return iter([b"ab", b"cd"])
    s = Served(app=streamed)
    try:
        conn = s.connection()
        conn.request("GET", "/a")
        response = conn.getresponse()
        assert response.read() == b"abcd"
        assert response.getheader("Transfer-Encoding") == "chunked"
    finally:
        s.stop()


def test_head_and_body_go_out_in_one_send(served, monkeypatch):
    sent = []
    original = embedded_server.Channel.send

    def send(self, data, do_close=True):
        sent.append(bytes(data))
        return original(self, data, do_close=do_close)
    monkeypatch.setattr(embedded_server.Channel, "send", send)
    conn = served.connection()
    conn.request("GET", "/one")
    body = conn.getresponse().read()
    conn.close()
    assert len(sent) == 1
    assert sent[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert sent[0].endswith(body)


def test_keep_alive_requests_do_not_wake_the_event_loop(served, monkeypatch):
    pulls = []
    trigger = served.server.trigger
    original = trigger.pull_trigger
    monkeypatch.setattr(trigger, "pull_trigger",
                        lambda *a: (pulls.append(1), original(*a)))
    conn = served.connection()
    for i in range(20):
        conn.request("GET", "/r%d" % i)
        assert json.loads(conn.getresponse().read())["PATH_INFO"] == "/r%d" % i
    conn.close()
    # the loop may be mid-decision now and then (a pull is then needed),
    # but not once per request
    assert len(pulls) < 10


def test_large_answer_to_a_slow_reader_is_sent_whole():
    # the task cannot send it all: the loop must be woken to send the rest
    big = b"x" * (8 << 20)
    s = Served(app=status_app("200 OK", big))
    try:
        sock = s.raw(timeout=10)
        for _ in range(2):
            sock.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
            time.sleep(0.3)        # let the socket buffers fill up
            response = read_response(sock)
            assert status_of(response) == 200
            assert response.endswith(big)
        sock.close()
    finally:
        s.stop()


def test_pipelined_requests_are_answered_in_order(served):
    sock = served.raw()
    sock.sendall(b"GET /first HTTP/1.1\r\nHost: x\r\n\r\n"
                 b"GET /second HTTP/1.1\r\nHost: x\r\n\r\n")
    data = b""
    while data.count(b"HTTP/1.1 200 OK") < 2 or not data.endswith(b"}"):
        chunk = sock.recv(65536)
        assert chunk
        data += chunk
    sock.close()
    assert 0 < data.index(b'"/first"') < data.index(b"HTTP/1.1 200 OK", 1) \
        < data.index(b'"/second"')


def test_client_gone_mid_request_leaves_the_server_serving():
    started, release = threading.Event(), threading.Event()

    def slow(environ, start_response):
        started.set()
        release.wait(5)
        start_response("200 OK", [("Content-Length", "2")])
        return [b"ok"]
    s = Served(app=slow)
    try:
        sock = s.raw()
        sock.sendall(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        assert started.wait(5)
        sock.close()
        time.sleep(0.2)
        release.set()
        conn = s.connection()
        conn.request("GET", "/next")
        assert conn.getresponse().read() == b"ok"
        conn.close()
    finally:
        s.stop()


@pytest.mark.parametrize("chunks", [[bytearray(b"abcdef")], [b"abc", bytearray(b"def")],
                                    [memoryview(b"abcdef")]])
def test_bodies_that_are_not_bytes_follow_the_head(chunks):
    def app(environ, start_response):
        start_response("200 OK", [("Content-Length", "6")])
        return chunks
    s = Served(app=app)
    try:
        conn = s.connection()
        for _ in range(2):
            conn.request("GET", "/a")
            response = conn.getresponse()
            assert response.status == 200 and response.read() == b"abcdef"
        conn.close()
    finally:
        s.stop()


def test_waitress_refusals_answer_in_the_fault_format():
    """A body over the transport cap and a control character in a header
    answer JSON faults (issue 33, item 6), not waitress's plain text."""
    s = Served(max_request_body_size=1000)
    try:
        out, _ = s.exchange(b"POST /a HTTP/1.1\r\nHost: x\r\n"
                            b"Content-Length: 2000\r\n\r\n" + b"x" * 2000)
        assert status_of(out) == 413
        assert b"Content-Type: application/json" in out.split(b"\r\n\r\n")[0]
        assert body_of(out) == {"overLimit": {
            "code": 413,
            "message": "Request is too large: the body limit is 114688 bytes "
                       "([oslo_middleware] max_request_body_size)."}}
        out, _ = s.exchange(b"GET /a HTTP/1.1\r\nHost: x\r\n"
                            b"X-Evil: a\x01b\r\n\r\n")
        assert status_of(out) == 400
        fault = body_of(out)["badRequest"]
        assert fault["code"] == 400 and fault["message"]
        assert s.calls == 0
    finally:
        s.stop()
