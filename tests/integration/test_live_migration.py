"""os-migrateLive of a server with volumes through the real daemons (two
computes over RabbitMQ): each volume gets a second attachment on the
destination, connected there, then the switch, then the source attachment
goes; an injected failure (``[fake_driver] fail_operations`` of the
destination compute, set by restarting it with an override) rolls back.

The computes are restarted with ``[fake_driver] stats_file`` so the test can
see their connections and guests; the module puts them back as they were.
"""
import json
import time
import uuid

import pytest

from tests.integration.client import ADMIN_TOKEN, ComputeClient, VolumeClient

pytestmark = pytest.mark.integration

WAIT = 90


def _configure(deployment, fail=None, only=None, fail_host="compute2"):
    """(Re)start the computes (``only`` that host) with a stats file (and
    ``fail`` operations on ``fail_host``); return {host: stats path}.  A
    restart loses the fake guests of its host: restart only what a test
    needs."""
    paths = {}
    for name, host in dict(deployment.compute_hosts).items():
        path = deployment.workdir / f"lm-stats-{host}.json"
        paths[host] = path
        if only and host != only:
            continue
        fake = {"stats_file": str(path)}
        if fail and host == fail_host:
            fake["fail_operations"] = ",".join(fail)
        deployment.add_daemon(name, "volattach-compute",
                              overrides={"compute": {"host": host},
                                         "fake_driver": fake})
        deployment.restart(name)
    return paths


@pytest.fixture(scope="module")
def stats(deployment):
    original = {name: (deployment.daemons[name], list(deployment.conf_files[name]))
                for name in deployment.compute_hosts}
    hosts = dict(deployment.compute_hosts)
    paths = _configure(deployment)
    yield paths
    for name, (daemon, files) in original.items():
        deployment.daemons[name] = daemon
        deployment.conf_files[name] = files
        deployment.compute_hosts[name] = hosts[name]
        deployment.restart(name)


def _read(path):
    for _ in range(50):
        try:
            return json.loads(path.read_text())
        except (FileNotFoundError, ValueError):
            time.sleep(0.1)
    return {"connected": [], "guests": 0}


@pytest.fixture
def compute(deployment):
    client = ComputeClient(deployment.api_url, token=ADMIN_TOKEN, microversion="2.37")
    yield client
    client.close()


@pytest.fixture
def volumes(deployment):
    client = VolumeClient(deployment.volume_url)
    yield client
    client.close()


def _server_on(compute, host):
    status, body, _ = compute.create_server(
        name="lm-%s" % uuid.uuid4().hex[:6], availability_zone="nova:%s" % host)
    assert status == 202, body
    server_id = body["server"]["id"]
    compute.wait_for_server_status(server_id, "ACTIVE", timeout=WAIT)
    return server_id



def _all_rows(volumes, volume_id):
    status, body, _ = volumes.request(
        "GET", volumes._path("/attachments/detail"), params={"volume_id": volume_id})
    assert status == 200, body
    return body["attachments"]


def _setup(compute, volumes):
    server = _server_on(compute, "compute1")
    vols = [volumes.create_available_volume(timeout=WAIT) for _ in range(2)]
    for volume_id, mode in zip(vols, (None, "ro")):
        fields = {"attach_mode": mode} if mode else {}
        status, body, _ = compute.attach_volume(server, volume_id,
                                                microversion="2.105", **fields)
        assert status == 202, body
        volumes.wait_for_volume_status(volume_id, "in-use", timeout=WAIT)
    return server, vols


def _cleanup(compute, volumes, server, vols):
    compute.delete_server(server)
    compute.wait_for_server_deleted(server, timeout=WAIT)
    for volume_id in vols:
        volumes.wait_for_volume_status(volume_id, "available", timeout=WAIT)
        volumes.delete_volume(volume_id)


def test_live_migrate_server_with_volumes(stats, compute, volumes):
    server, vols = _setup(compute, volumes)
    before = {v: volumes.attachment_hosts(v) for v in vols}
    assert all(rows[0][1] == "compute1" for rows in before.values())
    srv = compute.live_migrate(server, "compute2", timeout=WAIT)
    assert srv["status"] == "ACTIVE"
    assert compute.server_host(server) == "compute2"
    src, dest = _read(stats["compute1"]), _read(stats["compute2"])
    for volume_id in vols:
        [(attachment_id, host)] = volumes.attachment_hosts(volume_id)
        assert host == "compute2"
        assert attachment_id != before[volume_id][0][0]
        assert len(_all_rows(volumes, volume_id)) == 1
        assert volumes.show_volume(volume_id)[1]["volume"]["status"] == "in-use"
        assert attachment_id in dest["connected"]
        assert before[volume_id][0][0] not in src["connected"]
    # the volume detaches from its new host
    status, _, _ = compute.detach_volume(server, vols[0], microversion="2.1")
    assert status == 202
    volumes.wait_for_volume_status(vols[0], "available", timeout=WAIT)
    assert not _all_rows(volumes, vols[0])
    _cleanup(compute, volumes, server, vols)


# one failure per step, on the host that runs it: the destination connects
# the volumes and prepares, the source moves the guest and cleans up
STEPS = [
    ("compute2", "connect", "compute_pre_live_migration"),
    ("compute2", "pre_live_migration", "compute_pre_live_migration"),
    ("compute1", "live_migration", "compute_live_migration"),
    ("compute1", "post_live_migration", "compute_post_live_migration_at_source"),
]


@pytest.mark.parametrize("fail_host,operation,event", STEPS)
def test_injected_failure_rolls_back(deployment, stats, compute, volumes,
                                     fail_host, operation, event):
    if fail_host == "compute1":
        # the source fails: restart it with the failure before the server
        # lands there (a restart forgets the fake guests of its host)
        paths = _configure(deployment, fail=[operation], only="compute1",
                           fail_host="compute1")
    server, vols = _setup(compute, volumes)
    before = {v: volumes.attachment_hosts(v) for v in vols}
    try:
        if fail_host == "compute2":
            paths = _configure(deployment, fail=[operation], only="compute2")
        compute.live_migrate(server, "compute2", timeout=WAIT)
        _check_rolled_back(compute, volumes, server, vols, before, paths, event)
    finally:
        _cleanup(compute, volumes, server, vols)
        _configure(deployment, only=fail_host)


def _check_rolled_back(compute, volumes, server, vols, before, paths, event):
    srv = compute.show_server(server, microversion="2.51")[1]["server"]
    assert srv["status"] == "ACTIVE"
    assert compute.server_host(server) == "compute1"
    src = _read(paths["compute1"])
    for volume_id in vols:
        assert volumes.attachment_hosts(volume_id) == before[volume_id]
        assert len(_all_rows(volumes, volume_id)) == 1
        assert before[volume_id][0][0] in src["connected"]
    status, body, _ = compute.request(
        "GET", f"/servers/{server}/os-instance-actions", microversion="2.51")
    assert body["instanceActions"][0]["action"] == "live-migration"
    status, body, _ = compute.request(
        "GET", "/servers/%s/os-instance-actions/%s" % (
            server, body["instanceActions"][0]["request_id"]), microversion="2.51")
    assert (event, "Error") in [
        (e["event"], e["result"]) for e in body["instanceAction"]["events"]]
    # the volumes still work on the source
    status, _, _ = compute.detach_volume(server, vols[0], microversion="2.1")
    assert status == 202
    volumes.wait_for_volume_status(vols[0], "available", timeout=WAIT)
