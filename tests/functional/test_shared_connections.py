"""Shared host connections (issue 7) in one process: with ``[volume]
shared_targets = True`` every volume attached to compute1 rides on ONE
target; attaches and detaches of several volumes on several servers of that
host, in random interleavings, never log out of the target while an
attachment uses it, and leave no connection behind."""
import concurrent.futures
import random
import time

from volattach import context as volattach_context

CONF_OVERRIDES = {
    ("volume", "shared_targets"): True,
    ("all", "compute_hosts"): ["compute1"],
}

SERVERS = 3
VOLUMES = 8
ROUNDS = 3


def _new_server(api, name):
    status, body, _ = api.create_server(name=name, microversion="2.37")
    assert status == 202, body
    api.wait_for_server_status(body["server"]["id"], "ACTIVE")
    return body["server"]["id"]


def _new_volume(volumes):
    status, body, _ = volumes.create_volume(size=1)
    assert status == 202, body
    volumes.wait_for_volume_status(body["volume"]["id"], "available")
    return body["volume"]["id"]


def _attachment_id(api, server_id, volume_id):
    status, body, _ = api.show_volume_attachment(server_id, volume_id,
                                                 microversion="2.89")
    assert status == 200, body
    return body["volumeAttachment"]["attachment_id"]


def test_interleaved_attach_detach_on_one_shared_target(api, volumes, deployment):
    driver = deployment.computes["compute1"].driver
    manager = deployment.computes["compute1"].manager
    servers = [_new_server(api, "shared-%d" % n) for n in range(SERVERS)]
    vols = [_new_volume(volumes) for _ in range(VOLUMES)]
    rng = random.Random(20261121)
    checks = []

    def cycle(volume_id, server_id, pause):
        status, body, _ = api.attach_volume(server_id, volume_id,
                                            microversion="2.1")
        assert status == 200, body
        attachment_id = _attachment_id(api, server_id, volume_id)
        # connected on the host, and still so a little later while other
        # volumes come and go on the same target
        for _ in range(2):
            assert attachment_id in driver.connections, (volume_id, attachment_id)
            checks.append(attachment_id)
            time.sleep(pause)
        info = driver.connections[attachment_id]
        assert info["shared_target_id"]
        status, body, _ = api.detach_volume(server_id, volume_id)
        assert status == 202, body
        volumes.wait_for_volume_status(volume_id, "available")
        api.wait_for_volume_attachment_gone(server_id, volume_id)
        return info["shared_target_id"]

    targets = set()
    with concurrent.futures.ThreadPoolExecutor(VOLUMES) as pool:
        for _ in range(ROUNDS):
            jobs = [pool.submit(cycle, v, rng.choice(servers),
                                rng.uniform(0, 0.05))
                    for v in rng.sample(vols, len(vols))]
            targets.update(job.result(timeout=120) for job in jobs)
            assert driver.stats()["lost_connections"] == []

    stats = driver.stats()
    operations = 2 * VOLUMES * ROUNDS
    assert len(targets) == 1                      # one target for the host
    assert stats["lost_connections"] == []
    assert stats["connections"] == 0 and stats["targets"] == 0
    assert stats["connects"] == stats["disconnects"] == operations // 2
    assert stats["target_connects"] == stats["target_disconnects"] >= 1
    # the attachments overlapped on the target: fewer logins than connects
    assert stats["max_target_users"] > 1
    assert stats["target_connects"] < stats["connects"]
    assert manager.connections.targets() == {}
    assert len(checks) == 2 * VOLUMES * ROUNDS

    for server_id in servers:
        assert api.delete_server(server_id)[0] == 204
        api.wait_for_server_deleted(server_id)


def test_server_delete_logs_out_only_after_its_last_shared_volume(
        api, volumes, deployment):
    driver = deployment.computes["compute1"].driver
    s1, s2 = _new_server(api, "keep"), _new_server(api, "gone")
    v1, v2, v3 = (_new_volume(volumes) for _ in range(3))
    for server_id, volume_id in ((s1, v1), (s2, v2), (s2, v3)):
        status, body, _ = api.attach_volume(server_id, volume_id, microversion="2.1")
        assert status == 200, body
    before = driver.stats()
    assert before["targets"] == 1
    assert api.delete_server(s2)[0] == 204
    api.wait_for_server_deleted(s2)
    kept = _attachment_id(api, s1, v1)
    stats = driver.stats()
    assert stats["lost_connections"] == [] and stats["targets"] == 1
    assert stats["target_disconnects"] == before["target_disconnects"]
    assert kept in driver.connections

    # a restarted compute would recount from the BDMs: the same answer
    from volattach.compute import connections
    recount = connections.HostConnections("compute1")
    with deployment.computes["compute1"]._scope():
        assert recount.rebuild(volattach_context.get_admin_context()) == 1
    assert recount.targets() == deployment.computes["compute1"].manager \
        .connections.targets()

    assert api.delete_server(s1)[0] == 204
    api.wait_for_server_deleted(s1)
    stats = driver.stats()
    assert stats["targets"] == 0 and stats["lost_connections"] == []
    assert stats["target_disconnects"] == before["target_disconnects"] + 1
