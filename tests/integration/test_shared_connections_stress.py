"""Stress of shared host connections (issue 7) across real processes.

A deployment of its own over RabbitMQ and PostgreSQL: the volume service
with ``[volume] shared_targets = True`` (every volume attached to a host
rides on ONE target of that host) and a single compute, ``compute1``, whose
fake driver writes its counters to ``[fake_driver] stats_file`` (the only
window into a compute process: no debug endpoint in the API).

Many client threads attach and detach different volumes on several servers
of that one host, in random interleavings, through the HTTP API.  After each
attach the attachment must be connected on the host, and stay so until its
detach; at the end the fake host must have recorded no lost connection (a
logout of the target while another attachment used it) and hold no
connection and no target.
"""
import concurrent.futures
import json
import random
import threading
import time

import pytest

from tests import utils
from tests.integration import client as clients
from tests.integration import conftest as harness

HOST = "compute1"
SERVERS = 8
VOLUMES = 24
CYCLES = 6            # attach+detach cycles per volume: 2*24*6 = 288 operations
THREADS = 12


@pytest.fixture(scope="module")
def shared_deployment(tmp_path_factory):
    utils.require_env(utils.RABBIT_URL_ENV, "the shared-connections deployment")
    utils.require_env(utils.PG_URL_ENV, "the shared-connections deployment")
    daemons = {name: harness.DAEMONS[name] for name in ("volume", "conductor", "api")}
    workdir = tmp_path_factory.mktemp("shared-connections")
    with harness.running_deployment(workdir, daemons=daemons) as dep:
        dep.add_daemon("volume", "volattach-volume",
                       overrides={"volume": {"shared_targets": "True"}})
        dep.restart("volume")
        dep.stats_path = workdir / "compute1-fake-driver.json"
        dep.add_daemon(HOST, "volattach-compute",
                       overrides={"compute": {"host": HOST},
                                  "fake_driver": {"stats_file": str(dep.stats_path)}})
        dep.start(HOST)
        dep.wait_until_ready()
        yield dep


def _stats(dep):
    try:
        return json.loads(dep.stats_path.read_text())
    except FileNotFoundError:
        return {"connected": [], "lost_connections": []}


def test_interleaved_attach_detach_never_lose_a_shared_connection(shared_deployment):
    dep = shared_deployment
    local = threading.local()

    def api():
        if not hasattr(local, "api"):
            local.api = clients.ComputeClient(dep.api_url, "alice:demo")
            local.volumes = clients.VolumeClient(dep.volume_url, "alice:demo")
        return local.api, local.volumes

    def new_server(n):
        compute, _ = api()
        status, body, _ = compute.create_server(name="stress-%d" % n,
                                                microversion="2.37")
        assert status == 202, body
        compute.wait_for_server_status(body["server"]["id"], "ACTIVE")
        return body["server"]["id"]

    def new_volume(_):
        _, volumes = api()
        status, body, _ = volumes.create_volume(size=1)
        assert status == 202, body
        volumes.wait_for_volume_status(body["volume"]["id"], "available")
        return body["volume"]["id"]

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        servers = list(pool.map(new_server, range(SERVERS)))
        vols = list(pool.map(new_volume, range(VOLUMES)))

        rng = random.Random(7)
        plan = {v: [rng.choice(servers) for _ in range(CYCLES)] for v in vols}
        overlaps = []    # attachments connected on the host beside ours
        targets = set()
        attached_checks = [0]

        def cycles(volume_id):
            compute, volumes = api()
            local_rng = random.Random(volume_id)
            for server_id in plan[volume_id]:
                status, body, _ = compute.attach_volume(server_id, volume_id,
                                                        microversion="2.1")
                assert status == 200, body
                status, body, _ = compute.show_volume_attachment(
                    server_id, volume_id, microversion="2.89")
                assert status == 200, body
                attachment_id = body["volumeAttachment"]["attachment_id"]
                status, body, _ = volumes.request(
                    "GET", volumes._path(f"/attachments/{attachment_id}"))
                assert status == 200, body
                info = body["attachment"]["connection_info"]
                targets.add(info["shared_target_id"])
                # connected on the host now and after others came and went
                for _ in range(2):
                    stats = _stats(dep)
                    assert attachment_id in stats["connected"], attachment_id
                    attached_checks[0] += 1
                    overlaps.append(len(stats["connected"]) - 1)
                    time.sleep(local_rng.uniform(0, 0.1))
                status, body, _ = compute.detach_volume(server_id, volume_id)
                assert status == 202, body
                volumes.wait_for_volume_status(volume_id, "available", timeout=60)
                compute.wait_for_volume_attachment_gone(server_id, volume_id)
            return len(plan[volume_id])

        done = sum(job.result(timeout=300) for job in
                   [pool.submit(cycles, v) for v in rng.sample(vols, len(vols))])
    elapsed = time.monotonic() - started

    stats = _stats(dep)
    operations = 2 * done
    report = {"operations": operations, "attach_checks": attached_checks[0],
              "interleaved_checks": sum(1 for n in overlaps if n > 0),
              "max_others_connected": max(overlaps),
              "connects": stats["connects"], "disconnects": stats["disconnects"],
              "target_connects": stats["target_connects"],
              "target_disconnects": stats["target_disconnects"],
              "target_reuses": stats["target_reuses"],
              "max_target_users": stats["max_target_users"],
              "seconds": round(elapsed, 1)}
    print("shared-connections stress:", json.dumps(report))

    assert done == VOLUMES * CYCLES
    assert len(targets) == 1                      # one shared target for the host
    assert stats["lost_connections"] == []
    assert stats["connections"] == 0 and stats["targets"] == 0
    assert stats["connects"] == stats["disconnects"] == done
    assert stats["target_connects"] == stats["target_disconnects"] >= 1
    # it did interleave: attachments shared the live target
    assert report["interleaved_checks"] > 0 and stats["max_target_users"] > 1
    assert stats["target_reuses"] > 0

    compute, _ = api()
    for server_id in servers:
        assert compute.delete_server(server_id)[0] == 204
    for server_id in servers:
        compute.wait_for_server_deleted(server_id)
