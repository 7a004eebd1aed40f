"""os-migrateLive of servers with volumes, in one process with two computes.

Each volume gets a second attachment of the same server on the destination
(allowed on a non-multiattach volume), connected there; then the switch;
then the source attachment goes.  A failure injected at each step
(``[fake_driver] fail_operations``) leaves the server on the source with its
original attachments, connections and guest, and no extra attachment.
"""
import contextlib

import pytest

from volattach import objects
from tests.functional.test_attach_detach import _new_server, _new_volume
from tests.integration import client as clients
from volattach import context
from volattach.conf import CONF

RO_MV = "2.105"


@contextlib.contextmanager
def failing(*operations):
    CONF.set_override("fail_operations", list(operations), group="fake_driver")
    try:
        yield
    finally:
        CONF.clear_override("fail_operations", group="fake_driver")


def _instance(server_id):
    return objects.Instance.get_by_uuid(context.get_admin_context(), server_id)


def _bdms(server_id):
    return {b.volume_id: b for b in objects.BlockDeviceMappingList.get_by_instance_uuid(
        context.get_admin_context(), server_id) if b.is_volume}


def _rows(volumes, volume_id):
    status, body, _ = volumes.request(
        "GET", volumes._path("/attachments/detail"), params={"volume_id": volume_id})
    assert status == 200, body
    return body["attachments"]


def _attach(api, volumes, server_id, volume_id, mode=None):
    fields = {"attach_mode": mode} if mode else {}
    status, body, _ = api.attach_volume(server_id, volume_id, microversion=RO_MV,
                                        **fields)
    assert status in (200, 202), body
    volumes.wait_for_volume_status(volume_id, "in-use")


def _migrate(client, server_id, host=None, version="2.1", **extra):
    value = {"host": host, "block_migration": False}
    if version == "2.1":
        value["disk_over_commit"] = False
    value.update(extra)
    status, body, headers = client.request(
        "POST", "/servers/%s/action" % server_id, {"os-migrateLive": value},
        microversion=version)
    return status, body


def _wait_done(admin_api, server_id):
    return clients._wait(
        lambda: admin_api.show_server(server_id, microversion="2.1")[1]["server"],
        lambda s: s["OS-EXT-STS:task_state"] is None, "live migration done",
        timeout=60, interval=0.2)


@pytest.fixture
def server(api, volumes, deployment):
    server_id = _new_server(api, name="lm")
    rw, ro = _new_volume(volumes), _new_volume(volumes)
    _attach(api, volumes, server_id, rw)
    _attach(api, volumes, server_id, ro, mode="ro")
    return server_id, rw, ro


def _other(host):
    return "compute2" if host == "compute1" else "compute1"


def _assert_on(deployment, volumes, server_id, host, vols, attachments=None):
    """The server runs on ``host`` with one attachment per volume there,
    its guest and connections on ``host`` only."""
    assert _instance(server_id).host == host
    bdms = _bdms(server_id)
    other = deployment.computes[_other(host)].driver
    driver = deployment.computes[host].driver
    assert server_id in driver.guests and server_id not in other.guests
    for volume_id in vols:
        rows = _rows(volumes, volume_id)
        assert len(rows) == 1, rows
        status, body, _ = volumes.show_volume(volume_id)
        assert [(a["attachment_id"], a["host_name"])
                for a in body["volume"]["attachments"]] == [(rows[0]["id"], host)]
        assert rows[0]["id"] == bdms[volume_id].attachment_id
        if attachments is not None:
            assert rows[0]["id"] == attachments[volume_id]
        volumes.wait_for_volume_status(volume_id, "in-use")
        assert bdms[volume_id].attachment_id in driver.connections
        assert not [k for k, c in other.connections.items()
                    if (c.get("data") or {}).get("volume_id") == volume_id
                    or k == bdms[volume_id].attachment_id]
        device = bdms[volume_id].device_name
        assert driver.guests[server_id]["devices"][device]
        assert driver.guests[server_id]["modes"][device] == (
            bdms[volume_id].attach_mode or "rw")


