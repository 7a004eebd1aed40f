"""Drift repair after SIGKILL, through the real daemons (issue 7, part 3).

A deployment of its own (module scope): the computes' fake driver spends
seconds reserving a device, attaching and detaching, so that the conductor
can be SIGKILLed while the compute works on a step; the conductor's periodic
pass is off (``reconcile_interval = 0``) so that only the manual pass
repairs.  Each step of attach, detach and swap is interrupted ``ROUNDS``
times, each time on a fresh server and volume:

- attach, during the compute's reserve (``reserve_latency``): the conductor
  dies before ``attachment_create``; the compute's record create may still
  land (a record without attachment);
- attach, during the compute's attach (``attach_latency``): the volume is
  ``attaching`` with a record;
- detach, during the compute's detach (``detach_latency``): the volume is
  ``detaching``; the pass finishes the detach the user asked for (it ends
  ``available``, without a record), it does not roll it back;
- swap, during the compute's swap: the server's compute is SIGKILLed first so
  that the conductor blocks in its call, then the conductor is SIGKILLed: the
  new volume is reserved/attaching with no record, the old one ``detaching``.

Then ``volattach-manage attachments reconcile --grace-seconds 0`` runs once,
and every volume must be in-use with a record or available without one.
The counts (kills per step, drift found, repaired, left) are printed.
"""
import signal
import threading
import time
import uuid

import pytest
import requests

from tests.integration.client import ComputeClient, VolumeClient
from tests.integration.conftest import running_deployment

pytestmark = pytest.mark.integration

ROUNDS = 2
LATENCY = 4
# cinder calling swap: the service role in the server's project (admin)
SERVICE_TOKEN = "cinder:admin:service"


@pytest.fixture(scope="module")
def slow_deployment(tmp_path_factory):
    with running_deployment(tmp_path_factory.mktemp("kill-reconcile")) as dep:
        for name, host in dict(dep.compute_hosts).items():
            dep.add_daemon(name, "volattach-compute", overrides={
                "compute": {"host": host},
                "fake_driver": {"reserve_latency": LATENCY,
                                "attach_latency": LATENCY,
                                "detach_latency": LATENCY}})
            dep.restart(name)
        dep.add_daemon("conductor", "volattach-conductor", overrides={
            "conductor": {"reconcile_interval": 0}})
        dep.restart("conductor")
        yield dep


@pytest.fixture(scope="module")
def compute(slow_deployment):
    client = ComputeClient(slow_deployment.api_url, microversion="2.37")
    yield client
    client.close()


@pytest.fixture(scope="module")
def volumes(slow_deployment):
    client = VolumeClient(slow_deployment.volume_url)
    yield client
    client.close()


def _server(compute):
    status, body, _ = compute.create_server(name="k-%s" % uuid.uuid4().hex[:6])
    assert status == 202, body
    compute.wait_for_server_status(body["server"]["id"], "ACTIVE", timeout=120)
    return body["server"]["id"]



def _status(volumes, volume_id):
    status, body, _ = volumes.show_volume(volume_id)
    assert status == 200, body
    return body["volume"]["status"]


