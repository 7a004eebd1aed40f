"""Errors at the edges speak the APIs' format (issue 33, item 6).

Real servers, raw sockets: volattach-all (waitress) and volattach-volume
(gunicorn) answer a body over the limit with JSON ``overLimit`` naming the
one limit, a control character in a header with JSON ``badRequest``, and
a form-encoded body on the volume API with 415 ``badMediaType`` as the
compute API does (and as Cinder 29 does: ``Unsupported Content-Type``).
"""
import json
import os
import signal
import socket
import subprocess
import time

import pytest

from tests.functional.allinone_process import AllInOneProcess
from tests.functional.allinone_process import port_open
from tests.functional.allinone_process import script
from tests import utils

pytestmark = pytest.mark.timeout(180)

TOKEN = "alice:demo"
LIMIT_MESSAGE = ("Request is too large: the body limit is 114688 bytes "
                 "([oslo_middleware] max_request_body_size).")


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    dep = AllInOneProcess(tmp_path_factory.mktemp("edges")).start()
    yield dep
    dep.stop()


def exchange(port, data):
    """Send ``data``, read until the server closes: (status, head, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass     # refused before the whole body was read
        out = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            out += chunk
            if b"\r\n\r\n" in out:
                head, _, rest = out.partition(b"\r\n\r\n")
                length = [int(line.split(b":")[1]) for line in
                          head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:")]
                if length and len(rest) >= length[0]:
                    break
    head, _, body = out.partition(b"\r\n\r\n")
    return int(head.split()[1]), head.decode("latin-1"), body


def _post(path, body, content_type="application/json", extra=b""):
    return (b"POST %s HTTP/1.1\r\nHost: x\r\nX-Auth-Token: %s\r\n"
            b"Content-Type: %s\r\nContent-Length: %d\r\n%s"
            b"Connection: close\r\n\r\n"
            % (path.encode(), TOKEN.encode(), content_type.encode(),
               len(body), extra) + body)


def _json_fault(head, body, name, code):
    assert "application/json" in head.lower(), head
    fault = json.loads(body)
    assert list(fault) == [name], fault
    assert fault[name]["code"] == code
    return fault[name]["message"]


@pytest.mark.parametrize("api", ["compute", "volume"])
@pytest.mark.parametrize("size", [200 * 1024, 2 * 1024 * 1024])
def test_body_over_the_limit_is_json_overlimit_naming_it(deployment, api,
                                                         size):
    """Over the limit (the application's 413) and over the transport cap
    of 1 MiB (waitress's 413): the same body, the same limit."""
    port, path = ((deployment.api_port, "/v2.1/servers") if api == "compute"
                  else (deployment.volume_port, "/v3/demo/volumes"))
    status, head, body = exchange(port, _post(path, b"x" * size))
    assert status == 413
    assert _json_fault(head, body, "overLimit", 413) == LIMIT_MESSAGE


@pytest.mark.parametrize("api", ["compute", "volume"])
def test_control_character_in_a_header_is_json_badrequest(deployment, api):
    port = deployment.api_port if api == "compute" else deployment.volume_port
    status, head, body = exchange(
        port, b"GET / HTTP/1.1\r\nHost: x\r\nX-Evil: a\x01b\r\n"
              b"Connection: close\r\n\r\n")
    assert status == 400
    assert _json_fault(head, body, "badRequest", 400)


@pytest.mark.parametrize("api", ["compute", "volume"])
def test_form_encoded_body_is_415_on_both_apis(deployment, api):
    port, path, form = (
        (deployment.api_port, "/v2.1/servers", b"server=x")
        if api == "compute" else
        (deployment.volume_port, "/v3/demo/volumes", b"volume=x&size=1"))
    status, head, body = exchange(port, _post(
        path, form, content_type="application/x-www-form-urlencoded"))
    assert status == 415
    assert _json_fault(head, body, "badMediaType", 415) == (
        "Unsupported Content-Type")


def test_gunicorn_daemon_refusals_are_json(tmp_path):
    """volattach-volume (gunicorn): a control character in a header."""
    port = utils.free_port()
    conf = tmp_path / "volume.conf"
    conf.write_text("[DEFAULT]\nstate_path = %s\n[volume]\nport = %d\n"
                    "auth_strategy = noauth\n" % (tmp_path / "state", port))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    proc = subprocess.Popen([script("volattach-volume"), "--config-file",
                             str(conf), "--log-file", str(tmp_path / "log")],
                            env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not port_open(port):
            assert proc.poll() is None, (tmp_path / "log").read_text()
            assert time.monotonic() < deadline
            time.sleep(0.2)
        status, head, body = exchange(
            port, b"GET / HTTP/1.1\r\nHost: x\r\nX-Evil: a\x01b\r\n"
                  b"Connection: close\r\n\r\n")
        assert status == 400
        assert _json_fault(head, body, "badRequest", 400)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
