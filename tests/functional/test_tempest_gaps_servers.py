"""tempest's servers tests beyond the attach selections (issue 22, item 7):
rebuild's answer carries ``key_name`` from 2.54; PUT /servers/{id} unpins
and re-pins ``pinned_availability_zone`` from 2.104 (Nova's transitions,
409 for the others); a zone no compute is in is 400 at create; from 2.93
a volume-backed server's rebuild re-images its root volume.  Answers are
checked with tempest's own response schemas; refusals change nothing.
"""
import uuid

import pytest
from tempest.lib.api_schema.response.compute.v2_54 import servers as v254
from tempest.lib.api_schema.response.compute.v2_57 import servers as v257
from tempest.lib.api_schema.response.compute.v2_89 import servers as v289
from tempest.lib.api_schema.response.compute.v2_100 import servers as v2100
from tempest.lib.common import rest_client

from tests.functional.test_attach_detach import (_new_boot_volume,
                                                 _new_server, _new_volume)
from volattach import context
from volattach import objects
from volattach.conf import CONF

IMAGE_ALT = CONF.compute.fake_images[1]


class _Resp(dict):
    def __init__(self, status, headers):
        super().__init__(headers)
        self.status = status


def _tempest_check(schema, status, body, headers):
    """tempest's own check of an answer (status and body)."""
    rest_client.RestClient.validate_response(schema, _Resp(status, headers),
                                             body)


def _rebuild(api, server_id, microversion, **fields):
    body = {"imageRef": IMAGE_ALT}
    body.update(fields)
    return api.request("POST", "/servers/%s/action" % server_id,
                       {"rebuild": body}, microversion=microversion)


def _put(api, server_id, fields, microversion="2.104"):
    return api.request("PUT", "/servers/%s" % server_id, {"server": fields},
                       microversion=microversion)


def _show(api, server_id, microversion="2.104"):
    status, body, _ = api.request("GET", "/servers/%s" % server_id,
                                  microversion=microversion)
    assert status == 200, body
    return body["server"]


def _host(server_id):
    ctx = context.get_admin_context()
    return objects.Instance.get_by_uuid(ctx, server_id).host


def _stored_zone(server_id):
    ctx = context.get_admin_context()
    return objects.Instance.get_by_uuid(ctx, server_id).availability_zone


# -- rebuild: key_name from 2.54 ----------------------------------------------

def test_rebuild_answer_has_key_name_from_2_54(api):
    key_name = "gap-%s" % uuid.uuid4().hex[:8]
    status, body, _ = api.request("POST", "/os-keypairs",
                                  {"keypair": {"name": key_name}})
    assert status == 200, body
    server_id = _new_server(api, name="keyed")

    # tempest's ServerShowV254Test: rebuild with a key at 2.54
    status, body, headers = _rebuild(api, server_id, "2.54",
                                     key_name=key_name)
    assert status == 202, body
    assert body["server"]["key_name"] == key_name
    _tempest_check(v254.rebuild_server_with_admin_pass, status, body, headers)
    api.wait_for_server_status(server_id, "ACTIVE")
    assert _show(api, server_id, "2.75")["key_name"] == key_name

    # ServerShowV257Test: user_data at 2.57, the key kept
    status, body, headers = _rebuild(api, server_id, "2.57",
                                     user_data="ZWNobyAiaGVsbG8gd29ybGQi")
    assert status == 202, body
    assert body["server"]["key_name"] == key_name
    assert body["server"]["user_data"] == "ZWNobyAiaGVsbG8gd29ybGQi"
    _tempest_check(v257.rebuild_server_with_admin_pass, status, body, headers)
    api.wait_for_server_status(server_id, "ACTIVE")

    # null removes the key, and the answer says so
    status, body, _ = _rebuild(api, server_id, "2.54", key_name=None)
    assert status == 202, body
    assert body["server"]["key_name"] is None
    api.wait_for_server_status(server_id, "ACTIVE")

    # before 2.54 neither the request nor the answer has it (Nova's 2.53)
    status, body, _ = _rebuild(api, server_id, "2.53")
    assert status == 202, body
    assert "key_name" not in body["server"]
    api.wait_for_server_status(server_id, "ACTIVE")


# -- pinned_availability_zone (2.104) ------------------------------------------

