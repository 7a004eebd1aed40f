"""/volumes, volume actions, /types and /os-services of volattach-volume."""
import uuid

from tests.functional.volume.volume_testlib import ADMIN, P1, USER1, USER2

# Every key of the transcript's volume view (create reply at 3.54, admin).
VOLUME_KEYS = {
    "id", "status", "size", "availability_zone", "created_at", "updated_at",
    "name", "description", "volume_type", "snapshot_id", "source_volid",
    "metadata", "links", "user_id", "bootable", "encrypted",
    "replication_status", "consistencygroup_id", "multiattach",
    "attachments", "migration_status", "group_id", "provider_id",
    "shared_targets", "service_uuid"}
ADMIN_KEYS = {"os-vol-tenant-attr:tenant_id", "os-vol-mig-status-attr:migstat",
              "os-vol-mig-status-attr:name_id", "os-vol-host-attr:host"}


def bad_request(message):
    return {"badRequest": {"code": 400, "message": message}}


# -- volumes ------------------------------------------------------------------

def test_create_answers_creating_and_get_right_after_is_available(api):
    r = api.post("/volumes", {"volume": {"size": 1, "name": "plain"}},
                 token=ADMIN)
    assert r.status_code == 202
    vol = r.json["volume"]
    assert set(vol) == VOLUME_KEYS
    assert (vol["status"], vol["size"], vol["name"], vol["volume_type"],
            vol["multiattach"], vol["attachments"], vol["bootable"],
            vol["availability_zone"], vol["service_uuid"]) == (
        "creating", 1, "plain", "__DEFAULT__", False, [], "false", "nova",
        None)
    assert vol["links"][0]["href"].endswith(
        "/v3/%s/volumes/%s" % (ADMIN.split(":")[1], vol["id"]))
    assert vol["links"][1]["rel"] == "bookmark"

    shown = api.volume(vol["id"], token=ADMIN)
    assert shown["status"] == "available"
    assert set(shown) == VOLUME_KEYS | ADMIN_KEYS
    assert shown["os-vol-tenant-attr:tenant_id"] == ADMIN.split(":")[1]
    assert shown["os-vol-host-attr:host"] == "testhost@fake#fake"
    assert shown["service_uuid"]  # the volume service's uuid
    services = api.get("/os-services", token=ADMIN).json["services"]
    assert services[0]["host"] == "testhost@fake"


def test_non_admin_view_has_no_admin_keys(api):
    vol = api.create_volume(token=USER1)
    shown = api.volume(vol["id"], token=USER1)
    assert set(shown) == VOLUME_KEYS - {"provider_id"}
    assert shown["user_id"] == "user1"


def test_view_keys_follow_microversion(api):
    vol = api.create_volume()
    old = api.get("/volumes/%s" % vol["id"], mv=None).json["volume"]
    for key in ("group_id", "shared_targets", "service_uuid"):
        assert key not in old
    assert "multiattach" in old
    new = api.get("/volumes/%s" % vol["id"], mv="3.48").json["volume"]
    assert "shared_targets" in new and "service_uuid" in new
    latest = api.get("/volumes/%s" % vol["id"], mv="latest").json["volume"]
    assert latest["volume_type_id"] and latest["consumes_quota"] is True


def test_list_summary_and_detail(api):
    v1 = api.create_volume(name="one")
    v2 = api.create_volume(name="two")
    api.create_volume(token=USER2)
    r = api.get("/volumes")
    assert r.status_code == 200
    summary = r.json["volumes"]
    assert {v["id"] for v in summary} == {v1["id"], v2["id"]}
    assert all(set(v) == {"id", "name", "links"} for v in summary)
    detail = api.get("/volumes/detail").json["volumes"]
    assert {v["status"] for v in detail} == {"available"}
    assert {v["name"] for v in detail} == {"one", "two"}
    # The project-less URL is the same resource.
    r = api.get("/v3/volumes", token=USER1)
    assert {v["id"] for v in r.json["volumes"]} == {v1["id"], v2["id"]}
    # Admins list their own project unless all_tenants.
    assert api.get("/volumes", token=ADMIN).json["volumes"] == []
    all_ = api.get("/volumes?all_tenants=1", token=ADMIN).json["volumes"]
    assert len(all_) == 3


