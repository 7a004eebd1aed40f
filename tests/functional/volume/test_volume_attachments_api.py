"""The /attachments API of volattach-volume against the Cinder 29 transcript
(cinder-29-attachments-transcript.md) and the points where this project goes
further (bug 1747985 fixed, shared connections, no leftover reservation)."""
import json

import pytest
import sqlalchemy as sa

from tests.functional.volume.volume_testlib import (
    ADMIN, BOTH_DBS, INSTANCE_A, INSTANCE_B, P1, USER1, USER2, build_api,
    connector, make_conf)

NOT_FOUND = "The resource could not be found."


def att_not_found(att_id):
    return {"itemNotFound": {"code": 404, "message":
            "Volume attachment could not be found with filter: "
            "attachment_id = %s." % att_id}}


def bad_request(message):
    return {"badRequest": {"code": 400, "message": message}}


# -- the state table ----------------------------------------------------------

@BOTH_DBS
def test_state_table_reserve_update_complete_delete(api):
    vol = api.create_volume()
    assert api.volume(vol["id"])["status"] == "available"

    r = api.reserve(vol["id"])
    assert r.status_code == 200
    att = r.json["attachment"]
    assert set(att) == {"id", "status", "instance", "volume_id",
                        "attached_at", "detached_at", "attach_mode",
                        "connection_info"}
    assert (att["status"], att["instance"], att["volume_id"]) == (
        "reserved", INSTANCE_A, vol["id"])
    assert (att["attached_at"], att["detached_at"], att["attach_mode"],
            att["connection_info"]) == ("", "", "null", {})
    assert api.volume(vol["id"])["status"] == "reserved"
    shown = api.attachment(att["id"])
    assert shown["status"] == "reserved"
    assert shown["shared_connections_by_attachment"] == []

    r = api.put("/attachments/%s" % att["id"],
                {"attachment": {"connector": connector()}})
    assert r.status_code == 200
    updated = r.json["attachment"]
    assert updated["status"] == "attaching"      # fresh, unlike Cinder's
    assert updated["attach_mode"] == "rw"
    assert updated["attached_at"] != ""
    info = updated["connection_info"]
    assert info["driver_volume_type"] == "iscsi"
    assert info["attachment_id"] == att["id"]
    assert info["access_mode"] == "rw"
    for key in ("qos_specs", "encrypted", "cacheable", "enforce_multipath",
                "target_iqn", "target_portal", "target_lun"):
        assert key in info
    assert api.volume(vol["id"])["status"] == "attaching"
    assert api.attachment(att["id"])["status"] == "attaching"

    r = api.post("/attachments/%s/action" % att["id"], {"os-complete": None})
    assert r.status_code == 204
    assert r.text == ""
    volume = api.volume(vol["id"])
    assert volume["status"] == "in-use"
    assert volume["attachments"] == [{
        "id": vol["id"], "attachment_id": att["id"], "volume_id": vol["id"],
        "server_id": INSTANCE_A, "host_name": "compute-1",
        "device": "/dev/vdb", "attached_at": updated["attached_at"]}]
    assert api.attachment(att["id"])["status"] == "attached"

    listed = api.attachments_of(vol["id"])
    assert listed == [{"id": att["id"], "status": "attached",
                       "instance": INSTANCE_A, "volume_id": vol["id"]}]
    r = api.get("/attachments/detail?instance_id=%s" % INSTANCE_A)
    assert [a["id"] for a in r.json["attachments"]] == [att["id"]]
    assert r.json["attachments"][0]["connection_info"] == info

    r = api.delete("/attachments/%s" % att["id"])
    assert (r.status_code, r.json) == (200, {"attachments": []})
    volume = api.volume(vol["id"])
    assert (volume["status"], volume["attachments"]) == ("available", [])

    r = api.get("/attachments/%s" % att["id"])
    assert (r.status_code, r.json) == (404, att_not_found(att["id"]))
    r = api.delete("/attachments/%s" % att["id"])
    assert (r.status_code, r.json) == (404, att_not_found(att["id"]))


