"""volattach-all's log as an operator reads it: a real process started
with ``--debug`` and no ``--log-file``, its stdout and stderr apart.

- its lines are on stderr, stdout holds its one banner line;
- no request can forge a line (``tests/log_forgery.py``: each control
  character through each logged field, one access line per request);
- ``--debug`` tells the story of one attach with the request id of the
  API's answer: each RPC sent and received, each volume call, each
  workflow step, the driver and backend calls (the rollback's lines:
  tests/functional/test_logging.py);
- the start (version, configuration file, addresses) and the stop are
  logged at INFO.
"""
import re

import pytest

from tests import log_forgery
from tests import utils
from tests.functional.allinone_process import AllInOneProcess
from tests.integration import client as clients

PREFIX = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \d+ "
                    r"(DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+ ")


@pytest.fixture(scope="module")
def allinone(tmp_path_factory):
    process = AllInOneProcess(tmp_path_factory.mktemp("log-lines"),
                              log_file=False, extra_args=["--debug"])
    process.start()
    try:
        yield process
    finally:
        process.stop()


def _stderr(process):
    return process.stderr_path.read_text(encoding="utf-8", errors="replace")


def _settled(process, done):
    """stderr once ``done(text)`` (the access line of an answer is written
    once the answer has left)."""
    return utils.until(lambda: _stderr(process), done, timeout=10)


def test_request_values_cannot_forge_lines(allinone):
    start = len(_stderr(allinone))
    sent = log_forgery.send_forgeries(allinone.api_url, allinone.volume_url)
    text = _settled(allinone, lambda t: all(
        log_forgery.access_lines(t, s.request_id) for s in sent))[start:]
    log_forgery.check_lines(text, sent)
    for line in text.rstrip("\n").split("\n"):
        assert PREFIX.match(line), line


def _lines_with(text, *needles):
    return [line for line in text.split("\n")
            if all(needle in line for needle in needles)]


def test_debug_tells_the_story_of_one_attach(allinone):
    api = clients.ComputeClient(allinone.api_url, "alice:demo")
    volumes = clients.VolumeClient(allinone.volume_url, "alice:demo")
    server_id = api.create_active_server()
    volume_id = volumes.create_available_volume()
    start = len(_stderr(allinone))
    status, body, headers = api.attach_volume(server_id, volume_id)
    assert status == 200, body
    rid = headers["x-openstack-request-id"]
    text = _settled(allinone, lambda t: log_forgery.access_lines(
        t, rid))[start:]
    story = [line for line in text.split("\n") if rid in line]
    hops = [
        # API -> conductor
        ("RPC call attach_volume (version ", " to conductor"),
        ("RPC received attach_volume (version ", " on conductor"),
        ("AttachVolumeTask of %s: start" % server_id,),
        # conductor -> compute, and the compute's driver
        ("RPC call reserve_block_device_name (version ", " to compute."),
        ("RPC received reserve_block_device_name (version ",
         " on compute."),
        ("driver get_device_name_for_instance %s" % server_id,),
        ("step done (undo: destroy record ",),
        # conductor -> volume service, and the backend there
        ("volume call POST /v3/demo/attachments: 200",),
        ("backend fake initialize_connection %s" % volume_id,),
        ("volume call PUT /v3/demo/attachments/", ": 200"),
        ("RPC call attach_volume (version ", " to compute."),
        ("RPC received attach_volume (version ", " on compute."),
        ("driver attach_volume %s" % server_id,),
        ("step done (undo: unplug volume %s)" % volume_id,),
        ("volume call POST /v3/demo/attachments/", "/action: 204"),
        ("AttachVolumeTask of %s: done" % server_id,),
    ]
    for needles in hops:
        found = _lines_with("\n".join(story), *needles)
        assert found, (needles, "\n".join(story))
        assert all(" DEBUG " in line for line in found), found
    # the volume service's lines name the API's request as their global one
    assert _lines_with(text, log_forgery.ACCESS_LOGGER, "[%s req-" % rid,
                       "POST /v3/demo/attachments")


def test_start_and_stop_are_logged_and_stdout_is_the_banner(allinone):
    allinone.stop()
    assert allinone.proc.returncode == 0
    text = _stderr(allinone)
    lines = text.rstrip("\n").split("\n")
    assert re.search(
        r" INFO volattach\.log_setup \[-\] volattach-all \S+ started; "
        r"config files: %s; listening on: compute API http://127\.0\.0\.1:%d,"
        r" volume service http://127\.0\.0\.1:%d$" % (
            re.escape(str(allinone.config_file)), allinone.api_port,
            allinone.volume_port), text, re.M), text[:3000]
    assert lines[-1].endswith(
        " INFO volattach.log_setup [-] volattach-all stopped"), lines[-1]
    stdout = allinone.stdout_path.read_text().splitlines()
    assert len(stdout) == 1 and stdout[0].startswith(
        "volattach-all: compute API http://127.0.0.1:%d/v2.1"
        % allinone.api_port), stdout
