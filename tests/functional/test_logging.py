"""Logs that tell the truth, read as an operator reads them: through
oslo.log's ContextFormatter, over real HTTP to the in-process services.

- every line of a request names that request's id and caller, even when
  the worker thread served another caller before (one thread per server
  here, so that two requests surely share it);
- one access line per request on both services, for the answers of the
  handlers and of the middleware (401, 404 of an unknown path, 406, 413);
- a refusal that is the caller's fault (a device path in use, refused by
  the compute over RPC) leaves no ERROR and no traceback, and the client
  still gets its 409; a genuine failure still logs its traceback at ERROR;
- at DEBUG a workflow that fails says it rolls back, and each undo it
  runs, under the request's id.
"""
import io
import logging
import re
import uuid

import pytest
import requests

from tests import utils
from tests.integration import client as clients
from volattach import log_setup
from volattach.conf import CONF

# both requests of a test on the same worker thread of each server
CONF_OVERRIDES = {("wsgi", "threads"): 1}

ACCESS_LOGGER = "volattach.wsgi.access_log"


class _Captured:
    def __init__(self, stream):
        self.stream = stream

    def lines(self, *needles):
        """The captured lines that contain every one of ``needles``."""
        return [line for line in self.stream.getvalue().splitlines()
                if all(needle in line for needle in needles)]

    def text(self):
        return self.stream.getvalue()


def _capture(level):
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(log_setup.EscapingFormatter(config=CONF,
                                                     project="volattach"))
    root, ours = logging.getLogger(), logging.getLogger("volattach")
    levels = root.level, ours.level
    root.addHandler(handler)
    root.setLevel(level)
    ours.setLevel(level)
    try:
        yield _Captured(stream)
    finally:
        root.removeHandler(handler)
        root.setLevel(levels[0])
        ours.setLevel(levels[1])


@pytest.fixture
def logs():
    """Everything logged at INFO and above, formatted as the services
    format it (oslo.log's format, escaped: ``volattach.log_setup``)."""
    yield from _capture(logging.INFO)


@pytest.fixture
def debug_logs():
    """Everything logged, DEBUG included."""
    yield from _capture(logging.DEBUG)


def _rid(headers):
    return headers["x-openstack-request-id"]


def test_each_request_logs_its_own_id_and_caller(deployment, logs):
    alice = clients.ComputeClient(deployment.api_url, "alice:demo")
    bob = clients.ComputeClient(deployment.api_url, "bob:other")
    missing = str(uuid.uuid4())
    status, _, first = alice.show_server(missing)
    assert status == 404
    status, _, second = bob.show_server(missing)
    assert status == 404
    # the 404 is logged inside the request, from the thread's context
    refusals = logs.lines("returned 404", missing)
    assert len(refusals) == 2, logs.text()
    assert _rid(first) in refusals[0] and "alice demo" in refusals[0]
    assert _rid(second) in refusals[1], refusals[1]
    assert "bob other" in refusals[1], refusals[1]
    assert _rid(first) not in refusals[1] and "alice" not in refusals[1]


def _access_line(logs, headers):
    # written once the answer has left (after the client has it)
    lines = utils.until(lambda: logs.lines(ACCESS_LOGGER, _rid(headers)),
                        lambda found: len(found) >= 1)
    assert len(lines) == 1, logs.text()
    return lines[0]


def _line_re(method, target, status, microversion):
    return re.compile(r' "%s %s" status: %d len: \d+ microversion: %s '
                      r'time: \d+\.\d{6}$' % (method, re.escape(target),
                                              status, re.escape(microversion)))


# a body over [oslo_middleware] max_request_body_size (413, before auth)
TOO_BIG = b"[" + b" " * 200000 + b"]"


def _request(method, url, token, headers=None):
    all_headers = {"Accept": "application/json"}
    if token:
        all_headers["X-Auth-Token"] = token
    all_headers.update(headers or {})
    data = None
    if method == "POST":
        all_headers["Content-Type"] = "application/json"
        data = TOO_BIG
    response = requests.request(method, url, headers=all_headers, data=data,
                                timeout=clients.REQUEST_TIMEOUT)
    return response.status_code, response.headers


def _check_access_lines(logs, base_url, cases):
    for token, method, target, headers, status, version, caller in cases:
        answer, response_headers = _request(method, base_url + target, token,
                                            headers)
        assert answer == status, (target, answer)
        line = _access_line(logs, response_headers)
        assert " INFO %s " % ACCESS_LOGGER in line, line
        assert _line_re(method, target, status, version).search(line), line
        if caller:
            assert caller in line, line


def test_compute_api_access_log(deployment, logs):
    _check_access_lines(logs, deployment.api_url, [
        ("alice:demo", "GET", "/v2.1/servers?limit=1", {}, 200, "2.1",
         "alice demo"),
        (None, "GET", "/v2.1/servers", {}, 401, "-", None),
        ("alice:demo", "GET", "/v2.1/no-such-collection", {}, 404, "2.1",
         "alice demo"),
        ("alice:demo", "GET", "/v2.1/servers",
         {"OpenStack-API-Version": "compute 9.99"}, 406, "-", "alice demo"),
        ("alice:demo", "POST", "/v2.1/servers", {}, 413, "-", None),
    ])


