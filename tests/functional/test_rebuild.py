"""rebuild (compute RPC 1.7, conductor task API 1.6): the guest re-created
from a new image on its host with its volumes still attached, Nova's
response body and states, and the refusals (400, 404, 409) that change
nothing."""
import time

import pytest

from tests.functional.test_attach_detach import _new_server, _new_volume
from tests.functional.test_suspend_reboot import (_action, _actions,
                                                  compute_at_version)
from volattach import context
from volattach import objects
from volattach.conf import CONF

IMAGE, IMAGE_ALT = CONF.compute.fake_images[:2]


def _guest(deployment, server_id):
    ctx = context.get_admin_context()
    host = objects.Instance.get_by_uuid(ctx, server_id).host
    return deployment.computes[host].driver.guests.get(server_id)


def _rebuild(api, server_id, microversion=None, **fields):
    body = {"imageRef": IMAGE_ALT}
    body.update(fields)
    return api.request("POST", "/servers/%s/action" % server_id,
                       {"rebuild": body}, microversion=microversion)


def test_rebuild_with_a_volume_attached(api, volumes, deployment):
    server_id = _new_server(api, name="before", metadata={"old": "1"})
    volume_id = _new_volume(volumes)
    assert api.attach_volume(server_id, volume_id, microversion="2.20")[0] == 200
    volumes.wait_for_volume_status(volume_id, "in-use")
    attachment = volumes.list_attachments(volume_id=volume_id)[1]["attachments"]
    assert _guest(deployment, server_id)["image"] == IMAGE

    status, body, _ = _rebuild(api, server_id, name="after",
                               metadata={"rebuild": "server"},
                               adminPass="rebuildPassw0rd",
                               accessIPv4="10.0.0.9")
    assert status == 202, body
    server = body["server"]
    assert server["id"] == server_id
    assert server["image"]["id"] == IMAGE_ALT
    assert server["name"] == "after"
    assert server["metadata"] == {"rebuild": "server"}   # replaced, not merged
    assert server["adminPass"] == "rebuildPassw0rd"
    assert server["accessIPv4"] == "10.0.0.9"
    # below 2.75 the body leaves the extension attributes out (as PUT)
    assert "OS-EXT-STS:vm_state" not in server

    server = api.wait_for_server_status(server_id, "ACTIVE")
    assert server["image"]["id"] == IMAGE_ALT
    assert server["name"] == "after"
    guest = _guest(deployment, server_id)
    assert guest["image"] == IMAGE_ALT and guest["power"] == "running"
    device = api.list_volume_attachments(server_id)[1]["volumeAttachments"][0]["device"]
    assert device in guest["devices"]                   # plugged in again
    # the same attachment: rebuild moved nothing
    assert volumes.show_volume(volume_id)[1]["volume"]["status"] == "in-use"
    assert volumes.list_attachments(volume_id=volume_id)[1]["attachments"] == attachment
    assert _actions(api, server_id)[0] == "rebuild"


def test_rebuild_of_a_stopped_server_stays_stopped(api, deployment):
    server_id = _new_server(api, name="stopped")
    assert _action(api, server_id, "os-stop")[0] == 202
    api.wait_for_server_status(server_id, "SHUTOFF")
    status, body, _ = _rebuild(api, server_id)
    assert status == 202, body
    assert "adminPass" in body["server"]               # generated
    server = api.wait_for_server_status(server_id, "SHUTOFF")
    assert server["image"]["id"] == IMAGE_ALT
    assert _guest(deployment, server_id)["power"] == "shutdown"


def test_rebuild_at_275_answers_as_a_show(api):
    server_id = _new_server(api, name="shown")
    status, body, _ = _rebuild(api, server_id, microversion="2.75",
                               description="d")
    assert status == 202, body
    assert body["server"]["OS-EXT-STS:task_state"] == "rebuilding"
    assert body["server"]["status"] == "REBUILD"
    assert body["server"]["description"] == "d"
    api.wait_for_server_status(server_id, "ACTIVE")


