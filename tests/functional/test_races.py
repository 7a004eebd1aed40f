"""Requests racing each other on one server, in one process with two
computes: whatever the order in which the conductor runs them, nothing is
left attached, reserved or stuck.

A compute step is slowed (``[fake_driver] *_latency``) so that the second
request lands in the window the first one leaves open.
"""
import contextlib
import threading

import pytest

from tests.functional.test_attach_detach import _new_server, _new_volume
from tests.integration import client as clients
from volattach import context
from volattach import exception
from volattach import objects
from volattach.conf import CONF

@contextlib.contextmanager
def slow(**latencies):
    for name, value in latencies.items():
        CONF.set_override(name, value, group="fake_driver")
    try:
        yield
    finally:
        for name in latencies:
            CONF.clear_override(name, group="fake_driver")


def _attachments(volumes, volume_id):
    status, body, _ = volumes.list_attachments(volume_id=volume_id)
    assert status == 200, body
    return body["attachments"]


def _bdms(server_id):
    return list(objects.BlockDeviceMappingList.get_by_instance_uuid(
        context.get_admin_context(), server_id))


@pytest.mark.parametrize("latencies", [
    {},
    # the delete reads the server's records before the attach creates one
    {"reserve_latency": 0.5},
    # the delete runs while the compute plugs the volume
    {"attach_latency": 0.5},
], ids=["unslowed", "slow-reserve", "slow-plug"])
@pytest.mark.parametrize("microversion", ["2.101", "2.37"])
def test_delete_while_an_attach_is_in_flight_leaves_the_volume_available(
        api, volumes, deployment, latencies, microversion):
    server_id = _new_server(api, name="race-delete")
    volume_id = _new_volume(volumes)
    answers = {}

    def attach():
        answers["attach"] = api.attach_volume(server_id, volume_id,
                                              microversion=microversion)[0]

    with slow(**latencies):
        attacher = threading.Thread(target=attach)
        attacher.start()
        if microversion == "2.101":
            attacher.join()          # 202 at once: the workflow is cast
        else:
            threading.Event().wait(0.15)   # the call is under way
        status, body, _ = api.delete_server(server_id)
        assert status == 204, body
        attacher.join()
        api.wait_for_server_deleted(server_id)
    assert answers["attach"] in (200, 202, 404, 409), answers
    volume = volumes.wait_for_volume_status(volume_id, "available", timeout=30)
    assert volume["status"] == "available"
    assert _attachments(volumes, volume_id) == []
    assert _bdms(server_id) == []


def _wait_idle(admin_api, server_id):
    return clients._wait(
        lambda: admin_api.show_server(server_id, microversion="2.1")[1]["server"],
        lambda s: s["OS-EXT-STS:task_state"] is None, "no task state",
        timeout=60, interval=0.2)


def _migrate(admin_api, server_id):
    return admin_api.request(
        "POST", "/servers/%s/action" % server_id,
        {"os-migrateLive": {"host": None, "block_migration": "auto"}},
        microversion="2.30")[0]


def _assert_consistent(admin_api, volumes, server_id, volume_ids):
    """Each volume is either still the server's (one record, one attachment,
    that one, on the server's host) or free (no record, no attachment)."""
    server = _wait_idle(admin_api, server_id)
    assert (server["status"], server["OS-EXT-STS:task_state"]) == ("ACTIVE", None)
    host = server["OS-EXT-SRV-ATTR:host"]
    for volume_id in volume_ids:     # a detach under way ends first
        clients._wait(lambda: volumes.show_volume(volume_id)[1]["volume"],
                      lambda v: v["status"] in ("in-use", "available"),
                      "volume %s settled" % volume_id, timeout=60, interval=0.2)
    records = {b.volume_id: b for b in _bdms(server_id) if b.is_volume}
    for volume_id in volume_ids:
        if volume_id in records:
            volume = volumes.wait_for_volume_status(volume_id, "in-use")
            [row] = _attachments(volumes, volume_id)
            assert row["id"] == records[volume_id].attachment_id
            assert [a["host_name"] for a in volume["attachments"]] == [host]
        else:
            volumes.wait_for_volume_status(volume_id, "available")
            assert _attachments(volumes, volume_id) == []


@pytest.mark.parametrize("order", ["detach-then-migrate", "migrate-then-detach",
                                   "together"])