def test_create_with_connector_reserves_and_connects_in_one_call(api):
    vol = api.create_volume()
    r = api.reserve(vol["id"], connector=connector())
    assert r.status_code == 200
    att = r.json["attachment"]
    assert att["status"] == "attaching"
    assert att["connection_info"]["attachment_id"] == att["id"]
    assert api.volume(vol["id"])["status"] == "attaching"
    r = api.post("/attachments/%s/action" % att["id"], {"os-complete": None})
    assert r.status_code == 204
    assert api.volume(vol["id"])["status"] == "in-use"


def test_complete_without_connector_marks_in_use(api):
    """Nova completes a reserve-only attachment for shelved-offloaded
    servers: the volume becomes in-use without a host connection."""
    vol = api.create_volume()
    att_id = api.reserve(vol["id"]).json["attachment"]["id"]
    r = api.post("/attachments/%s/action" % att_id, {"os-complete": None})
    assert r.status_code == 204
    assert api.attachment(att_id)["status"] == "attached"
    volume = api.volume(vol["id"])
    assert volume["status"] == "in-use"
    assert volume["attachments"][0]["host_name"] is None


# -- non-multiattach reservations ---------------------------------------------

@BOTH_DBS
@pytest.mark.parametrize("state", ["reserved", "in-use"])
def test_second_instance_refused_on_non_multiattach(api, state):
    vol = api.create_volume()
    if state == "reserved":
        assert api.reserve(vol["id"]).status_code == 200
    else:
        api.attach(vol["id"])
    r = api.reserve(vol["id"], INSTANCE_B)
    assert r.status_code == 400
    assert r.json == bad_request(
        "Invalid volume: Volume %s status must be available or downloading "
        "to reserve, but the current status is %s." % (vol["id"], state))
    assert len(api.attachments_of(vol["id"])) == 1
    assert api.volume(vol["id"])["status"] == state


def test_same_instance_may_reserve_again(api):
    vol = api.create_volume()
    first = api.reserve(vol["id"]).json["attachment"]["id"]
    r = api.reserve(vol["id"])
    assert r.status_code == 200
    second = r.json["attachment"]["id"]
    assert second != first

    r = api.delete("/attachments/%s" % first)
    assert r.status_code == 200
    assert r.json == {"attachments": [{
        "id": second, "status": "reserved", "instance": INSTANCE_A,
        "volume_id": vol["id"]}]}
    assert api.volume(vol["id"])["status"] == "reserved"
    assert api.delete("/attachments/%s" % second).json == {"attachments": []}
    assert api.volume(vol["id"])["status"] == "available"


def test_same_instance_may_reserve_an_attaching_volume(api):
    vol = api.create_volume()
    api.reserve(vol["id"], connector=connector())
    assert api.volume(vol["id"])["status"] == "attaching"
    assert api.reserve(vol["id"], mv="3.27").status_code == 200
    assert api.reserve(vol["id"], INSTANCE_B).status_code == 400


# -- multiattach: bug 1747985 fixed -------------------------------------------

@BOTH_DBS
def test_multiattach_accepts_reservations_while_reserved_or_attaching(api):
    vol = api.create_volume(multiattach=True)
    assert vol["multiattach"] is True
    a = api.reserve(vol["id"], INSTANCE_A)
    # Real Cinder 29: 400 "... current status is reserved." (bug 1747985)
    b = api.reserve(vol["id"], INSTANCE_B)
    assert (a.status_code, b.status_code) == (200, 200)
    a_id, b_id = a.json["attachment"]["id"], b.json["attachment"]["id"]
    assert api.volume(vol["id"])["status"] == "reserved"

    r = api.put("/attachments/%s" % a_id,
                {"attachment": {"connector": connector("compute-1")}})
    assert r.status_code == 200
    assert api.volume(vol["id"])["status"] == "attaching"
    # Real Cinder 29: 400 "... current status is attaching."
    c = api.reserve(vol["id"], "0b4a3b93-3ea2-4f3e-9d05-c1aee7a6f5c1")
    assert c.status_code == 200

    r = api.put("/attachments/%s" % b_id,
                {"attachment": {"connector": connector("compute-2")}})
    assert r.status_code == 200
    for att_id in (a_id, b_id):
        r = api.post("/attachments/%s/action" % att_id, {"os-complete": None})
        assert r.status_code == 204
    volume = api.volume(vol["id"])
    assert volume["status"] == "in-use"
    assert sorted(a["server_id"] for a in volume["attachments"]) == sorted(
        [INSTANCE_A, INSTANCE_B])
    assert {a["status"] for a in api.attachments_of(vol["id"])} == {
        "attached", "reserved"}


