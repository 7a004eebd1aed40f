"""A conductor asked to stop while its broker is gone exits within
``[DEFAULT] graceful_shutdown_timeout`` (plus a margin), and at once when it
can stop cleanly.

The extra conductor reaches RabbitMQ through a TCP relay owned by the test;
closing the relay (listener and every relayed connection) is what a broker
restart looks like to the daemon, without touching the RabbitMQ the other
tests share.
"""
import os
import selectors
import signal
import socket
import threading
import time
import urllib.parse

import pytest

TIMEOUT = 3          # [DEFAULT] graceful_shutdown_timeout of the daemon
MARGIN = 6           # interpreter exit, log flush, a loaded CI machine


class Relay:
    """Forward 127.0.0.1:<port> to ``target`` until ``close()``."""

    def __init__(self, target):
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets = []
        self.closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self.sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream),
                             daemon=True).start()

    def _pump(self, a, b):
        sel = selectors.DefaultSelector()
        sel.register(a, selectors.EVENT_READ, b)
        sel.register(b, selectors.EVENT_READ, a)
        try:
            while not self.closed.is_set():
                for key, _ in sel.select(0.2):
                    data = key.fileobj.recv(65536)
                    if not data:
                        return
                    key.data.sendall(data)
        except OSError:
            return
        finally:
            sel.close()

    def close(self):
        self.closed.set()
        for sock in [self.listener] + self.sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


def _relayed(transport_url, port):
    parts = urllib.parse.urlsplit(transport_url)
    host = parts.hostname
    target = (host, parts.port or 5672)
    netloc = parts.netloc.replace("%s:%s" % (host, target[1]),
                                  "127.0.0.1:%d" % port)
    if netloc == parts.netloc:
        netloc = parts.netloc.replace(host, "127.0.0.1:%d" % port)
    return target, urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def _started(deployment, name, since, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(deployment.log_path(name), errors="replace") as f:
            f.seek(since)
            text = f.read()
        if "running volattach-conductor; SIGTERM" in text:
            return
        assert deployment.processes[name].poll() is None, \
            deployment.log_tail(name)
        time.sleep(0.3)
    raise AssertionError(deployment.log_tail(name))


def _stop_seconds(deployment, name):
    proc = deployment.processes[name]
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(TIMEOUT + 60)
    finally:
        deployment.stop(name)
    return time.monotonic() - started, proc.returncode


@pytest.mark.parametrize("cut_broker", [False, True],
                         ids=["clean", "broker-gone"])
def test_conductor_stops_within_graceful_shutdown_timeout(deployment,
                                                          cut_broker):
    name = "conductor-shutdown-%s" % ("cut" if cut_broker else "clean")
    relay = Relay(None)
    target, url = _relayed(deployment.transport_url, relay.port)
    relay.target = target
    deployment.add_daemon(name, "volattach-conductor", overrides={
        "DEFAULT": {"transport_url": url,
                    "graceful_shutdown_timeout": str(TIMEOUT)}})
    log = deployment.log_path(name)
    since = os.path.getsize(log) if os.path.exists(log) else 0
    deployment.start(name)
    try:
        _started(deployment, name, since)
        if cut_broker:
            relay.close()
            time.sleep(1)       # the daemon notices: heartbeats, reconnects
        seconds, status = _stop_seconds(deployment, name)
    finally:
        relay.close()
        deployment.remove_daemon(name)
    assert seconds < TIMEOUT + MARGIN, (seconds, deployment.log_tail(name))
    if not cut_broker:
        assert status == 0, deployment.log_tail(name)
    else:
        # stopped in time, or gave up at the limit (status 1, logged)
        assert status in (0, 1), (status, deployment.log_tail(name))
        if status == 1:
            assert "graceful_shutdown_timeout" in deployment.log_tail(name)