def test_rebuild_of_an_errored_server_ends_active(api, admin_api):
    server_id = _new_server(api, name="errored")
    assert _action(admin_api, server_id, "os-resetState",
                   {"state": "error"})[0] == 202
    assert _rebuild(api, server_id)[0] == 202
    api.wait_for_server_status(server_id, "ACTIVE")


def test_a_failed_rebuild_leaves_the_server_in_error(api, volumes):
    server_id = _new_server(api, name="broken")
    volume_id = _new_volume(volumes)
    assert api.attach_volume(server_id, volume_id, microversion="2.20")[0] == 200
    CONF.set_override("fail_operations", ["spawn"], group="fake_driver")
    try:
        assert _rebuild(api, server_id)[0] == 202
        api.wait_for_server_status(server_id, "ERROR")
    finally:
        CONF.clear_override("fail_operations", group="fake_driver")
    # the volume stays attached and a delete releases it
    assert volumes.show_volume(volume_id)[1]["volume"]["status"] == "in-use"
    assert api.delete_server(server_id)[0] == 204
    api.wait_for_server_deleted(server_id, timeout=30)
    volumes.wait_for_volume_status(volume_id, "available")


@pytest.mark.parametrize("fields,code", [
    ({"imageRef": "8a3c1e1c-0000-4000-8000-000000000000"}, 400),  # unknown image
    ({"imageRef": "not-a-uuid"}, 400),
    ({"name": ""}, 400),
    ({"key_name": "nokey"}, 400),          # below 2.54: not a rebuild field
    ({"adminPass": 1}, 400),
])
def test_bad_rebuilds_change_nothing(api, fields, code):
    server_id = _new_server(api, name="intact")
    before = api.show_server(server_id)[1]["server"]
    status, body, _ = _rebuild(api, server_id, **fields)
    assert status == code, body
    after = api.show_server(server_id)[1]["server"]
    assert after["image"] == before["image"] and after["name"] == "intact"
    assert after["OS-EXT-STS:task_state"] is None
    assert "rebuild" not in _actions(api, server_id)


def test_rebuild_checks_the_key_at_254(api):
    server_id = _new_server(api, name="keyed")
    status, body, _ = _rebuild(api, server_id, microversion="2.54",
                               key_name="nokey")
    assert status == 400, body
    assert "key_name" in body["badRequest"]["message"]
    status, body, _ = _rebuild(api, server_id, microversion="2.54",
                               key_name=None)
    assert status == 202, body
    api.wait_for_server_status(server_id, "ACTIVE")


def test_rebuild_refusals(api):
    missing = "3b3e8a2c-0000-4000-8000-000000000000"
    assert _rebuild(api, missing)[0] == 404
    server_id = _new_server(api, name="paused")
    assert _action(api, server_id, "pause")[0] == 202
    api.wait_for_server_status(server_id, "PAUSED")
    status, body, _ = _rebuild(api, server_id)
    assert status == 409, body                       # not from paused
    assert "vm_state paused" in body["conflictingRequest"]["message"]
    assert _action(api, server_id, "unpause")[0] == 202
    api.wait_for_server_status(server_id, "ACTIVE")
    assert _action(api, server_id, "lock")[0] == 202
    assert _rebuild(api, server_id)[0] == 409        # locked
    assert _action(api, server_id, "unlock")[0] == 202
    assert api.delete_server(server_id)[0] == 204
    api.wait_for_server_deleted(server_id, timeout=30)
    assert _rebuild(api, server_id)[0] == 404        # deleted