def test_unpin_and_repin_availability_zone(api):
    server_id = _new_server(api, name="pinned", availability_zone="nova")
    assert _show(api, server_id, "2.96")["pinned_availability_zone"] == "nova"
    # below 2.96 the key is not shown
    assert "pinned_availability_zone" not in _show(api, server_id, "2.95")

    status, body, headers = _put(api, server_id,
                                 {"pinned_availability_zone": None})
    assert status == 200, body
    assert body["server"]["pinned_availability_zone"] is None
    _tempest_check(v2100.update_server, status, body, headers)
    shown = _show(api, server_id)
    assert shown["pinned_availability_zone"] is None
    assert shown["OS-EXT-AZ:availability_zone"] == "nova"   # still there
    assert _stored_zone(server_id) is None

    # unpin again: nothing to do, 200
    status, body, _ = _put(api, server_id, {"pinned_availability_zone": None})
    assert status == 200, body
    assert body["server"]["pinned_availability_zone"] is None

    # re-pin to the zone it is in, with a rename in the same request
    status, body, headers = _put(api, server_id, {
        "pinned_availability_zone": "nova", "name": "repinned"})
    assert status == 200, body
    assert body["server"]["pinned_availability_zone"] == "nova"
    assert body["server"]["name"] == "repinned"
    _tempest_check(v2100.update_server, status, body, headers)
    assert _show(api, server_id)["pinned_availability_zone"] == "nova"

    # pinning to the zone it is pinned to: a no-op, 200
    status, body, _ = _put(api, server_id, {"pinned_availability_zone": "nova"})
    assert status == 200, body
    assert body["server"]["pinned_availability_zone"] == "nova"


def test_a_server_created_without_a_zone_is_not_pinned(api):
    server_id = _new_server(api, name="free")
    shown = _show(api, server_id)
    assert shown["pinned_availability_zone"] is None
    assert shown["OS-EXT-AZ:availability_zone"] == "nova"
    status, body, _ = _put(api, server_id, {"pinned_availability_zone": "nova"})
    assert status == 200, body
    assert _show(api, server_id)["pinned_availability_zone"] == "nova"


@pytest.mark.parametrize("zone,microversion,code,pinned", [
    # the key is not in the schema before 2.104
    (None, "2.103", 400, "nova"),
    ("nova", "2.103", 400, None),
    # pinned to one zone: not straight to another (unpin first)
    ("elsewhere", "2.104", 409, "nova"),
    # unpinned: only the zone the server is in
    ("elsewhere", "2.104", 409, None),
    ("nova:compute1", "2.104", 409, None),
    # not a zone name
    ("", "2.104", 400, "nova"),
    ("z" * 256, "2.104", 400, None),
    (5, "2.104", 400, "nova"),
])
def test_refused_pin_changes_change_nothing(api, zone, microversion, code,
                                            pinned):
    server_id = _new_server(api, name="kept",
                            **({"availability_zone": pinned} if pinned else {}))
    status, body, _ = _put(api, server_id, {"pinned_availability_zone": zone,
                                            "name": "changed"}, microversion)
    assert status == code, body
    fault = {400: "badRequest", 409: "conflictingRequest"}[code]
    assert body[fault]["code"] == code
    if code == 409:
        assert ("Unpin first" if pinned else
                "can only be pinned to its current availability zone 'nova'"
                ) in body[fault]["message"]
    shown = _show(api, server_id)
    assert shown["pinned_availability_zone"] == pinned
    assert shown["name"] == "kept"                # the rename not applied
    assert shown["OS-EXT-STS:task_state"] is None


def test_a_forced_host_stays_forced_when_unpinned(api, admin_api, deployment):
    host = sorted(deployment.computes)[-1]
    status, body, _ = admin_api.create_server(
        name="forced", availability_zone="nova:%s" % host,
        microversion="2.37")
    assert status == 202, body
    server_id = body["server"]["id"]
    api_server = admin_api.wait_for_server_status(server_id, "ACTIVE")
    assert api_server["OS-EXT-SRV-ATTR:host"] == host
    shown = _show(admin_api, server_id)
    # the zone, never "zone:host"
    assert shown["pinned_availability_zone"] == "nova"
    assert shown["OS-EXT-AZ:availability_zone"] == "nova"
    assert _put(admin_api, server_id,
                {"pinned_availability_zone": None})[0] == 200
    assert _stored_zone(server_id) == ":%s" % host   # unshelve keeps the host
    assert _show(admin_api, server_id)["pinned_availability_zone"] is None
    assert _put(admin_api, server_id,
                {"pinned_availability_zone": "nova"})[0] == 200
    assert _stored_zone(server_id) == "nova:%s" % host