def test_multiattach_comes_from_the_type(api):
    vol = api.create_volume(multiattach=True)
    assert vol["multiattach"] is True
    assert api.volume(vol["id"])["multiattach"] is True
    # Cinder removed the multiattach body parameter.
    r = api.post("/volumes", {"volume": {"size": 1, "multiattach": True}})
    assert r.status_code == 400
    assert r.json["badRequest"]["message"].startswith(
        "multiattach parameter has been removed.")


def test_create_errors(api):
    r = api.post("/volumes", {"volume": {"size": 0}})
    assert r.json == bad_request(
        "Invalid input for field/attribute size. Value: 0. 0 is less than "
        "the minimum of 1")
    r = api.post("/volumes", {"volume": {"size": 1, "volume_type": "nope"}})
    assert r.status_code == 404
    r = api.post("/volumes", {"volume": {}})
    assert r.status_code == 400
    r = api.request("POST", "/volumes", headers={
        "Content-Type": "application/json"})
    assert r.status_code == 400
    assert api.get("/volumes").json["volumes"] == []


def test_malformed_json_is_400(api):
    r = api.client.simulate_post(
        "/v3/%s/volumes" % P1, body="{not json",
        headers={"X-Auth-Token": USER1, "Content-Type": "application/json"})
    assert (r.status_code, r.json) == (400, bad_request(
        "Malformed request body"))


def test_delete(api):
    vol = api.create_volume()
    r = api.delete("/volumes/%s" % vol["id"], token=USER2)
    assert r.status_code == 404
    r = api.delete("/volumes/%s" % vol["id"])
    assert (r.status_code, r.text) == (202, "")
    r = api.get("/volumes/%s" % vol["id"])
    assert r.json == {"itemNotFound": {
        "code": 404, "message": "Volume %s could not be found." % vol["id"]}}
    assert api.delete("/volumes/%s" % vol["id"]).status_code == 404


def test_other_project_volume_is_not_found(api):
    vol = api.create_volume(token=USER1)
    assert api.get("/volumes/%s" % vol["id"], token=USER2).status_code == 404
    assert api.volume(vol["id"], token=ADMIN)["id"] == vol["id"]


# -- volume actions -----------------------------------------------------------

def action(api, vol_id, body, token=USER1):
    return api.post("/volumes/%s/action" % vol_id, body, token=token)


def test_begin_and_roll_detaching(api):
    vol = api.create_volume()
    r = action(api, vol["id"], {"os-begin_detaching": None})
    assert r.json == bad_request(
        "Invalid volume: Unable to detach volume. Volume status must be "
        "'in-use' and attach_status must be 'attached' to detach.")
    api.attach(vol["id"])
    r = action(api, vol["id"], {"os-begin_detaching": None})
    assert (r.status_code, r.text) == (202, "")
    assert api.volume(vol["id"])["status"] == "detaching"
    # No new reservation while detaching.
    assert api.reserve(vol["id"]).status_code == 400
    roll = {"os-roll_detaching": None}
    assert action(api, vol["id"], roll).status_code == 202
    assert api.volume(vol["id"])["status"] == "in-use"
    # roll_detaching of a volume that is not detaching changes nothing.
    assert action(api, vol["id"], roll).status_code == 202
    assert api.volume(vol["id"])["status"] == "in-use"


def test_readonly_flag_needs_available(api):
    vol = api.create_volume()
    api.attach(vol["id"])
    r = action(api, vol["id"], {"os-update_readonly_flag": {"readonly": True}})
    assert r.json == bad_request(
        "Invalid volume: Volume %s status must be available to update "
        "readonly flag, but current status is: in-use." % vol["id"])
    r = action(api, vol["id"], {"os-update_readonly_flag": {}})
    assert r.status_code == 400


