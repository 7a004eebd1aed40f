"""Generic helpers for volattach's test suites (no fixtures here)."""
import os
import socket
import time

import pytest

RABBIT_URL_ENV = "VOLATTACH_TEST_RABBIT_URL"
PG_URL_ENV = "VOLATTACH_TEST_PG_URL"


def free_port(host="127.0.0.1"):
    """A TCP port on ``host`` that nothing listens on right now.

    The port is only free until someone else takes it: bind it soon.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def in_ci():
    """True under CI (``CI`` set to anything but empty/0/false/no)."""
    return os.environ.get("CI", "").strip().lower() not in (
        "", "0", "false", "no")


def require_env(name, what):
    """The value of environment variable ``name``, needed for ``what``.

    Unset: the calling test skips, or fails under CI, where every service
    must be there (``scripts/test`` sets these variables).
    """
    value = os.environ.get(name)
    if value:
        return value
    message = (f"{what} needs {name} (scripts/test starts the services and "
               f"sets it)")
    if in_ci():
        pytest.fail(f"CI: {message}", pytrace=False)
    pytest.skip(message)


def read_http_request(rfile):
    """The next raw HTTP request (head and Content-Length body) from a
    server-side ``rfile``, or None when the client closed the connection:
    for the scripted loopback servers of the HTTP client tests."""
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        line = rfile.readline()
        if not line:
            return None
        head += line
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return head + rfile.read(length)


def until(fetch, done, timeout=5.0, interval=0.01):
    """``fetch()`` once ``done`` holds for its value, for what another
    thread writes a moment later; the last value when ``timeout`` seconds
    pass first (the caller's assertion then shows it)."""
    deadline = time.monotonic() + timeout
    while True:
        value = fetch()
        if done(value) or time.monotonic() >= deadline:
            return value
        time.sleep(interval)