def test_create_in_a_zone_no_compute_is_in_is_400(api):
    before = api.list_servers()[1]["servers"]
    status, body, _ = api.create_server(name="nowhere",
                                        availability_zone="mars",
                                        microversion="2.37")
    assert status == 400, body
    assert body["badRequest"]["message"] == (
        "The requested availability zone is not available")
    assert api.list_servers()[1]["servers"] == before


# -- rebuild of a volume-backed server (2.93) ---------------------------------

def _volume_backed_server(api, volumes, deployment, data_volume=True):
    """A server booted from a volume made from the default image, with a
    data volume attached (when asked); returns (server, root, data)."""
    root = _new_boot_volume(volumes)
    status, body, _ = api.create_server(
        name="bfv", image_ref="", microversion="2.37",
        block_device_mapping_v2=[{"boot_index": 0, "uuid": root,
                                  "source_type": "volume",
                                  "destination_type": "volume"}])
    assert status == 202, body
    server_id = body["server"]["id"]
    api.wait_for_server_status(server_id, "ACTIVE")
    data = None
    if data_volume:
        data = _new_volume(volumes)
        assert api.attach_volume(server_id, data,
                                 microversion="2.20")[0] == 200
        volumes.wait_for_volume_status(data, "in-use")
    return server_id, root, data


def _image_of(volumes, volume_id):
    volume = volumes.show_volume(volume_id)[1]["volume"]
    return (volume.get("volume_image_metadata") or {}).get("image_id")


def _attachments(volumes, volume_id):
    return volumes.list_attachments(volume_id=volume_id)[1]["attachments"]


def test_rebuild_of_a_volume_backed_server_reimages_its_root(api, volumes,
                                                            deployment):
    """tempest's ServerActionsV293TestJSON.test_rebuild_volume_backed_server
    without its ssh step: the root volume keeps its id and gets the new
    image, through a new attachment; the data volume stays attached."""
    server_id, root, data = _volume_backed_server(api, volumes, deployment)
    assert _image_of(volumes, root) == CONF.compute.fake_images[0]
    old_root = _attachments(volumes, root)
    old_data = _attachments(volumes, data)
    assert len(old_root) == 1

    status, body, headers = _rebuild(
        api, server_id, "2.93", name="rebuilt", metadata={"rebuild": "server"},
        adminPass="rebuildPassw0rd")
    assert status == 202, body
    server = body["server"]
    assert (server["id"], server["image"], server["name"],
            server["adminPass"]) == (server_id, "", "rebuilt",
                                     "rebuildPassw0rd")
    _tempest_check(v289.rebuild_server_with_admin_pass, status, body,
                   headers)
    server = api.wait_for_server_status(server_id, "ACTIVE")
    assert [v["id"] for v in
            server["os-extended-volumes:volumes_attached"]] == [root, data]
    assert _image_of(volumes, root) == IMAGE_ALT
    new_root = _attachments(volumes, root)
    assert len(new_root) == 1 and new_root[0]["id"] != old_root[0]["id"]
    assert new_root[0]["status"] == "attached"
    assert volumes.show_volume(root)[1]["volume"]["status"] == "in-use"
    assert _attachments(volumes, data) == old_data      # not moved
    guest = deployment.computes[_host(server_id)].driver.guests[
        server_id]
    assert guest["power"] == "running"
    devices = [a["device"] for a in api.list_volume_attachments(
        server_id)[1]["volumeAttachments"]]
    assert set(devices) <= set(guest["devices"])        # both plugged in
    ctx = context.get_admin_context()
    bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(ctx, server_id)
    root_bdm = next(b for b in bdms if b.volume_id == root)
    assert root_bdm.attachment_id == new_root[0]["id"]
    assert root_bdm.connection_info

    # the same image again re-images too (Nova from 2.93); stopped stays so
    assert api.request("POST", "/servers/%s/action" % server_id,
                       {"os-stop": None})[0] == 202
    api.wait_for_server_status(server_id, "SHUTOFF")
    status, body, _ = _rebuild(api, server_id, "2.93", imageRef=IMAGE_ALT)
    assert status == 202, body
    api.wait_for_server_status(server_id, "SHUTOFF")
    assert _attachments(volumes, root)[0]["id"] != new_root[0]["id"]
    again = deployment.computes[_host(server_id)].driver.guests[server_id]
    assert again is not guest and again["power"] == "shutdown"


