"""The walking skeleton end to end in one process: create a server, attach,
list, show, detach, delete, with the volume's status checked in the volume
service at each step; and the error cases leave nothing behind."""
import uuid

import pytest

from tests.integration import client as clients


def _new_server(api, **kw):
    status, body, _ = api.create_server(microversion="2.37", **kw)
    assert status == 202, body
    server = api.wait_for_server_status(body["server"]["id"], "ACTIVE")
    return server["id"] if isinstance(server, dict) and "id" in server else body["server"]["id"]


def _new_volume(volumes, **kw):
    status, body, _ = volumes.create_volume(size=1, **kw)
    assert status == 202, body
    volumes.wait_for_volume_status(body["volume"]["id"], "available")
    return body["volume"]["id"]


def _new_boot_volume(volumes, **kw):
    """A volume made from the default image: bootable (a blank one is not,
    and cannot boot a server, as in Nova)."""
    return _new_volume(volumes, imageRef=clients.DEFAULT_IMAGE, **kw)


def _attachment_rows(volumes, volume_id):
    status, body, _ = volumes.list_attachments(volume_id=volume_id)
    assert status == 200, body
    return body["attachments"]


def test_attach_list_show_detach_delete(api, volumes, deployment):
    server_id = _new_server(api)
    volume_id = _new_volume(volumes)

    status, body, headers = api.attach_volume(server_id, volume_id, microversion="2.1")
    assert status == 200, body
    att = body["volumeAttachment"]
    assert att["device"] == "/dev/vdb"
    assert att["volumeId"] == volume_id and att["serverId"] == server_id
    volumes.wait_for_volume_status(volume_id, "in-use")

    status, body, _ = api.list_volume_attachments(server_id)
    assert status == 200
    assert [a["volumeId"] for a in body["volumeAttachments"]] == [volume_id]
    status, body, _ = api.show_volume_attachment(server_id, volume_id, microversion="2.89")
    assert status == 200
    assert body["volumeAttachment"]["device"] == "/dev/vdb"
    attachment_id = body["volumeAttachment"]["attachment_id"]
    assert [a["id"] for a in _attachment_rows(volumes, volume_id)] == [attachment_id]

    # the compute holds the connection and the guest has the device
    host = _server_host(deployment, server_id)
    driver = deployment.computes[host].driver
    assert "/dev/vdb" in driver.guests[server_id]["devices"]

    status, body, _ = api.detach_volume(server_id, volume_id)
    assert status == 202, body
    volumes.wait_for_volume_status(volume_id, "available")
    api.wait_for_volume_attachment_gone(server_id, volume_id)
    assert _attachment_rows(volumes, volume_id) == []
    assert "/dev/vdb" not in driver.guests[server_id]["devices"]

    status, _, _ = api.delete_server(server_id)
    assert status == 204
    api.wait_for_server_deleted(server_id)
    assert server_id not in driver.guests


def _server_host(deployment, server_id):
    from volattach import objects
    from volattach import context
    return objects.Instance.get_by_uuid(context.get_admin_context(), server_id).host


def test_second_attach_of_plain_volume_is_400_and_leaves_nothing(api, volumes):
    s1, s2 = _new_server(api, name="a"), _new_server(api, name="b")
    volume_id = _new_volume(volumes)
    status, body, _ = api.attach_volume(s1, volume_id)
    assert status == 200, body
    volumes.wait_for_volume_status(volume_id, "in-use")
    status, body, _ = api.attach_volume(s2, volume_id)
    assert status == 400, body
    assert "badRequest" in body
    status, body, _ = api.list_volume_attachments(s2)
    assert body["volumeAttachments"] == []
    assert len(_attachment_rows(volumes, volume_id)) == 1
    # attaching again to the same server: 400 too
    status, body, _ = api.attach_volume(s1, volume_id)
    assert status == 400, body


@pytest.mark.parametrize("body,expected", [
    ({"volumeAttachment": {"volumeId": "not-a-uuid"}}, 400),
    ({"volumeAttachment": {"volumeId": str(uuid.uuid4()), "bogus": 1}}, 400),
    ({"volumeAttachment": {}}, 400),
    ({"volumeAttachment": {"volumeId": str(uuid.uuid4()), "device": "sdb"}}, 400),
])
def test_bad_attach_bodies(api, body, expected):
    server_id = _new_server(api, name="bad-body")
    status, resp, _ = api.request("POST", "/servers/%s/os-volume_attachments" % server_id,
                                  body)
    assert status == expected, resp
    assert resp["badRequest"]["code"] == 400
    status, resp, _ = api.list_volume_attachments(server_id)
    assert resp["volumeAttachments"] == []


