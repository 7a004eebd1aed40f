"""PUT /servers/{id}: name, description (2.19), access IPs in canonical
form, hostname (2.90); the response shapes before and from 2.75; the
errors tempest's negative tests expect, with nothing changed."""
import uuid

import pytest

from tests.functional.test_attach_detach import _new_server
from tests.integration import client as clients


@pytest.fixture
def other_api(deployment):
    return clients.ComputeClient(deployment.api_url, "mallory:other")


def _put(api, server_id, fields, microversion):
    return api.request("PUT", "/servers/%s" % server_id, {"server": fields},
                       microversion=microversion)


def _show(api, server_id, microversion="2.100"):
    status, body, _ = api.request("GET", "/servers/%s" % server_id,
                                  microversion=microversion)
    assert status == 200, body
    return body["server"]


def test_update_name_description_and_access_ips(api):
    server_id = _new_server(api, name="before")
    status, body, _ = _put(api, server_id, {
        "name": "after", "description": "words",
        "accessIPv4": "1.1.1.1",
        "accessIPv6": "0000:0000:0000:0000:0000:babe:0202:0202"}, "2.19")
    assert status == 200, body
    server = body["server"]
    assert (server["id"], server["name"], server["description"],
            server["accessIPv4"], server["accessIPv6"]) == (
        server_id, "after", "words", "1.1.1.1", "::babe:202:202")
    # before 2.75 the extension attributes are left out, as Nova does
    assert not [k for k in server if k.startswith("OS-EXT-")]
    assert "key_name" not in server and "config_drive" not in server
    shown = _show(api, server_id)
    assert (shown["name"], shown["description"], shown["accessIPv4"],
            shown["accessIPv6"]) == ("after", "words", "1.1.1.1",
                                     "::babe:202:202")
    # from 2.75 the answer is the same as a show
    status, body, _ = _put(api, server_id, {"name": "again"}, "2.75")
    assert status == 200, body
    shown = _show(api, server_id, "2.75")
    assert body["server"].keys() == shown.keys()
    assert body["server"]["name"] == "again"
    assert "OS-EXT-STS:vm_state" in body["server"]
    # description: not before 2.19; null clears it
    assert _put(api, server_id, {"description": "x"}, "2.18")[0] == 400
    assert _put(api, server_id, {"description": None}, "2.19")[0] == 200
    assert _show(api, server_id)["description"] is None


def test_update_hostname_from_2_90(api, admin_api):
    server_id = _new_server(api, name="named")
    assert _put(api, server_id, {"hostname": "new-host"}, "2.89")[0] == 400
    status, body, _ = _put(api, server_id, {"hostname": "new-host"}, "2.90")
    assert status == 200, body
    assert _show(api, server_id, "2.90")["OS-EXT-SRV-ATTR:hostname"] == \
        "new-host"


@pytest.mark.parametrize("fields", [
    {"name": ""},
    {"name": "a" * 256},
    {"name": " leading"},
    {"accessIPv4": "1.1.1"},
    {"accessIPv6": "not-an-ip"},
    {"bogus": 1},
    {"OS-DCF:diskConfig": "SOMETIMES"},
])
def test_bad_updates_are_400_and_change_nothing(api, fields):
    server_id = _new_server(api, name="kept")
    before = _show(api, server_id)
    status, body, _ = _put(api, server_id, fields, "2.19")
    assert status == 400, body
    assert body["badRequest"]["code"] == 400
    assert _show(api, server_id) == before


def test_update_unknown_or_another_projects_server_is_404(api, other_api):
    status, body, _ = _put(api, str(uuid.uuid4()), {"name": "x"}, "2.1")
    assert status == 404, body
    assert body["itemNotFound"]["code"] == 404
    server_id = _new_server(api, name="mine")
    status, body, _ = _put(other_api, server_id, {"name": "theirs"}, "2.1")
    assert status == 404, body
    assert _show(api, server_id)["name"] == "mine"


def test_create_shows_access_ips_in_canonical_form(api):
    """tempest's test_verify_server_details."""
    status, body, _ = api.create_server(
        name="addressed", microversion="2.37", accessIPv4="1.1.1.1",
        accessIPv6="0000:0000:0000:0000:0000:babe:220.12.22.2")
    assert status == 202, body
    server = api.wait_for_server_status(body["server"]["id"], "ACTIVE")
    assert (server["accessIPv4"], server["accessIPv6"]) == (
        "1.1.1.1", "::babe:dc0c:1602")
