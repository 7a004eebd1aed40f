"""tempest's servers tests beyond the attach selections (issue 22, item 7):
rebuild's answer carries ``key_name`` from 2.54; PUT /servers/{id} unpins
and re-pins ``pinned_availability_zone`` from 2.104 (Nova's transitions,
409 for the others); a zone no compute is in is 400 at create.  Answers
are checked with tempest's own response schemas; refusals change nothing.
"""
import uuid

import pytest
from tempest.lib.api_schema.response.compute.v2_54 import servers as v254
from tempest.lib.api_schema.response.compute.v2_57 import servers as v257
from tempest.lib.api_schema.response.compute.v2_100 import servers as v2100
from tempest.lib.common import rest_client

from tests.functional.test_attach_detach import _new_server
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