def test_delete_returns_remaining_and_frees_volume_when_none_remain(api):
    vol = api.create_volume(multiattach=True)
    a_id = api.attach(vol["id"], INSTANCE_A, "compute-1")
    b_id = api.attach(vol["id"], INSTANCE_B, "compute-2")

    r = api.delete("/attachments/%s" % a_id)
    assert r.status_code == 200
    assert r.json == {"attachments": [{
        "id": b_id, "status": "attached", "instance": INSTANCE_B,
        "volume_id": vol["id"]}]}
    volume = api.volume(vol["id"])
    assert volume["status"] == "in-use"
    assert [a["attachment_id"] for a in volume["attachments"]] == [b_id]

    r = api.delete("/attachments/%s" % b_id)
    assert (r.status_code, r.json) == (200, {"attachments": []})
    assert api.volume(vol["id"])["status"] == "available"


# -- errors of the transcript -------------------------------------------------

def test_transcript_validation_errors(api):
    vol = api.create_volume()
    r = api.reserve(vol["id"], mv="3.53", mode="ro")
    assert r.status_code == 400
    assert r.json == bad_request(
        "Invalid input for field/attribute attachment. Value: "
        "{'volume_uuid': '%s', 'instance_uuid': '%s', 'mode': 'ro'}. "
        "Additional properties are not allowed ('mode' was unexpected)"
        % (vol["id"], INSTANCE_A))
    r = api.reserve(vol["id"], mode="xx")
    assert r.json == bad_request(
        "Invalid input for field/attribute mode. Value: xx. 'xx' is not one "
        "of ['rw', 'ro']")
    r = api.post("/attachments", {"attachment": {
        "volume_uuid": "not-a-uuid", "instance_uuid": INSTANCE_A}})
    assert r.json == bad_request(
        "Invalid input for field/attribute volume_uuid. Value: not-a-uuid. "
        "'not-a-uuid' is not a 'uuid'")
    r = api.post("/attachments", {"attachment": {"instance_uuid": INSTANCE_A}})
    assert r.json == bad_request(
        "Invalid input for field/attribute attachment. Value: "
        "{'instance_uuid': '%s'}. 'volume_uuid' is a required property"
        % INSTANCE_A)
    missing = "cb9c6e85-171c-41c9-b061-d8c566b0532c"
    r = api.reserve(missing)
    assert (r.status_code, r.json) == (404, {"itemNotFound": {
        "code": 404, "message": "Volume %s could not be found." % missing}})
    # Nothing of these failed calls was left behind.
    assert api.attachments_of(vol["id"]) == []
    assert api.volume(vol["id"])["status"] == "available"

    att_id = api.reserve(vol["id"]).json["attachment"]["id"]
    path = "/attachments/%s" % att_id
    r = api.put(path, {"attachment": {"connector": {}}})
    assert r.json == bad_request(
        "Invalid input for field/attribute connector. Value: {}. {} should "
        "be non-empty")
    r = api.put(path, {"attachment": {"connector": "x"}})
    assert r.json == bad_request(
        "Invalid input for field/attribute connector. Value: x. 'x' is not "
        "of type 'object'")
    r = api.put(path, {"attachment": {}})
    assert r.json == bad_request(
        "Invalid input for field/attribute attachment. Value: {}. "
        "'connector' is a required property")

    gone = "190c1777-b61f-4be7-a483-f61ea51f0518"
    r = api.put("/attachments/%s" % gone,
                {"attachment": {"connector": connector()}})
    assert (r.status_code, r.json) == (404, att_not_found(gone))
    r = api.post("/attachments/%s/action" % gone, {"os-complete": None})
    assert (r.status_code, r.json) == (404, att_not_found(gone))


