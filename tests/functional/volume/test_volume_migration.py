"""Retype and migration of volumes: in place when available, through the
compute API's swap when attached (a stand-in compute API records the swap
and the test plays the compute side's part: new attachment, old one
deleted, os-migrate_volume_completion)."""
import json
import threading
import time
import uuid

import pytest

from tests.functional.volume.volume_testlib import (ADMIN, INSTANCE_A, USER1,
                                                    build_api, connector,
                                                    make_conf, serve_wsgi)


class FakeCompute:
    """A compute API that answers every swap with ``status``."""

    def __init__(self, status="202 Accepted"):
        self.status = status
        self.swaps = []
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = json.loads(environ["wsgi.input"].read(length) or b"{}")
        with self.lock:
            self.swaps.append((environ["REQUEST_METHOD"],
                               environ["PATH_INFO"],
                               environ.get("HTTP_X_AUTH_TOKEN"), body))
        start_response(self.status, [("Content-Length", "0")])
        return [b""]


@pytest.fixture
def compute():
    fake = FakeCompute()
    server = serve_wsgi(fake)
    fake.url = "http://127.0.0.1:%d/v2.1" % server.server_address[1]
    yield fake
    server.shutdown()
    server.server_close()


@pytest.fixture
def api(tmp_path, compute):
    conf = make_conf(tmp_path,
                     connection="sqlite:///%s" % (tmp_path / "v.sqlite"),
                     compute_endpoint=compute.url)
    return build_api(conf)