def test_missing_server_and_volume_are_404(api):
    status, body, _ = api.attach_volume(str(uuid.uuid4()), str(uuid.uuid4()))
    assert status == 404 and "itemNotFound" in body
    server_id = _new_server(api, name="nf")
    status, body, _ = api.attach_volume(server_id, str(uuid.uuid4()))
    assert status == 404 and "itemNotFound" in body
    status, body, _ = api.detach_volume(server_id, str(uuid.uuid4()))
    assert status == 404 and "itemNotFound" in body
    status, body, _ = api.list_volume_attachments(server_id)
    assert body["volumeAttachments"] == []


def test_other_project_sees_404(api, volumes, deployment):
    server_id = _new_server(api, name="mine")
    other = clients.ComputeClient(deployment.api_url, "bob:other")
    status, body, _ = other.show_server(server_id)
    assert status == 404
    status, body, _ = other.list_volume_attachments(server_id)
    assert status == 404


def test_delete_server_detaches_its_volumes(api, volumes):
    server_id = _new_server(api, name="del")
    v1, v2 = _new_volume(volumes), _new_volume(volumes)
    for v in (v1, v2):
        status, body, _ = api.attach_volume(server_id, v)
        assert status == 200, body
    for v in (v1, v2):
        volumes.wait_for_volume_status(v, "in-use")
    status, _, _ = api.delete_server(server_id)
    assert status == 204
    api.wait_for_server_deleted(server_id)
    for v in (v1, v2):
        volumes.wait_for_volume_status(v, "available")
        assert _attachment_rows(volumes, v) == []


def test_boot_from_volume(api, volumes):
    blank = _new_volume(volumes)
    status, body, _ = api.create_server(
        name="blank", image_ref="", microversion="2.37",
        block_device_mapping_v2=[{"boot_index": 0, "uuid": blank,
                                  "source_type": "volume", "destination_type": "volume"}])
    assert status == 400, body
    assert body["badRequest"]["message"] == "Block Device %s is not bootable." % blank
    assert not [s for s in api.list_servers()[1]["servers"] if s["name"] == "blank"]
    assert _attachment_rows(volumes, blank) == []
    volume_id = _new_boot_volume(volumes)
    status, body, _ = api.create_server(
        name="bfv", image_ref="", microversion="2.37",
        block_device_mapping_v2=[{"boot_index": 0, "uuid": volume_id,
                                  "source_type": "volume", "destination_type": "volume"}])
    assert status == 202, body
    server_id = body["server"]["id"]
    api.wait_for_server_status(server_id, "ACTIVE")
    volumes.wait_for_volume_status(volume_id, "in-use")
    status, body, _ = api.list_volume_attachments(server_id)
    assert [(a["volumeId"], a["device"]) for a in body["volumeAttachments"]] == \
        [(volume_id, "/dev/vda")]
    status, body, _ = api.detach_volume(server_id, volume_id)
    assert status == 400, body  # the root volume
    api.delete_server(server_id)
    api.wait_for_server_deleted(server_id)
    volumes.wait_for_volume_status(volume_id, "available")


def test_failed_attach_in_driver_leaves_nothing(api, volumes, deployment):
    from volattach.conf import CONF
    server_id = _new_server(api, name="fail")
    volume_id = _new_volume(volumes)
    CONF.set_override("fail_operations", ["attach"], group="fake_driver")
    try:
        status, body, _ = api.attach_volume(server_id, volume_id)
    finally:
        CONF.clear_override("fail_operations", group="fake_driver")
    assert status == 500, body
    status, body, _ = volumes.show_volume(volume_id)
    assert body["volume"]["status"] == "available"
    assert _attachment_rows(volumes, volume_id) == []
    status, body, _ = api.list_volume_attachments(server_id)
    assert body["volumeAttachments"] == []


def test_services_are_listed_up(admin_api):
    status, body, _ = admin_api.list_services()
    assert status == 200, body
    rows = {(s["binary"], s["host"]): s for s in body["services"]}
    assert rows[("volattach-compute", "compute1")]["state"] == "up"
    assert rows[("volattach-compute", "compute2")]["state"] == "up"
    assert any(b == "volattach-conductor" for b, _ in rows)