def test_delete_volume_with_attachments_refused(api):
    vol = api.create_volume()
    att_id = api.reserve(vol["id"], connector=connector()).json[
        "attachment"]["id"]
    r = api.delete("/volumes/%s" % vol["id"])
    assert r.status_code == 400
    assert r.json == bad_request(
        "Invalid volume: Volume status must be available or error or "
        "error_restoring or error_extending or error_managing and must not "
        "be migrating, attached, belong to a group, have snapshots, awaiting "
        "a transfer, or be disassociated from snapshots after volume "
        "transfer.")
    assert api.delete("/attachments/%s" % att_id).status_code == 200
    assert api.delete("/volumes/%s" % vol["id"]).status_code == 202
    assert api.get("/volumes/%s" % vol["id"]).status_code == 404


# -- microversion gating ------------------------------------------------------

def test_attachments_need_3_27(api):
    vol = api.create_volume()
    generic = {"itemNotFound": {"code": 404, "message": NOT_FOUND}}
    r = api.reserve(vol["id"], mv="3.26")
    assert (r.status_code, r.json) == (404, generic)
    assert api.get("/attachments", mv="3.26").json == generic
    assert api.attachments_of(vol["id"]) == []
    r = api.reserve(vol["id"], mv="3.27")
    assert r.status_code == 200
    att_id = r.json["attachment"]["id"]
    r = api.get("/attachments/%s" % att_id, mv="3.27")
    assert (r.status_code, r.json["attachment"]["status"]) == (200, "reserved")
    r = api.get("/attachments/%s" % att_id, mv="3.26")
    assert r.status_code == 404


def test_complete_needs_3_44(api):
    vol = api.create_volume()
    att_id = api.reserve(vol["id"], connector=connector()).json[
        "attachment"]["id"]
    r = api.post("/attachments/%s/action" % att_id, {"os-complete": None},
                 mv="3.43")
    assert (r.status_code, r.json) == (404, {"itemNotFound": {
        "code": 404, "message": NOT_FOUND}})
    assert api.attachment(att_id)["status"] == "attaching"
    r = api.post("/attachments/%s/action" % att_id, {"os-complete": None},
                 mv="3.44")
    assert r.status_code == 204
    assert api.attachment(att_id)["status"] == "attached"


def test_mode_needs_3_54_and_sets_attach_mode(api):
    vol = api.create_volume()
    assert api.reserve(vol["id"], mv="3.53", mode="ro").status_code == 400
    r = api.reserve(vol["id"], mode="ro")
    assert r.status_code == 200
    att = r.json["attachment"]
    assert (att["attach_mode"], att["connection_info"]) == ("ro", {})
    # The body's mode wins over the connector's.
    r = api.put("/attachments/%s" % att["id"],
                {"attachment": {"connector": connector(mode="rw")}})
    assert r.json["attachment"]["attach_mode"] == "ro"
    # A read-only attach is read-only on the host too (Cinder 29 still
    # said access_mode rw here).
    assert r.json["attachment"]["connection_info"]["access_mode"] == "ro"


def test_connector_mode_used_when_no_body_mode(api):
    vol = api.create_volume()
    att_id = api.reserve(vol["id"]).json["attachment"]["id"]
    r = api.put("/attachments/%s" % att_id,
                {"attachment": {"connector": connector(mode="ro")}})
    assert r.json["attachment"]["attach_mode"] == "ro"


def test_readonly_volume_attaches_ro(api):
    vol = api.create_volume()
    r = api.post("/volumes/%s/action" % vol["id"],
                 {"os-update_readonly_flag": {"readonly": True}})
    assert (r.status_code, r.text) == (202, "")
    # shown as Cinder does, where `openstack volume show` finds it
    assert api.get("/volumes/%s" % vol["id"]).json["volume"]["metadata"] == {
        "readonly": "True"}
    r = api.reserve(vol["id"], connector=connector(mode="rw"))
    att = r.json["attachment"]
    assert att["attach_mode"] == "ro"
    assert att["connection_info"]["access_mode"] == "ro"
    api.delete("/attachments/%s" % att["id"])
    api.post("/volumes/%s/action" % vol["id"],
             {"os-update_readonly_flag": {"readonly": False}})
    # Cinder keeps the key once set: "readonly": "False"
    assert api.get("/volumes/%s" % vol["id"]).json["volume"]["metadata"] == {
        "readonly": "False"}
    r = api.reserve(vol["id"], connector=connector(mode="rw"))
    assert r.json["attachment"]["attach_mode"] == "rw"