@pytest.mark.parametrize("microversion,image,code", [
    ("2.92", IMAGE_ALT, 400),       # another image before 2.93
    ("2.93", "8a3c1e1c-0000-4000-8000-000000000000", 400),  # unknown image
])
def test_refused_volume_backed_rebuilds_change_nothing(api, volumes,
                                                      deployment,
                                                      microversion, image,
                                                      code):
    server_id, root, _ = _volume_backed_server(api, volumes, deployment,
                                               data_volume=False)
    before = _attachments(volumes, root)
    status, body, _ = _rebuild(api, server_id, microversion, imageRef=image)
    assert status == code, body
    assert _show(api, server_id)["OS-EXT-STS:task_state"] is None
    assert _attachments(volumes, root) == before
    assert _image_of(volumes, root) == CONF.compute.fake_images[0]


def test_a_root_volume_on_two_servers_is_not_reimaged(api, volumes,
                                                      volumes_admin,
                                                      deployment):
    status, body, _ = volumes_admin.create_volume_type(
        "ma-%s" % uuid.uuid4().hex[:6], extra_specs={"multiattach": "<is> True"})
    assert status == 200, body
    root = _new_boot_volume(volumes, volume_type=body["volume_type"]["id"])
    servers = []
    for name in ("one", "two"):
        status, body, _ = api.create_server(
            name=name, image_ref="", microversion="2.60",
            block_device_mapping_v2=[{"boot_index": 0, "uuid": root,
                                      "source_type": "volume",
                                      "destination_type": "volume"}])
        assert status == 202, body
        servers.append(body["server"]["id"])
        api.wait_for_server_status(servers[-1], "ACTIVE")
    before = _attachments(volumes, root)
    status, body, _ = _rebuild(api, servers[0], "2.93")
    assert status == 409, body
    assert "more than one server" in body["conflictingRequest"]["message"]
    assert _attachments(volumes, root) == before
    assert _show(api, servers[0])["OS-EXT-STS:task_state"] is None


def test_a_failed_reimage_leaves_the_server_in_error_and_no_attachment(
        api, volumes, deployment):
    server_id, root, data = _volume_backed_server(api, volumes, deployment)
    # the volume service cannot re-image with this image
    CONF.set_override("images", [CONF.compute.fake_images[0]], group="volume")
    try:
        assert _rebuild(api, server_id, "2.93")[0] == 202
        api.wait_for_server_status(server_id, "ERROR")
    finally:
        CONF.clear_override("images", group="volume")
    assert _image_of(volumes, root) == CONF.compute.fake_images[0]
    # the root volume keeps one attachment, the one its record names
    rows = _attachments(volumes, root)
    ctx = context.get_admin_context()
    bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(ctx, server_id)
    assert [r["id"] for r in rows] == [
        next(b for b in bdms if b.volume_id == root).attachment_id]
    # a delete releases both volumes
    assert api.delete_server(server_id)[0] == 204
    api.wait_for_server_deleted(server_id, timeout=30)
    volumes.wait_for_volume_status(root, "available")
    volumes.wait_for_volume_status(data, "available")


def test_a_conductor_before_1_7_cannot_reimage(api, volumes, deployment):
    """An API capped below ComputeTaskAPI 1.7 answers the 2.93 rebuild of
    a volume-backed server with 503 and changes nothing."""
    from tests.functional.test_volume_ops_states_and_failures import (
        _api_capped_at)
    from tests.integration import client as clients
    server_id, root, _ = _volume_backed_server(api, volumes, deployment,
                                               data_volume=False)
    before = _attachments(volumes, root)
    with _api_capped_at("1.6") as url:
        old = clients.ComputeClient(url, "alice:demo", microversion=None)
        status, body, _ = _rebuild(old, server_id, "2.93", name="renamed")
        assert status == 503, body
    shown = _show(api, server_id)
    assert shown["OS-EXT-STS:task_state"] is None and shown["name"] == "bfv"
    actions = api.request("GET", "/servers/%s/os-instance-actions"
                          % server_id)[1]["instanceActions"]
    assert "rebuild" not in [a["action"] for a in actions]
    assert _attachments(volumes, root) == before
    assert _image_of(volumes, root) == CONF.compute.fake_images[0]