def test_a_volume_backed_server_keeps_its_image(api, volumes):
    status, body, _ = volumes.create_volume(size=1, imageRef=IMAGE)
    assert status == 202, body
    volume_id = body["volume"]["id"]
    volumes.wait_for_volume_status(volume_id, "available")
    status, body, _ = api.create_server(
        name="bfv", image_ref="", microversion="2.37",
        block_device_mapping_v2=[{"boot_index": 0, "uuid": volume_id,
                                  "source_type": "volume",
                                  "destination_type": "volume"}])
    assert status == 202, body
    server_id = body["server"]["id"]
    api.wait_for_server_status(server_id, "ACTIVE")
    status, body, _ = _rebuild(api, server_id)       # another image
    assert status == 400, body
    assert "volume-backed" in body["badRequest"]["message"]
    status, body, _ = _rebuild(api, server_id, imageRef=IMAGE)   # the same
    assert status == 202, body
    assert body["server"]["image"] == ""
    api.wait_for_server_status(server_id, "ACTIVE")
    assert volumes.show_volume(volume_id)[1]["volume"]["status"] == "in-use"


def test_a_compute_too_old_refuses_rebuild(api):
    server_id = _new_server(api, name="old-compute")
    with compute_at_version(server_id, 7):
        status, body, _ = _rebuild(api, server_id)
        assert status == 409, body
        assert "too old" in body["conflictingRequest"]["message"]
        server = api.show_server(server_id)[1]["server"]
        assert server["image"]["id"] == IMAGE
        assert server["OS-EXT-STS:task_state"] is None


def test_delete_during_a_rebuild_leaves_nothing(api, volumes, deployment):
    """A delete may interrupt a rebuild, as in Nova (tempest's cleanups
    delete servers right after a rebuild): whatever the order of the two
    on the compute, no guest is left on the host and the volume ends
    available with no attachment."""
    server_id = _new_server(api, name="rebuilt-then-deleted")
    volume_id = _new_volume(volumes)
    assert api.attach_volume(server_id, volume_id, microversion="2.20")[0] == 200
    volumes.wait_for_volume_status(volume_id, "in-use")
    host = objects.Instance.get_by_uuid(context.get_admin_context(), server_id).host
    driver = deployment.computes[host].driver
    CONF.set_override("spawn_latency", 1.0, group="fake_driver")
    try:
        assert _rebuild(api, server_id)[0] == 202
        time.sleep(0.3)                      # the compute is inside the spawn
        status, body, _ = api.delete_server(server_id)
        assert status == 204, body
        api.wait_for_server_deleted(server_id, timeout=30)
    finally:
        CONF.clear_override("spawn_latency", group="fake_driver")
    volumes.wait_for_volume_status(volume_id, "available")
    assert volumes.list_attachments(volume_id=volume_id)[1]["attachments"] == []
    deadline = time.monotonic() + 10        # the rebuild's own clean-up
    while server_id in driver.guests and time.monotonic() < deadline:
        time.sleep(0.1)
    assert server_id not in driver.guests


def test_user_data_is_kept_shown_and_replaced_by_a_rebuild(api, admin_api):
    import base64
    first = base64.b64encode(b"echo first\n").decode()
    second = base64.b64encode(b"echo second\n").decode()
    server_id = _new_server(api, name="scripted", user_data=first)
    shown = admin_api.show_server(server_id, microversion="2.3")[1]["server"]
    assert shown["OS-EXT-SRV-ATTR:user_data"] == first
    # user_data is a rebuild field from 2.57 only
    status, body, _ = _rebuild(api, server_id, microversion="2.56",
                               user_data=second)
    assert status == 400, body
    status, body, _ = _rebuild(api, server_id, microversion="2.57")
    assert status == 202, body
    assert body["server"]["user_data"] == first           # kept
    api.wait_for_server_status(server_id, "ACTIVE")
    status, body, _ = _rebuild(api, server_id, microversion="2.57",
                               user_data=second)
    assert body["server"]["user_data"] == second
    api.wait_for_server_status(server_id, "ACTIVE")
    shown = admin_api.show_server(server_id, microversion="2.3")[1]["server"]
    assert shown["OS-EXT-SRV-ATTR:user_data"] == second
    status, body, _ = _rebuild(api, server_id, microversion="2.57",
                               user_data=None)                 # removed
    assert body["server"]["user_data"] is None
    api.wait_for_server_status(server_id, "ACTIVE")
