"""volattach.embedded_server: a task thread keeps its connection for a
moment after answering (lingering), and gives it back to the event loop
when time is up, when the pool needs the thread, or when the client hangs
up or sends half a request."""
import json
import socket
import threading
import time

from tests.unit.test_embedded_server import Served
from tests.unit.test_embedded_server import read_response
from tests.unit.test_embedded_server import status_of
from volattach import embedded_server


def threaded_app(seen):
    def app(environ, start_response):
        seen.append((environ["PATH_INFO"], threading.get_ident()))
        out = json.dumps({"path": environ["PATH_INFO"]}).encode()
        start_response("200 OK", [("Content-Type", "application/json"),
                                  ("Content-Length", str(len(out)))])
        return [out]
    return app


def test_back_to_back_requests_are_served_by_one_thread_without_the_loop(
        monkeypatch):
    seen = []
    s = Served(app=threaded_app(seen))
    reads = []
    original = embedded_server.Channel.handle_read
    monkeypatch.setattr(embedded_server.Channel, "handle_read",
                        lambda self: (reads.append(1), original(self)))
    try:
        conn = s.connection()
        for i in range(20):
            conn.request("GET", "/r%d" % i)
            assert json.loads(conn.getresponse().read())["path"] == "/r%d" % i
        conn.close()
    finally:
        s.stop()
    assert [p for p, _ in seen] == ["/r%d" % i for i in range(20)]
    # the loop read the first request; the lingering thread the others
    assert len({t for _, t in seen}) <= 2
    assert len(reads) <= 3


def test_a_request_after_the_linger_is_read_by_the_loop(monkeypatch):
    seen = []
    s = Served(app=threaded_app(seen))
    s.server.linger_seconds = 0.05
    try:
        conn = s.connection()
        conn.request("GET", "/a")
        assert conn.getresponse().read()
        time.sleep(0.3)
        conn.request("GET", "/b")
        assert json.loads(conn.getresponse().read())["path"] == "/b"
        conn.close()
    finally:
        s.stop()


def test_half_a_request_during_the_linger_is_finished_by_the_loop():
    seen = []
    s = Served(app=threaded_app(seen))
    s.server.linger_seconds = 0.1
    try:
        sock = s.raw()
        sock.sendall(b"GET /first HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status_of(read_response(sock)) == 200
        sock.sendall(b"GET /second HTTP/1.1\r\n")
        time.sleep(0.4)     # longer than the linger
        sock.sendall(b"Host: x\r\n\r\n")
        response = read_response(sock)
        assert status_of(response) == 200
        assert b'"/second"' in response
        sock.close()
    finally:
        s.stop()


def test_a_client_hanging_up_during_the_linger_is_closed():
    seen = []
    s = Served(app=threaded_app(seen))
    s.server.linger_seconds = 0.2
    try:
        sock = s.raw()
        sock.sendall(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status_of(read_response(sock)) == 200
        sock.close()
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            channels = [c for c in s.server._map.values()
                        if isinstance(c, embedded_server.Channel)]
            if not channels:
                break
            time.sleep(0.05)
        assert not channels
    finally:
        s.stop()


def test_a_single_thread_never_lingers_so_other_connections_wait_not():
    # one pool thread: lingering would make the second connection wait
    seen = []
    s = Served(app=threaded_app(seen), threads=1)
    s.server.linger_seconds = 2.0
    try:
        first, second = s.raw(), s.raw()
        first.sendall(b"GET /one HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status_of(read_response(first)) == 200
        start = time.monotonic()
        second.sendall(b"GET /two HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status_of(read_response(second)) == 200
        assert time.monotonic() - start < 1.0
        first.close()
        second.close()
    finally:
        s.stop()


def test_busy_pool_stops_lingering(monkeypatch):
    # every thread but the lingering one is busy: a new connection's
    # request is served within the linger, not after it
    release = threading.Event()
    seen = []
    inner = threaded_app(seen)

    def app(environ, start_response):
        if environ["PATH_INFO"] == "/block":
            release.wait(5)
        return inner(environ, start_response)
    s = Served(app=app, threads=3)
    s.server.linger_seconds = 3.0
    try:
        lingering = s.raw()
        lingering.sendall(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status_of(read_response(lingering)) == 200
        blocked = s.raw()
        blocked.sendall(b"GET /block HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.2)
        other = s.raw()
        start = time.monotonic()
        other.sendall(b"GET /other HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status_of(read_response(other)) == 200
        assert time.monotonic() - start < 2.0
        release.set()
        assert status_of(read_response(blocked)) == 200
        for sock in (lingering, blocked, other):
            sock.close()
    finally:
        release.set()
        s.stop()


def test_pipelined_requests_while_lingering_are_answered_in_order():
    seen = []
    s = Served(app=threaded_app(seen))
    try:
        sock = s.raw()
        sock.sendall(b"GET /0 HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status_of(read_response(sock)) == 200
        sock.sendall(b"GET /1 HTTP/1.1\r\nHost: x\r\n\r\n"
                     b"GET /2 HTTP/1.1\r\nHost: x\r\n\r\n"
                     b"GET /3 HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        sock.settimeout(5)
        while data.count(b"HTTP/1.1 200 OK") < 3 or not data.endswith(b"}"):
            chunk = sock.recv(65536)
            assert chunk
            data += chunk
        sock.close()
        assert data.index(b'"/1"') < data.index(b'"/2"') < data.index(b'"/3"')
    finally:
        s.stop()


def test_no_linger_serves_as_plain_waitress(monkeypatch):
    seen = []
    s = Served(app=threaded_app(seen))
    s.server.linger_seconds = 0
    try:
        conn = s.connection()
        for i in range(5):
            conn.request("GET", "/r%d" % i)
            assert json.loads(conn.getresponse().read())["path"] == "/r%d" % i
        conn.close()
    finally:
        s.stop()
    assert socket   # (module used by the helpers above)
