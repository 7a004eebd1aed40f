"""Cinder's attach actions from before 3.27 against the attachments API."""
import uuid

from tests.functional.volume.volume_testlib import (BOTH_DBS, INSTANCE_A,
                                                    INSTANCE_B, USER2,
                                                    connector)

pytestmark = BOTH_DBS


def _action(api, volume_id, body, **kw):
    return api.post("/volumes/%s/action" % volume_id, body, **kw)


def _status(api, volume_id):
    return api.volume(volume_id)["status"]


def test_reserve_unreserve(api):
    vol = api.create_volume()
    r = _action(api, vol["id"], {"os-reserve": None})
    assert r.status_code == 202, r.text
    assert _status(api, vol["id"]) == "attaching"
    r = _action(api, vol["id"], {"os-reserve": None})
    assert r.status_code == 400
    assert "must be available to reserve" in r.text
    assert _action(api, vol["id"], {"os-unreserve": None}).status_code == 202
    assert _status(api, vol["id"]) == "available"
    assert api.attachments_of(vol["id"]) == []
    # unreserve of a volume that is not attaching does nothing
    assert _action(api, vol["id"], {"os-unreserve": None}).status_code == 202
    assert _status(api, vol["id"]) == "available"


def test_legacy_attach_detach_cycle(api):
    vol = api.create_volume()
    _action(api, vol["id"], {"os-reserve": None})
    r = _action(api, vol["id"], {"os-initialize_connection": {
        "connector": connector()}})
    assert r.status_code == 200, r.text
    info = r.json["connection_info"]
    assert info["driver_volume_type"] == "iscsi"
    assert info["data"]["access_mode"] == "rw"
    r = _action(api, vol["id"], {"os-attach": {
        "instance_uuid": INSTANCE_A, "mountpoint": "/dev/vdb",
        "mode": "rw"}})
    assert r.status_code == 202, r.text
    shown = api.volume(vol["id"])
    assert shown["status"] == "in-use"
    assert [(a["server_id"], a["device"]) for a in shown["attachments"]] == [
        (INSTANCE_A, "/dev/vdb")]
    (att,) = api.attachments_of(vol["id"])
    assert (att["status"], att["instance"]) == ("attached", INSTANCE_A)

    assert _action(api, vol["id"], {"os-begin_detaching": None}
                   ).status_code == 202
    assert _status(api, vol["id"]) == "detaching"
    assert _action(api, vol["id"], {"os-terminate_connection": {
        "connector": connector()}}).status_code == 202
    assert _action(api, vol["id"], {"os-detach": {}}).status_code == 202
    assert _status(api, vol["id"]) == "available"
    assert api.attachments_of(vol["id"]) == []
    assert api.delete("/volumes/%s" % vol["id"]).status_code == 202


def test_attach_without_reserve_and_by_host(api):
    vol = api.create_volume()
    r = _action(api, vol["id"], {"os-attach": {
        "host_name": "backup-host", "mountpoint": "/mnt"}})
    assert r.status_code == 202, r.text
    assert api.volume(vol["id"])["attachments"][0]["host_name"] == \
        "backup-host"
    r = _action(api, vol["id"], {"os-attach": {
        "instance_uuid": INSTANCE_B, "mountpoint": "/dev/vdc"}})
    assert r.status_code == 400     # not multiattach, already in-use


def test_bad_legacy_bodies(api):
    vol = api.create_volume()
    for body in ({"os-attach": {"mountpoint": "/dev/vdb"}},
                 {"os-attach": {"instance_uuid": "nope",
                                "mountpoint": "/dev/vdb"}},
                 {"os-attach": {"instance_uuid": INSTANCE_A}},
                 {"os-attach": {"instance_uuid": INSTANCE_A,
                                "mountpoint": "/dev/vdb", "mode": "xx"}},
                 {"os-initialize_connection": {}},
                 {"os-initialize_connection": {"connector": {"host": "h"}}},
                 {"os-terminate_connection": {"connector": "x"}},
                 {"os-detach": {"attachment_id": "nope"}}):
        r = _action(api, vol["id"], body)
        assert r.status_code == 400, (body, r.text)
    assert _status(api, vol["id"]) == "available"
    assert api.attachments_of(vol["id"]) == []
    r = _action(api, vol["id"], {"os-detach": {}})
    assert r.status_code == 400 and "not attached" in r.text
    r = _action(api, str(uuid.uuid4()), {"os-reserve": None})
    assert r.status_code == 404
    r = _action(api, vol["id"], {"os-reserve": None}, token=USER2)
    assert r.status_code in (403, 404)
    assert _status(api, vol["id"]) == "available"


def test_readonly_volume_refuses_rw_legacy_attach(api):
    vol = api.create_volume()
    _action(api, vol["id"], {"os-update_readonly_flag": {"readonly": True}})
    r = _action(api, vol["id"], {"os-attach": {
        "instance_uuid": INSTANCE_A, "mountpoint": "/dev/vdb", "mode": "rw"}})
    assert r.status_code == 400
    assert "Invalid attaching mode 'rw'" in r.text
    r = _action(api, vol["id"], {"os-attach": {
        "instance_uuid": INSTANCE_A, "mountpoint": "/dev/vdb", "mode": "ro"}})
    assert r.status_code == 202


def test_reserved_one_way_cannot_be_reserved_the_other(api):
    vol = api.create_volume()
    _action(api, vol["id"], {"os-reserve": None})
    r = api.reserve(vol["id"])
    assert r.status_code == 400, r.text
    _action(api, vol["id"], {"os-unreserve": None})

    assert api.reserve(vol["id"]).status_code == 200
    assert _status(api, vol["id"]) == "reserved"
    r = _action(api, vol["id"], {"os-reserve": None})
    assert r.status_code == 400
    assert _status(api, vol["id"]) == "reserved"


def test_multiattach_legacy_and_new_do_not_mix_while_pending(api):
    vol = api.create_volume(multiattach=True)
    _action(api, vol["id"], {"os-reserve": None})
    r = api.reserve(vol["id"], instance=INSTANCE_B)
    assert r.status_code == 400, r.text
    assert "reserved by os-reserve" in r.text
    _action(api, vol["id"], {"os-attach": {
        "instance_uuid": INSTANCE_A, "mountpoint": "/dev/vdb"}})
    assert _status(api, vol["id"]) == "in-use"
    # attached: the new API may add its own attachment, and os-detach then
    # needs to be told which one
    new_att = api.attach(vol["id"], instance=INSTANCE_B)
    r = _action(api, vol["id"], {"os-detach": {}})
    assert r.status_code == 400 and "More than one attachment" in r.text
    r = _action(api, vol["id"], {"os-detach": {"attachment_id": new_att}})
    assert r.status_code == 202, r.text
    (left,) = api.attachments_of(vol["id"])
    assert left["instance"] == INSTANCE_A
    assert _status(api, vol["id"]) == "in-use"
    # in-use multiattach: os-reserve is allowed, then the new API waits
    assert _action(api, vol["id"], {"os-reserve": None}).status_code == 202
    assert _status(api, vol["id"]) == "attaching"
    assert api.reserve(vol["id"], instance=INSTANCE_B).status_code == 400
