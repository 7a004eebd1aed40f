"""The switch of a running deployment from classic to quorum queues (README
"Faults", issue 31), with requests in flight, loses none.

A deployment of its own (its own virtual host, classic queues: the default)
whose computes take ``ATTACH_LATENCY`` per attach, so that requests are
still queued and running when the procedure starts:

1. ``REQUESTS`` attaches at 2.101 (each 202) over two servers;
2. the API stops at once (no new request); ``volattach-manage rpc queues``
   until it reports nothing queued (exit status 0);
3. once no volume is attaching (the workflows are done), the computes
   stop, then the conductor (it answers their last heartbeats);
   ``volattach-manage rpc queues --delete-drained-classic``
   deletes the drained classic queues and the non-durable control exchange;
4. ``[oslo_messaging_rabbit] rabbit_quorum_queue = true`` in the config,
   every daemon starts again.

Then every volume accepted before is in-use and listed by its server (none
lost), the conductor's and computes' queues are quorum queues, and a
detach of each goes through them.
"""
import pytest

from tests.integration import conftest
from tests.integration.client import ComputeClient, VolumeClient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

REQUESTS = 6
ATTACH_LATENCY = 0.5    # seconds per attach on the computes
ASYNC = "2.101"
DRAIN_WAIT = 60


def _prepare(dep):
    with open(dep.conf_path, "a") as conf:
        conf.write(f"\n[fake_driver]\nattach_latency = {ATTACH_LATENCY}\n"
                   "\n[conductor]\nreconcile_interval = 0\n")


def _queues(dep, *args):
    result = dep.manage("rpc", "queues", *args, timeout=120)
    return result.returncode, result.stdout + result.stderr


def _wait_drained(dep):
    for _ in range(DRAIN_WAIT):
        code, out = _queues(dep)
        if code == 0:
            return out
    raise AssertionError("the queues did not drain:\n" + out)


def test_classic_to_quorum_with_requests_in_flight(tmp_path):
    with conftest.running_deployment(tmp_path, prepare=_prepare) as dep:
        compute = ComputeClient(dep.api_url)
        volume = VolumeClient(dep.volume_url)
        servers = [compute.create_active_server() for _ in range(2)]
        volumes = [volume.create_available_volume() for _ in range(REQUESTS)]
        placed = {}
        for index, volume_id in enumerate(volumes):
            server_id = servers[index % 2]
            code, body, _ = compute.attach_volume(server_id, volume_id,
                                                  microversion=ASYNC)
            assert code == 202, body
            placed[volume_id] = server_id

        # 2. no new request; wait until nothing is queued
        dep.stop("api")
        out = _wait_drained(dep)
        assert "classic" in out, out
        # 3. the workflows end (the volume service shows no volume
        # attaching), then the consumers stop: the computes first (their
        # heartbeats are calls to the conductors), then the conductor
        for volume_id in placed:
            volume.wait_for_volume_status(volume_id, "in-use")
        for name in ("compute1", "compute2", "conductor"):
            dep.stop(name)
        code, out = _queues(dep)
        assert code == 0, out
        code, out = _queues(dep, "--delete-drained-classic")
        assert code == 0, out
        assert "deleted conductor\n" in out, out
        assert "deleted compute.compute1\n" in out, out
        assert "deleted exchange" in out, out
        # 4. the new setting, every daemon again
        with open(dep.conf_path, "a") as conf:
            conf.write("\n[oslo_messaging_rabbit]\nrabbit_quorum_queue = true\n")
        for name in ("conductor", "compute1", "compute2", "api"):
            dep.start(name)
        dep.wait_until_ready()
        compute = ComputeClient(dep.api_url)

        code, out = _queues(dep)
        assert code == 0, out
        rows = {line.split("|")[1].strip(): line.split("|")[2].strip()
                for line in out.splitlines() if line.startswith("| ")}
        for name in ("conductor", "conductor_compute_task", "compute",
                     "compute.compute1", "compute.compute2"):
            assert rows.get(name) == "quorum", out
        assert "classic" not in out, out

        # nothing accepted before was lost
        for volume_id, server_id in placed.items():
            code, body, _ = compute.show_volume_attachment(server_id,
                                                           volume_id)
            assert code == 200, body
        # and the quorum queues carry the next requests
        for volume_id, server_id in placed.items():
            code, body, _ = compute.detach_volume(server_id, volume_id,
                                                  microversion=ASYNC)
            assert code == 202, body
        for volume_id in placed:
            volume.wait_for_volume_status(volume_id, "available")