# -- bad connectors: clear 400s, nothing left behind --------------------------

INITIATOR_MISSING = ("Invalid input received: Connector doesn't have "
                     "required information: initiator")
HOST_MISSING = ("Invalid input received: Connector doesn't have required "
                "information: host")


@BOTH_DBS
@pytest.mark.parametrize("bad, message", [
    ({"foo": "bar"}, INITIATOR_MISSING),
    ({"host": "compute-1"}, INITIATOR_MISSING),
    ({"initiator": "iqn.1993-08.org.debian:01:x"}, HOST_MISSING),
    ({"initiator": "iqn.1993-08.org.debian:01:x", "host": 42}, HOST_MISSING),
])
def test_bad_connector_on_create_leaves_no_reservation(api, bad, message):
    vol = api.create_volume()
    r = api.reserve(vol["id"], connector=bad)
    assert (r.status_code, r.json) == (400, bad_request(message))
    assert api.attachments_of(vol["id"]) == []
    assert api.volume(vol["id"])["status"] == "available"
    # The volume is still free for another instance.
    assert api.reserve(vol["id"], INSTANCE_B).status_code == 200


@pytest.mark.parametrize("bad", [["host", "compute-1"], "x", 3])
def test_non_object_connector_on_create_is_400(api, bad):
    vol = api.create_volume()
    r = api.reserve(vol["id"], connector=bad)
    assert r.status_code == 400
    assert "is not of type 'object', 'null'" in r.json["badRequest"][
        "message"]
    assert api.attachments_of(vol["id"]) == []


@pytest.mark.parametrize("bad, message", [
    ({"foo": "bar"}, INITIATOR_MISSING),
    ({"host": "compute-1"}, INITIATOR_MISSING),
    ({"initiator": "iqn.1993-08.org.debian:01:x"}, HOST_MISSING),
])
def test_bad_connector_on_update_changes_nothing(api, bad, message):
    vol = api.create_volume()
    att_id = api.reserve(vol["id"]).json["attachment"]["id"]
    r = api.put("/attachments/%s" % att_id, {"attachment": {"connector": bad}})
    assert (r.status_code, r.json) == (400, bad_request(message))
    att = api.attachment(att_id)
    assert (att["status"], att["connection_info"], att["attach_mode"]) == (
        "reserved", {}, "null")
    assert api.volume(vol["id"])["status"] == "reserved"


def test_connector_stored_as_attachment_specs(api, volume_conf):
    vol = api.create_volume()
    conn = connector(extra_key={"nested": [1, 2]})
    att_id = api.reserve(vol["id"], connector=conn).json["attachment"]["id"]
    engine = sa.create_engine(volume_conf.volume.connection)
    with engine.connect() as c:
        rows = c.execute(sa.text(
            "SELECT key, value FROM attachment_specs WHERE attachment_id = "
            ":a"), {"a": att_id}).all()
    engine.dispose()
    assert len(rows) == len(conn)
    assert {k: json.loads(v) for k, v in rows} == conn
    assert dict(rows)["multipath"] == "false"
    assert dict(rows)["host"] == '"compute-1"'


# -- shared host connections --------------------------------------------------