def test_volume_service_access_log(deployment, logs):
    alice = clients.VolumeClient(deployment.volume_url, "alice:demo")
    status, body, headers = alice.create_volume(size=1)
    assert status == 202, body
    assert re.search(r' "POST /v3/demo/volumes" status: 202 ',
                     _access_line(logs, headers))
    _check_access_lines(logs, deployment.volume_url, [
        ("bob:other", "GET", "/v3/other/volumes?limit=1", {}, 200, "3.0",
         "bob other"),
        (None, "GET", "/v3/demo/volumes", {}, 401, "-", None),
        ("alice:demo", "GET", "/v3/demo/no-such-collection", {}, 404, "3.0",
         "alice demo"),
        ("alice:demo", "GET", "/v3/demo/volumes",
         {"OpenStack-API-Version": "volume 9.99"}, 406, "-", "alice demo"),
        ("alice:demo", "POST", "/v3/demo/volumes", {}, 413, "-", None),
    ])


def _new_server(api):
    status, body, _ = api.create_server(name="log-%s" % uuid.uuid4().hex[:8],
                                        microversion="2.37")
    assert status == 202, body
    api.wait_for_server_status(body["server"]["id"], "ACTIVE")
    return body["server"]["id"]


def _new_volume(volumes):
    status, body, _ = volumes.create_volume(size=1)
    assert status == 202, body
    volumes.wait_for_volume_status(body["volume"]["id"], "available")
    return body["volume"]["id"]


def test_refused_attach_logs_no_error_and_no_traceback(deployment, logs):
    api = clients.ComputeClient(deployment.api_url, "alice:demo")
    volumes = clients.VolumeClient(deployment.volume_url, "alice:demo")
    server_id = _new_server(api)
    first, second = _new_volume(volumes), _new_volume(volumes)
    status, body, _ = api.attach_volume(server_id, first, device="/dev/vdb")
    assert status == 200, body
    start = len(logs.text())
    status, body, headers = api.attach_volume(server_id, second,
                                              device="/dev/vdb")
    # the compute refused it over RPC; the API still maps the class to 409
    assert status == 409, body
    assert "/dev/vdb" in body["conflictingRequest"]["message"]
    volumes.wait_for_volume_status(second, "available")
    logged = logs.text()[start:]
    assert " ERROR " not in logged, logged
    assert "Traceback" not in logged, logged
    refused = [line for line in logged.splitlines()
               if "refused" in line and "/dev/vdb" in line]
    # once, at INFO, by the compute that refused it, for this request
    assert len(refused) == 1, logged
    assert " INFO volattach.rpc " in refused[0], refused[0]
    assert _rid(headers) in refused[0] and "alice demo" in refused[0]


def test_a_server_error_is_still_logged_with_its_traceback(deployment, logs):
    api = clients.ComputeClient(deployment.api_url, "alice:demo")
    volumes = clients.VolumeClient(deployment.volume_url, "alice:demo")
    server_id = _new_server(api)
    volume_id = _new_volume(volumes)
    CONF.set_override("fail_operations", ["attach"], group="fake_driver")
    try:
        start = len(logs.text())
        status, body, _ = api.attach_volume(server_id, volume_id)
    finally:
        CONF.clear_override("fail_operations", group="fake_driver")
    assert status == 500, body
    logged = logs.text()[start:]
    errors = [line for line in logged.splitlines() if " ERROR " in line]
    assert any("injected failure" in line for line in errors), logged
    assert any("Traceback" in line for line in errors), logged


def test_a_rollback_tells_each_undo_at_debug(deployment, debug_logs):
    api = clients.ComputeClient(deployment.api_url, "alice:demo")
    volumes = clients.VolumeClient(deployment.volume_url, "alice:demo")
    server_id = _new_server(api)
    volume_id = _new_volume(volumes)
    CONF.set_override("fail_operations", ["attach"], group="fake_driver")
    try:
        start = len(debug_logs.text())
        status, body, headers = api.attach_volume(server_id, volume_id)
    finally:
        CONF.clear_override("fail_operations", group="fake_driver")
    assert status == 500, body
    ours = [line for line in debug_logs.text()[start:].splitlines()
            if _rid(headers) in line and " DEBUG " in line]
    task = "AttachVolumeTask of %s: " % server_id
    told = [line.split(task, 1)[1] for line in ours if task in line]
    # the compute refused the attach (and unplugged it itself): the two
    # steps before it are undone, newest first
    rolling = [i for i, line in enumerate(told) if line.startswith(
        "rolling back 2 step(s) after VirtDriverError")]
    assert rolling, "\n".join(ours)
    undos = [line.split(" ")[1] for line in told[rolling[0] + 1:]
             if line.startswith("rollback: ")]
    assert undos == ["delete", "destroy"], told