def _wait(predicate, timeout=10):
    """The swap is asked for from a thread, after the 202."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _action(api, volume_id, body, token=ADMIN):
    return api.post("/volumes/%s/action" % volume_id, body, token=token)


def _attached_ro(api, vtype=None):
    """An in-use volume attached read-only to INSTANCE_A (its owner USER1)."""
    vol = api.create_volume()
    r = api.reserve(vol["id"], mode="ro")
    att_id = r.json["attachment"]["id"]
    api.put("/attachments/%s" % att_id,
            {"attachment": {"connector": connector()}})
    api.post("/attachments/%s/action" % att_id, {"os-complete": None})
    return vol, att_id


def _play_compute_swap(api, old_id, new_id, old_att_id):
    """What the compute side does for a swap: attach the new volume (same
    mode), delete the old attachment, call the completion back."""
    mode = api.attachment(old_att_id)["attach_mode"]
    r = api.reserve(new_id, mode=mode)
    assert r.status_code == 200, r.text
    new_att = r.json["attachment"]["id"]
    api.put("/attachments/%s" % new_att,
            {"attachment": {"connector": connector()}})
    api.post("/attachments/%s/action" % new_att, {"os-complete": None})
    assert api.delete("/attachments/%s" % old_att_id).status_code == 200
    r = _action(api, old_id, {"os-migrate_volume_completion": {
        "new_volume": new_id, "error": False}})
    assert r.status_code == 200, r.text
    return r.json["save_volume_id"], new_att


def test_retype_available_volume_in_place(api, compute):
    gold = api.create_type(name="gold")
    vol = api.create_volume()
    r = _action(api, vol["id"], {"os-retype": {"new_type": "gold"}},
                token=USER1)
    assert r.status_code == 202, r.text
    shown = api.volume(vol["id"])
    assert (shown["volume_type"], shown["status"]) == ("gold", "available")
    assert compute.swaps == []
    # the same type again, or an unknown one, is refused
    r = _action(api, vol["id"], {"os-retype": {"new_type": gold["id"]}},
                token=USER1)
    assert r.status_code == 400 and "Retype needs volume" in r.text
    r = _action(api, vol["id"], {"os-retype": {"new_type": "nope"}},
                token=USER1)
    assert r.status_code == 404


def test_retype_on_demand_of_attached_volume_swaps(api, compute):
    api.create_type(name="gold")
    vol, old_att = _attached_ro(api)
    r = _action(api, vol["id"], {"os-retype": {
        "new_type": "gold", "migration_policy": "on-demand"}}, token=USER1)
    assert r.status_code == 202, r.text
    _wait(lambda: compute.swaps)
    ((method, path, token, body),) = compute.swaps
    assert (method, token) == ("PUT", "cinder:service:admin,service")
    assert path == "/v2.1/servers/%s/os-volume_attachments/%s" % (
        INSTANCE_A, vol["id"])
    new_id = body["volumeAttachment"]["volumeId"]
    source = api.volume(vol["id"], token=ADMIN)
    assert source["migration_status"] == "migrating"
    assert source["status"] == "in-use"
    target = api.volume(new_id, token=ADMIN)
    assert (target["status"], target["migration_status"],
            target["volume_type"]) == ("available", "target:%s" % vol["id"],
                                       "gold")
    # a second retype or a delete waits for this one
    r = _action(api, vol["id"], {"os-retype": {
        "new_type": "__DEFAULT__", "migration_policy": "on-demand"}},
        token=USER1)
    assert r.status_code == 400

    saved, new_att = _play_compute_swap(api, vol["id"], new_id, old_att)
    assert saved == vol["id"]
    done = api.volume(vol["id"], token=ADMIN)
    assert (done["status"], done["volume_type"],
            done["migration_status"]) == ("in-use", "gold", "success")
    # its data is the target's now: the backend names it by the target's
    # id (Cinder's name_id, shown to admins)
    assert done["os-vol-mig-status-attr:name_id"] == new_id
    assert source["os-vol-mig-status-attr:name_id"] is None
    assert [a["attachment_id"] for a in done["attachments"]] == [new_att]
    assert api.get("/volumes/%s" % new_id, token=ADMIN).status_code == 404
    (att,) = api.attachments_of(vol["id"])
    assert att["id"] == new_att
    assert api.attachment(new_att)["attach_mode"] == "ro"
    # the migrated volume detaches and deletes like any other
    assert api.delete("/attachments/%s" % new_att).status_code == 200
    assert api.delete("/volumes/%s" % vol["id"]).status_code == 202


def test_migrate_attached_volume_and_completion_error(api, compute):
    vol, old_att = _attached_ro(api)
    r = _action(api, vol["id"], {"os-migrate_volume": {
        "host": "otherhost@fake#fake"}}, token=USER1)
    assert r.status_code == 403
    r = _action(api, vol["id"], {"os-migrate_volume": {
        "host": "otherhost@fake#fake", "force_host_copy": False}})
    assert r.status_code == 202, r.text
    _wait(lambda: compute.swaps)
    new_id = compute.swaps[0][3]["volumeAttachment"]["volumeId"]
    assert api.volume(new_id, token=ADMIN)["os-vol-host-attr:host"] == \
        "otherhost@fake#fake"
    # the completion checks both volumes
    r = _action(api, new_id, {"os-migrate_volume_completion": {
        "new_volume": vol["id"]}})
    assert r.status_code == 400
    r = _action(api, vol["id"], {"os-migrate_volume_completion": {
        "new_volume": new_id, "error": True}})
    assert r.status_code == 200 and r.json == {"save_volume_id": vol["id"]}
    shown = api.volume(vol["id"], token=ADMIN)
    assert (shown["migration_status"], shown["status"]) == ("error", "in-use")
    assert api.get("/volumes/%s" % new_id, token=ADMIN).status_code == 404
    assert [a["id"] for a in api.attachments_of(vol["id"])] == [old_att]


def test_completion_of_a_volume_not_migrating_is_400(api):
    a = api.create_volume()
    b = api.create_volume()
    r = _action(api, a["id"], {"os-migrate_volume_completion": {
        "new_volume": b["id"]}})
    assert r.status_code == 400 and "not mid-migration" in r.text
    r = _action(api, a["id"], {"os-migrate_volume_completion": {
        "new_volume": str(uuid.uuid4())}})
    assert r.status_code == 404


def test_refused_swap_rolls_back(api, compute):
    compute.status = "409 Conflict"
    api.create_type(name="gold")
    vol, old_att = _attached_ro(api)
    r = _action(api, vol["id"], {"os-retype": {
        "new_type": "gold", "migration_policy": "on-demand"}}, token=USER1)
    assert r.status_code == 202, r.text
    _wait(lambda: api.volume(vol["id"], token=ADMIN)["migration_status"]
          == "error")
    shown = api.volume(vol["id"], token=ADMIN)
    assert (shown["migration_status"], shown["volume_type"],
            shown["status"]) == ("error", "__DEFAULT__", "in-use")
    listed = api.get("/volumes?all_tenants=1", token=ADMIN).json["volumes"]
    assert [v["id"] for v in listed] == [vol["id"]]


def test_available_volume_migrates_in_place(api, compute):
    vol = api.create_volume()
    r = _action(api, vol["id"], {"os-migrate_volume": {
        "host": "otherhost@fake#fake"}})
    assert r.status_code == 202, r.text
    shown = api.volume(vol["id"], token=ADMIN)
    assert (shown["os-vol-host-attr:host"], shown["migration_status"]) == (
        "otherhost@fake#fake", "success")
    assert compute.swaps == []
    assert api.delete("/volumes/%s" % vol["id"]).status_code == 202