def test_a_live_migration_racing_a_detach_never_leaves_the_server_migrating(
        api, admin_api, volumes, deployment, order):
    server_id = _new_server(api, name="race-migrate")
    kept, leaving = _new_volume(volumes), _new_volume(volumes)
    for volume_id in (kept, leaving):
        status, body, _ = api.attach_volume(server_id, volume_id,
                                            microversion="2.101")
        assert status == 202, body
        volumes.wait_for_volume_status(volume_id, "in-use")
    answers = {}

    def detach():
        answers["detach"] = api.detach_volume(server_id, leaving,
                                              microversion="2.101")[0]

    def migrate():
        answers["migrate"] = _migrate(admin_api, server_id)

    steps = {"detach-then-migrate": [detach, migrate],
             "migrate-then-detach": [migrate, detach]}.get(order)
    with slow(detach_latency=0.5):
        if steps:
            for step in steps:
                step()
        else:
            threads = [threading.Thread(target=f) for f in (detach, migrate)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        assert answers["detach"] in (202, 409), answers
        assert answers["migrate"] in (202, 409), answers
        if order == "migrate-then-detach":
            # Nova's answer to a detach while the server migrates
            assert answers["detach"] == 409
        _assert_consistent(admin_api, volumes, server_id, (kept, leaving))
    # and the server takes the next request
    status, body, _ = api.detach_volume(server_id, kept, microversion="2.101")
    assert status == 202, body
    volumes.wait_for_volume_status(kept, "available")


def test_a_detach_checked_before_a_live_migration_started_does_not_strand_it(
        api, admin_api, volumes, deployment):
    """The window the API cannot close: a detach whose checks ran just
    before the migration's compare-and-swap reaches the conductor while the
    migration is under way (the server's compute lock, held here, keeps the
    migration at its destination's pre_live_migration)."""
    from volattach.compute import locks
    from volattach.conductor import api as conductor_api
    server_id = _new_server(api, name="race-stale-detach")
    kept, leaving = _new_volume(volumes), _new_volume(volumes)
    for volume_id in (kept, leaving):
        status, body, _ = api.attach_volume(server_id, volume_id,
                                            microversion="2.101")
        assert status == 202, body
        volumes.wait_for_volume_status(volume_id, "in-use")
    ctx = context.get_admin_context()
    as_the_api_read_it = objects.Instance.get_by_uuid(ctx, server_id)
    with locks.lock(server_id):
        assert _migrate(admin_api, server_id) == 202
        clients._wait(lambda: (_attachments(volumes, leaving),
                               volumes.show_volume(leaving)[1]["volume"]["status"]),
                      lambda seen: len(seen[0]) == 2,
                      "the destination attachment", timeout=30, interval=0.1)
        # the detach's cast, sent by an API whose checks passed before the
        # migration set its task state (its os-begin_detaching would be
        # refused now that the destination attachment exists: skipped)
        conductor_api.ComputeTaskAPI().detach_volume(ctx, as_the_api_read_it, leaving)
        threading.Event().wait(1.0)
    _assert_consistent(admin_api, volumes, server_id, (kept, leaving))


def test_reset_state_is_the_admins_way_out(api, admin_api, deployment):
    server_id = _new_server(api, name="reset")
    objects_instance = objects.Instance.get_by_uuid(context.get_admin_context(),
                                                    server_id)
    objects_instance.task_state = "migrating"
    objects_instance.save()

    def reset(client, value):
        return client.request("POST", "/servers/%s/action" % server_id,
                              {"os-resetState": value})[0]

    assert reset(api, {"state": "active"}) == 403
    assert reset(admin_api, {"state": "paused"}) == 400
    assert reset(admin_api, {}) == 400
    assert reset(admin_api, {"state": "error"}) == 202
    server = admin_api.show_server(server_id)[1]["server"]
    assert (server["status"], server["OS-EXT-STS:task_state"]) == ("ERROR", None)
    assert reset(admin_api, {"state": "active"}) == 202
    server = admin_api.show_server(server_id)[1]["server"]
    assert (server["status"], server["OS-EXT-STS:task_state"]) == ("ACTIVE", None)
    status, body, _ = admin_api.request(
        "GET", "/servers/%s/os-instance-actions" % server_id)
    assert [a["action"] for a in body["instanceActions"]].count("resetState") == 2
    status, body, _ = api.delete_server(server_id)
    assert status == 204, body
    api.wait_for_server_deleted(server_id)


def test_attach_to_an_offloaded_server_deleted_since_the_api_read_it(
        api, volumes, deployment):
    """The API attaches to a shelved_offloaded server itself; a local delete
    may run entirely between its read of the server and its writes (found
    by the interleaving tests: both answered success and the volume stayed
    in-use on the deleted server).  The mapping's creation refuses a
    deleted server, so nothing is attached."""
    from volattach.api import compute as compute_api
    server_id = _new_server(api, name="race-offloaded")
    status, body, _ = api.request("POST", "/servers/%s/action" % server_id,
                                  {"shelve": None}, microversion="2.37")
    assert status == 202, body
    api.wait_for_server_status(server_id, "SHELVED_OFFLOADED", timeout=30)
    volume_id = _new_volume(volumes)
    ctx = context.RequestContext(user_id="alice", project_id="demo")
    stale = objects.Instance.get_by_uuid(ctx, server_id)   # the API's read
    status, body, _ = api.delete_server(server_id)
    assert status == 204, body
    api.wait_for_server_deleted(server_id)
    with pytest.raises(exception.InstanceNotFound):
        compute_api.API().attach_volume(ctx, stale, volume_id)
    assert volumes.wait_for_volume_status(volume_id, "available")["status"] == \
        "available"
    assert _attachments(volumes, volume_id) == []
    assert _bdms(server_id) == []