def test_live_migrate_with_volumes(server, admin_api, volumes, deployment):
    server_id, rw, ro = server
    source = _instance(server_id).host
    dest = _other(source)
    status, body = _migrate(admin_api, server_id, dest)
    assert status == 202, body
    srv = _wait_done(admin_api, server_id)
    assert srv["status"] == "ACTIVE"
    _assert_on(deployment, volumes, server_id, dest, (rw, ro))
    assert _bdms(server_id)[ro].attach_mode == "ro"
    assert [r["attach_mode"] for r in _rows(volumes, ro)] == ["ro"]
    # and back, the scheduler choosing (2.25: block_migration auto)
    status, body = _migrate(admin_api, server_id, None, "2.25", block_migration="auto")
    assert status == 202, body
    _wait_done(admin_api, server_id)
    _assert_on(deployment, volumes, server_id, source, (rw, ro))
    status, body, _ = admin_api.request(
        "GET", "/servers/%s/os-instance-actions" % server_id)
    assert [a["action"] for a in body["instanceActions"]].count("live-migration") == 2
    # the volumes still detach cleanly from the new host
    status, _, _ = admin_api.detach_volume(server_id, rw, microversion="2.1")
    assert status == 202
    volumes.wait_for_volume_status(rw, "available")


@pytest.mark.parametrize("operation", ["connect", "pre_live_migration",
                                       "live_migration", "post_live_migration"])
def test_failure_at_each_step_rolls_back(server, admin_api, api, volumes,
                                         deployment, operation):
    server_id, rw, ro = server
    source = _instance(server_id).host
    dest = _other(source)
    before = {v: b.attachment_id for v, b in _bdms(server_id).items()}
    with failing(operation):
        status, body = _migrate(admin_api, server_id, dest)
        assert status == 202, body
        srv = _wait_done(admin_api, server_id)
    assert srv["status"] == "ACTIVE"
    _assert_on(deployment, volumes, server_id, source, (rw, ro), before)
    dest_driver = deployment.computes[dest].driver
    for volume_id in (rw, ro):
        assert not [c for c in dest_driver.connections.values()
                    if (c.get("data") or {}).get("volume_id") == volume_id]
    status, body, _ = admin_api.request(
        "GET", "/servers/%s/os-instance-actions" % server_id)
    action = body["instanceActions"][0]
    assert action["action"] == "live-migration"
    # the volumes keep working on the source: detach one
    status, _, _ = api.detach_volume(server_id, rw, microversion="2.1")
    assert status == 202
    volumes.wait_for_volume_status(rw, "available")
    assert rw not in _bdms(server_id)


def test_live_migrate_refusals(server, api, admin_api, deployment):
    server_id, rw, ro = server
    source = _instance(server_id).host
    status, body = _migrate(api, server_id, _other(source))
    assert status == 403, body
    status, body = _migrate(admin_api, server_id, source)
    assert status == 400, body
    status, body = _migrate(admin_api, server_id, "nosuchhost")
    assert status == 400, body
    status, body = _migrate(admin_api, server_id, None, "2.25",
                            block_migration="sometimes")
    assert status == 400, body
    instance = _instance(server_id)
    instance.task_state = "pausing"
    instance.save()
    try:
        status, body = _migrate(admin_api, server_id, _other(source))
        assert status == 409, body
    finally:
        instance.task_state = None
        instance.save()
    status, _, _ = admin_api.request("POST", "/servers/%s/action" % server_id,
                                     {"os-stop": None})
    assert status == 202
    admin_api.wait_for_server_status(server_id, "SHUTOFF")
    status, body = _migrate(admin_api, server_id, _other(source))
    assert status == 409, body
    assert _instance(server_id).host == source
