"""Version documents, microversion negotiation, request ids and noauth
authentication of volattach-volume."""
import re

import pytest

from tests.functional.volume.volume_testlib import (ADMIN, P1, P2, USER1,
                                                    connector)

REQ_ID = re.compile(r"^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-"
                    r"[0-9a-f]{12}$")


def test_version_documents_need_no_token(api):
    r = api.get("/", token=None, mv=None)
    assert r.status_code == 300
    (doc,) = r.json["versions"]
    assert (doc["id"], doc["status"], doc["min_version"], doc["version"]) == (
        "v3.0", "CURRENT", "3.0", "3.71")
    assert doc["links"][1] == {"rel": "self",
                               "href": "http://falconframework.org/v3/"}
    assert doc["media-types"][0]["type"] == (
        "application/vnd.openstack.volume+json;version=3")
    r = api.get("/v3/", token=None, mv=None)
    assert (r.status_code, r.json["versions"]) == (200, [doc])


@pytest.mark.parametrize("header, value, echoed", [
    (None, None, "volume 3.0"),
    ("OpenStack-API-Version", "volume 3.44", "volume 3.44"),
    ("OpenStack-API-Version", "volume latest", "volume 3.71"),
    ("OpenStack-API-Version", "compute 2.90", "volume 3.0"),
    ("OpenStack-Volume-microversion", "3.27", "volume 3.27"),
])
def test_microversion_negotiated_and_echoed(api, header, value, echoed):
    headers = {header: value} if header else {}
    r = api.get("/volumes", mv=None, headers=headers)
    assert r.status_code == 200
    assert r.headers["OpenStack-API-Version"] == echoed
    assert "OpenStack-API-Version" in r.headers["Vary"]


def test_microversion_errors(api):
    r = api.get("/volumes", mv="3.x")
    assert (r.status_code, r.json) == (400, {"badRequest": {
        "code": 400, "message": "API Version String 3.x is of invalid "
        "format. Must be of format MajorNum.MinorNum."}})
    r = api.get("/volumes", mv="3.72")
    assert (r.status_code, r.json) == (406, {"computeFault": {
        "code": 406, "message": "Version 3.72 is not supported by the API. "
        "Minimum is 3.0 and maximum is 3.71."}})
    assert api.get("/volumes", mv="2.0").status_code == 406


def test_every_response_has_a_request_id(api):
    ids = set()
    for r in (api.get("/", token=None), api.get("/volumes"),
              api.get("/volumes", token=None), api.get("/nowhere"),
              api.get("/volumes", mv="9.9")):
        assert REQ_ID.match(r.headers["x-openstack-request-id"]), r.headers
        ids.add(r.headers["x-openstack-request-id"])
    assert len(ids) == 5


@pytest.mark.parametrize("token", [None, "", "nocolon", ":p", "u:", "a:b:c:d"])
def test_missing_or_invalid_token_is_401(api, token):
    r = api.get("/volumes", token=token, project=P1)
    assert (r.status_code, r.json) == (401, {"unauthorized": {
        "code": 401,
        "message": "The request you have made requires authentication."}})


def test_url_project_must_be_the_token_project(api):
    r = api.get("/volumes", token=USER1, project=P2)
    assert r.status_code == 403
    assert r.json["forbidden"]["message"] == (
        "Project %s in the URL is not the project of the token (%s)."
        % (P2, P1))
    # Admins may name any project in the URL.
    assert api.get("/volumes", token=ADMIN, project=P1).status_code == 200


def test_unknown_path_is_cinder_404(api):
    r = api.get("/volumes/x/y/z")
    assert (r.status_code, r.json) == (404, {"itemNotFound": {
        "code": 404, "message": "The resource could not be found."}})
    r = api.request("PATCH", "/volumes")
    assert r.status_code == 405
    assert r.json["badMethod"]["code"] == 405


def test_service_role_header_accepted_on_connected_delete(api):
    """Real Cinder 29 answers 500 to this delete without the service role;
    this service accepts it with or without the header."""
    vol = api.create_volume()
    att_id = api.attach(vol["id"])
    r = api.delete("/attachments/%s" % att_id,
                   headers={"X-Service-Roles": "service"})
    assert (r.status_code, r.json) == (200, {"attachments": []})
    att2 = api.reserve(vol["id"], connector=connector()).json["attachment"]
    assert api.delete("/attachments/%s" % att2["id"]).status_code == 200