def _wait_status(volumes, volume_id, wanted, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _status(volumes, volume_id) in wanted:
            return
        time.sleep(0.1)
    raise AssertionError("volume %s never %s" % (volume_id, wanted))


def _attach(compute, volumes, server_id, volume_id):
    status, body, _ = compute.attach_volume(server_id, volume_id,
                                            microversion="2.1")
    assert status == 200, body
    volumes.wait_for_volume_status(volume_id, "in-use")


def _server_host(compute, server_id):
    _, body, _ = compute.show_server(server_id)
    return body["server"]["OS-EXT-SRV-ATTR:host"]


def _restart_killed(dep, name):
    since = time.time()
    dep.start(name)
    dep.wait_until_ready(fresh=name, since=since)


def _kill_conductor_and_restart(dep):
    dep.kill("conductor", signal.SIGKILL)
    _restart_killed(dep, "conductor")


def _attachments_of(compute, server_id):
    status, body, _ = compute.list_volume_attachments(server_id)
    assert status == 200, body
    return {a["volumeId"] for a in body["volumeAttachments"]}


def kill_attach_in_reserve(dep, compute, volumes):
    server, vol = _server(compute), volumes.create_available_volume()
    status, body, _ = compute.attach_volume(server, vol, microversion="2.101")
    assert status == 202, body
    time.sleep(1)                       # the compute sleeps in the reserve
    dep.kill("conductor", signal.SIGKILL)
    time.sleep(LATENCY)                 # its record create waits in the queue
    _restart_killed(dep, "conductor")
    return [(server, vol)]


def kill_attach_in_attach(dep, compute, volumes):
    server, vol = _server(compute), volumes.create_available_volume()
    status, body, _ = compute.attach_volume(server, vol, microversion="2.101")
    assert status == 202, body
    _wait_status(volumes, vol, ("attaching",), timeout=LATENCY * 3)
    time.sleep(0.5)                     # the compute is plugging
    _kill_conductor_and_restart(dep)
    return [(server, vol)]


def kill_detach(dep, compute, volumes):
    server, vol = _server(compute), volumes.create_available_volume()
    _attach(compute, volumes, server, vol)
    status, body, _ = compute.detach_volume(server, vol)
    assert status == 202, body
    _wait_status(volumes, vol, ("detaching",))
    time.sleep(1)                       # the compute is unplugging
    _kill_conductor_and_restart(dep)
    return [(server, vol)]


def kill_swap(dep, compute, volumes):
    server = _server(compute)
    old, new = (volumes.create_available_volume() for _ in range(2))
    _attach(compute, volumes, server, old)
    volumes.begin_migration(old)        # swaps happen only in a migration
    host = _server_host(compute, server)
    compute_name = next(n for n, h in dep.compute_hosts.items() if h == host)
    dep.kill(compute_name, signal.SIGKILL)
    swap = ComputeClient(dep.api_url, token=SERVICE_TOKEN)
    result = {}

    def do_swap():
        try:
            result["status"] = swap.request(
                "PUT", "/servers/%s/os-volume_attachments/%s" % (server, old),
                {"volumeAttachment": {"volumeId": new}},
                microversion="2.79")[0]
        except requests.RequestException as exc:   # API waiting on a call
            result["status"] = repr(exc)
    thread = threading.Thread(target=do_swap, daemon=True)
    thread.start()
    _wait_status(volumes, old, ("detaching",), timeout=30)
    time.sleep(1.5)                     # the conductor waits on the compute
    dep.kill("conductor", signal.SIGKILL)
    since = time.time()
    dep.start(compute_name)
    dep.start("conductor")
    dep.wait_until_ready(fresh="conductor", since=since)
    dep.wait_until_ready(fresh=compute_name, since=since)
    thread.join(60)
    swap.close()
    return [(server, old), (server, new)]


STEPS = [("attach/reserve", kill_attach_in_reserve),
         ("attach/attach", kill_attach_in_attach),
         ("detach/detach", kill_detach),
         ("swap/swap", kill_swap)]


def _volume_state(dep, volumes, compute, server, vol):
    status = _status(volumes, vol)
    recorded = vol in _attachments_of(compute, server)
    return status, recorded


def _ok(state):
    status, recorded = state
    return (status == "in-use" and recorded) or (status == "available"
                                                 and not recorded)


def _parse_counts(stdout):
    line = stdout.strip().splitlines()[-1]
    counts = {}
    for part in line.split(": ", 1)[1].split(", "):
        key, value = part.rsplit(" ", 1)
        counts[key] = int(value)
    return counts


def test_sigkill_at_each_step_then_one_pass_leaves_no_drift(
        slow_deployment, compute, volumes, capsys):
    dep = slow_deployment
    touched = []
    kills = {}
    for name, step in STEPS:
        for _ in range(ROUNDS):
            touched += [(name, s, v) for s, v in step(dep, compute, volumes)]
            kills[name] = kills.get(name, 0) + 1
    time.sleep(2)                       # stale messages of the dead settle

    before = {(s, v): _volume_state(dep, volumes, compute, s, v)
              for _, s, v in touched}
    drifted = sorted(v for (s, v), st in before.items() if not _ok(st))

    dry = dep.manage("attachments", "reconcile", "--grace-seconds", "0",
                     "--dry-run")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    result = dep.manage("attachments", "reconcile", "--grace-seconds", "0")
    assert result.returncode == 0, result.stdout + result.stderr
    counts = _parse_counts(result.stdout)

    after = {(s, v): _volume_state(dep, volumes, compute, s, v)
             for _, s, v in touched}
    left = {key: st for key, st in after.items() if not _ok(st)}
    with capsys.disabled():
        print("\nkills per step: %s" % kills)
        print("volumes inconsistent before the pass: %d of %d"
              % (len(drifted), len(touched)))
        print("pass: %s" % counts)
        print("left inconsistent after one pass: %d" % len(left))
        print(result.stdout)
    assert counts["failed"] == 0, result.stdout
    assert left == {}, (left, result.stdout)
    detached = {(s, v): after[(s, v)] for name, s, v in touched
                if name == "detach/detach"}
    assert set(detached.values()) == {("available", False)}, detached
    # the drift was real: every step left something for the pass
    assert drifted, before
    assert counts["repaired"] >= len(drifted)
    # and a second pass finds nothing of these volumes
    again = dep.manage("attachments", "reconcile", "--grace-seconds", "0")
    assert again.returncode == 0
    assert not any(v in again.stdout for _, _, v in touched), again.stdout