def test_reset_status_is_admin_only(api):
    vol = api.create_volume()
    body = {"os-reset_status": {"status": "error"}}
    r = action(api, vol["id"], body)
    assert r.json == {"forbidden": {"code": 403, "message":
                      "Policy doesn't allow volume_extension:"
                      "volume_admin_actions:reset_status to be performed."}}
    assert api.volume(vol["id"])["status"] == "available"
    assert action(api, vol["id"], body, token=ADMIN).status_code == 202
    assert api.volume(vol["id"])["status"] == "error"
    bad = action(api, vol["id"], {"os-reset_status": {"status": "bogus"}},
                 token=ADMIN)
    assert bad.status_code == 400
    # An error volume can be deleted.
    assert api.delete("/volumes/%s" % vol["id"]).status_code == 202


def test_unknown_action(api):
    vol = api.create_volume()
    r = action(api, vol["id"], {"os-frobnicate": None})
    assert r.json == bad_request("There is no such action: os-frobnicate")


# -- volume types -------------------------------------------------------------

def test_default_type_exists_after_db_sync(api):
    types = api.get("/types").json["volume_types"]
    assert [t["name"] for t in types] == ["__DEFAULT__"]
    r = api.get("/types/%s" % types[0]["id"])
    assert r.json["volume_type"]["name"] == "__DEFAULT__"
    assert api.get("/types/default").json["volume_type"]["id"] == types[0][
        "id"]


def test_type_create_show_delete(api):
    name = "multiattach-%s" % uuid.uuid4().hex[:6]
    r = api.post("/types", {"volume_type": {
        "name": name, "extra_specs": {"multiattach": "<is> True"}}},
        token=ADMIN)
    assert r.status_code == 200
    vtype = r.json["volume_type"]
    assert set(vtype) == {"id", "name", "is_public", "extra_specs",
                          "description", "os-volume-type-access:is_public"}
    assert (vtype["name"], vtype["extra_specs"], vtype["is_public"],
            vtype["description"]) == (name, {"multiattach": "<is> True"},
                                      True, None)
    assert api.get("/types/%s" % name).json["volume_type"]["id"] == vtype[
        "id"]
    r = api.post("/types", {"volume_type": {"name": name}}, token=ADMIN)
    assert r.status_code == 409
    assert r.json == {"conflictingRequest": {
        "code": 409, "message": "Volume Type %s already exists." % name}}

    vol = api.create_volume(volume_type=name)
    assert vol["volume_type"] == name
    r = api.delete("/types/%s" % vtype["id"], token=ADMIN)
    assert r.status_code == 400
    api.delete("/volumes/%s" % vol["id"])
    r = api.delete("/types/%s" % vtype["id"], token=ADMIN)
    assert r.status_code == 202
    assert api.get("/types/%s" % vtype["id"]).status_code == 404


def test_types_manage_is_admin_only(api):
    r = api.post("/types", {"volume_type": {"name": "x"}})
    assert r.json == {"forbidden": {"code": 403, "message":
                      "Policy doesn't allow volume_extension:types_manage "
                      "to be performed."}}
    default = api.get("/types").json["volume_types"][0]
    assert api.delete("/types/%s" % default["id"]).status_code == 403
    r = api.delete("/types/%s" % default["id"], token=ADMIN)
    assert r.json == bad_request(
        "Invalid input received: Default volume type can not be deleted.")


# -- services -----------------------------------------------------------------

def test_os_services_admin_only(api):
    r = api.get("/os-services", token=ADMIN)
    assert r.status_code == 200
    (svc,) = r.json["services"]
    assert (svc["binary"], svc["host"], svc["zone"], svc["status"],
            svc["state"], svc["frozen"]) == (
        "cinder-volume", "testhost@fake", "nova", "enabled", "up", False)
    assert api.get("/os-services?binary=cinder-scheduler",
                   token=ADMIN).json == {"services": []}
    assert api.get("/os-services").status_code == 403
