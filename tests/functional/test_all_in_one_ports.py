"""volattach-all as a user runs it: ports that follow each other, a port in
use, and drift repair on the embedded defaults (issue 22, items 3 and 4).

Each test starts ``volattach-all`` as its own process
(``allinone_process``) on free ports, never 8774/8776.
"""
import os
import socket
import subprocess
import time

import pytest

from tests.functional.allinone_process import AllInOneProcess
from tests.functional.allinone_process import port_open
from tests.functional.allinone_process import script
from tests.integration import client as clients

pytestmark = pytest.mark.timeout(300)

TOKEN = "alice:demo"


def _held_port():
    """A socket listening on a free loopback port (someone else's)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock, sock.getsockname()[1]




def _orphan_attachment(volumes, volume_id, server_id):
    """A reservation no block-device record points at: what a conductor
    killed after attachment_create leaves."""
    status, body, _ = volumes.request(
        "POST", volumes._path("/attachments"),
        {"attachment": {"volume_uuid": volume_id,
                        "instance_uuid": server_id}}, microversion="3.27")
    assert status == 200, body
    volumes.wait_for_volume_status(volume_id, "reserved")
    return body["attachment"]["id"]


def _attachment_ids(volumes, volume_id):
    status, body, _ = volumes.list_attachments(microversion="3.27",
                                               volume_id=volume_id)
    assert status == 200, body
    return [a["id"] for a in body["attachments"]]


@pytest.fixture
def moved(tmp_path):
    """volattach-all with [api] and [volume] ports moved (and nothing on
    8776 of its own), a periodic reconcile pass every second."""
    deployment = AllInOneProcess(tmp_path, options={
        ("conductor", "reconcile_interval"): 1,
        ("conductor", "reconcile_grace_period"): 3,
    }).start()
    yield deployment
    deployment.stop()


def test_moved_ports_attach_and_the_periodic_pass_repairs(moved):
    """The compute side finds the volume service on its moved port (the
    Cinder client follows [volume] port), and the all-in-one's periodic
    reconcile pass repairs drift with its own noauth admin context."""
    api = clients.ComputeClient(moved.api_url, token=TOKEN)
    volumes = clients.VolumeClient(moved.volume_url, token=TOKEN)
    server = api.create_active_server()
    attached = volumes.create_available_volume()
    started = time.monotonic()
    status, body, _ = api.attach_volume(server, attached, microversion="2.1")
    assert status == 200, body
    assert body["volumeAttachment"]["device"] == "/dev/vdb"
    assert time.monotonic() - started < 10   # no retrying a wrong endpoint
    volumes.wait_for_volume_status(attached, "in-use")

    orphaned = volumes.create_available_volume()
    orphan = _orphan_attachment(volumes, orphaned, server)
    # older than the grace period (3 s), then the next pass (every 1 s)
    volumes.wait_for_volume_status(orphaned, "available", timeout=30)
    assert _attachment_ids(volumes, orphaned) == []
    assert ("reconcile: repaired orphan_attachment" in moved.log()
            and orphan in moved.log()), moved.log()
    # the real attachment is left alone
    assert volumes.show_volume(attached)[1]["volume"]["status"] == "in-use"


def _run(argv, env, timeout=60):
    return subprocess.run(argv, env=env, capture_output=True, text=True,
                          timeout=timeout)


def _one_line(stderr):
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.mark.parametrize("taken", ["api", "volume"])
def test_all_in_one_port_in_use_is_one_line_and_nothing_starts(
        tmp_path, taken):
    holder, port = _held_port()
    with holder:
        deployment = AllInOneProcess(tmp_path)
        other = deployment.volume_port if taken == "api" else deployment.api_port
        deployment.config_file.write_text(
            deployment.config_file.read_text().replace(
                "port = %d" % (deployment.api_port if taken == "api"
                               else deployment.volume_port),
                "port = %d" % port))
        result = _run([script("volattach-all"), "--config-file",
                            str(deployment.config_file)], deployment.env)
        assert result.returncode == 1, result
        assert _one_line(result.stderr) == (
            "volattach-all: cannot listen on 127.0.0.1:%d ([%s] listen/port): "
            "Address already in use" % (port, taken))
        assert result.stdout == ""
        # nothing else started: the other port is free, no database made
        assert not port_open(other)
        assert not list(deployment.state_path.glob("*.sqlite"))


@pytest.mark.parametrize("daemon,group", [("volattach-api", "api"),
                                          ("volattach-volume", "volume")])
def test_daemon_port_in_use_is_one_line_before_anything_starts(
        tmp_path, daemon, group):
    """gunicorn's daemons: the socket is bound before gunicorn (and, for
    the volume service, before its migrations and registration)."""
    holder, port = _held_port()
    with holder:
        conf = tmp_path / "volattach.conf"
        conf.write_text("[DEFAULT]\nstate_path = %s\n[%s]\nport = %d\n"
                        % (tmp_path / "state", group, port))
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("OS_")}
        result = _run([script(daemon), "--config-file", str(conf)], env)
        assert result.returncode == 1, result
        assert _one_line(result.stderr) == (
            "%s: cannot listen on 127.0.0.1:%d ([%s] listen/port): "
            "Address already in use" % (daemon, port, group))
        assert not list((tmp_path / "state").glob("*.sqlite"))


def test_manage_reconcile_on_the_embedded_defaults(tmp_path):
    """``volattach-manage attachments reconcile`` with no configuration
    file, on the state of a volattach-all run with none either: noauth
    towards the volume service, an admin context of its own."""
    deployment = AllInOneProcess(tmp_path, config_file=False).start()
    try:
        api = clients.ComputeClient(deployment.api_url, token=TOKEN)
        volumes = clients.VolumeClient(deployment.volume_url, token=TOKEN)
        server = api.create_active_server()
        vid = volumes.create_available_volume()
        orphan = _orphan_attachment(volumes, vid, server)

        result = deployment.manage("attachments", "reconcile", "--dry-run",
                                   "--grace-seconds", "0")
        assert result.returncode == 0, result
        assert "Traceback" not in result.stderr, result.stderr
        rows = [line for line in result.stdout.splitlines()
                if line.startswith("| orphan_attachment")]
        assert len(rows) == 1 and orphan in rows[0], result.stdout
        assert "would repair" in rows[0]
        assert "dry run (grace 0s): found 1" in result.stdout
        assert _attachment_ids(volumes, vid) == [orphan]

        result = deployment.manage("attachments", "reconcile",
                                   "--grace-seconds", "0")
        assert result.returncode == 0, result
        assert "repaired 1" in result.stdout, result.stdout
        assert _attachment_ids(volumes, vid) == []
        volumes.wait_for_volume_status(vid, "available")
    finally:
        deployment.stop()
    assert (deployment.home / ".volattach" / "volattach.sqlite").exists()