@BOTH_DBS
def test_shared_connections_with_shared_targets(tmp_path, db_url):
    api = build_api(make_conf(tmp_path, shared_targets=True,
                              connection=db_url))
    vols = [api.create_volume() for _ in range(3)]
    assert api.volume(vols[0]["id"])["shared_targets"] is True
    a1 = api.attach(vols[0]["id"], INSTANCE_A, "compute-1")
    a2 = api.reserve(vols[1]["id"], INSTANCE_B,
                     connector=connector("compute-1")).json["attachment"]["id"]
    a3 = api.attach(vols[2]["id"], INSTANCE_A, "compute-2")
    # A reservation without a connection shares nothing.
    reserved = api.create_volume()
    a4 = api.reserve(reserved["id"], INSTANCE_B).json["attachment"]["id"]

    att1, att2, att3 = (api.attachment(a) for a in (a1, a2, a3))
    assert att1["shared_connections_by_attachment"] == [a2]
    assert att2["shared_connections_by_attachment"] == [a1]
    assert att3["shared_connections_by_attachment"] == []
    assert api.attachment(a4)["shared_connections_by_attachment"] == []
    info1, info2, info3 = (a["connection_info"] for a in (att1, att2, att3))
    assert info1["target_iqn"] == info2["target_iqn"] != info3["target_iqn"]
    assert info1["shared_target_id"] == info2["shared_target_id"]
    assert info1["shared_target_id"] not in (None, info3["shared_target_id"])
    assert info1["target_lun"] != info2["target_lun"]

    detail = api.get("/attachments/detail").json["attachments"]
    assert {a["id"]: a["shared_connections_by_attachment"]
            for a in detail}[a1] == [a2]

    api.delete("/attachments/%s" % a2)
    assert api.attachment(a1)["shared_connections_by_attachment"] == []

    # The PUT answers with the connection's sharers too.
    a5 = api.reserve(api.create_volume()["id"],
                     INSTANCE_B).json["attachment"]["id"]
    r = api.put("/attachments/%s" % a5,
                {"attachment": {"connector": connector("compute-1")}})
    assert r.json["attachment"]["shared_connections_by_attachment"] == [a1]
    assert api.attachment(a1)["shared_connections_by_attachment"] == [a5]


def test_no_shared_connections_without_shared_targets(api):
    vols = [api.create_volume() for _ in range(2)]
    assert api.volume(vols[0]["id"])["shared_targets"] is False
    a1 = api.attach(vols[0]["id"], INSTANCE_A, "compute-1")
    a2 = api.attach(vols[1]["id"], INSTANCE_A, "compute-1")
    att1, att2 = api.attachment(a1), api.attachment(a2)
    assert att1["shared_connections_by_attachment"] == []
    assert att2["shared_connections_by_attachment"] == []
    assert att1["connection_info"]["target_iqn"] != att2[
        "connection_info"]["target_iqn"]
    assert att1["connection_info"]["shared_target_id"] is None


# -- project isolation --------------------------------------------------------

def test_other_project_cannot_see_or_touch_attachments(api):
    vol = api.create_volume(token=USER1)
    att_id = api.reserve(vol["id"], token=USER1).json["attachment"]["id"]
    path = "/attachments/%s" % att_id

    assert api.get(path, token=USER2).json == att_not_found(att_id)
    r = api.put(path, {"attachment": {"connector": connector()}},
                token=USER2)
    assert (r.status_code, r.json) == (404, att_not_found(att_id))
    r = api.post(path + "/action", {"os-complete": None}, token=USER2)
    assert r.status_code == 404
    assert api.delete(path, token=USER2).status_code == 404
    assert api.get("/attachments", token=USER2).json == {"attachments": []}
    r = api.reserve(vol["id"], INSTANCE_B, token=USER2)
    assert r.status_code == 404
    assert api.get("/attachments/detail?all_tenants=1",
                   token=USER2).json == {"attachments": []}

    # Still there, untouched, for its owner and for admins.
    assert api.attachment(att_id, token=USER1)["status"] == "reserved"
    assert api.attachment(att_id, token=ADMIN)["volume_id"] == vol["id"]
    r = api.get("/attachments?all_tenants=1", token=ADMIN)
    assert att_id in [a["id"] for a in r.json["attachments"]]
    r = api.get("/attachments/%s" % att_id, token=ADMIN, project=P1)
    assert r.status_code == 200


def test_attachment_filters(api):
    v1, v2 = api.create_volume(), api.create_volume()
    a1 = api.reserve(v1["id"], INSTANCE_A).json["attachment"]["id"]
    a2 = api.reserve(v2["id"], INSTANCE_B).json["attachment"]["id"]
    ids = lambda r: [a["id"] for a in r.json["attachments"]]  # noqa: E731
    assert ids(api.get("/attachments?volume_id=%s" % v2["id"])) == [a2]
    assert ids(api.get("/attachments?instance_id=%s" % INSTANCE_A)) == [a1]
    assert sorted(ids(api.get("/attachments"))) == sorted([a1, a2])
    assert ids(api.get("/attachments/detail?volume_id=%s&instance_id=%s"
                       % (v1["id"], INSTANCE_B))) == []
