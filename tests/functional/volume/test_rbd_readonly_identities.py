"""Per-volume read-only Ceph identities through the volume API (the rbd
backend on tools/start-ceph.sh's cluster; the volume database on SQLite,
and also on PostgreSQL for the race): the key reaches the caller and
never the database, and concurrent read-only connects and disconnects of
one volume keep the identity exactly while a read-only attachment holds
it.  Retype drops and restores the image's single-writer features.

Without a running cluster the tests skip, except under CI (``CI=true``),
where they fail."""
import json
import threading
import uuid

import pytest

from tests.functional.volume.volume_testlib import (ADMIN, BOTH_DBS, Api,
                                                    build_api, connector,
                                                    make_conf)
from tests.unit.volume import test_rbd_backend as rbd_testlib

POOL = rbd_testlib.POOL


@pytest.fixture
def rbd_api(tmp_path, admin, db_url):
    prefix = "volattach-test-ro-%s" % uuid.uuid4().hex[:8]
    conf = make_conf(tmp_path, backend="rbd", backend_name="rbd",
                     connection=db_url)
    conf.set_override("rbd_pool", POOL, group="rbd")
    conf.set_override("rbd_ceph_conf", rbd_testlib.CEPH_CONF, group="rbd")
    conf.set_override("rbd_readonly_user", prefix, group="rbd")
    api = build_api(conf)
    api.prefix = prefix
    api.made = []
    yield api
    for volume_id in api.made:
        for att in api.attachments_of(volume_id):
            api.delete("/attachments/%s" % att["id"])
        api.delete("/volumes/%s" % volume_id, token=ADMIN)
        admin.mon_command(json.dumps({"prefix": "auth del", "entity":
                                      "client.%s-%s" % (prefix, volume_id)}),
                          b"")


admin = rbd_testlib.admin
bindings = rbd_testlib.bindings


def _user(api, volume_id):
    return "%s-%s" % (api.prefix, volume_id)


def _key(admin, user):
    ret, out, _ = admin.mon_command(json.dumps(
        {"prefix": "auth get", "entity": "client.%s" % user,
         "format": "json"}), b"")
    return json.loads(out)[0]["key"] if ret == 0 else None


def _connect_ro(api, volume_id, instance):
    r = api.reserve(volume_id, instance, mode="ro")
    assert r.status_code == 200, r.text
    att_id = r.json["attachment"]["id"]
    r = Api.put(api, "/attachments/%s" % att_id,
                {"attachment": {"connector": connector("compute-ro")}})
    assert r.status_code == 200, r.text
    return att_id, r.json["attachment"]["connection_info"]


def test_the_key_reaches_the_caller_and_not_the_database(rbd_api, admin):
    vol = rbd_api.create_volume(multiattach=True)
    rbd_api.made.append(vol["id"])
    att_id, info = _connect_ro(rbd_api, vol["id"], str(uuid.uuid4()))
    user = _user(rbd_api, vol["id"])
    assert info["auth_username"] == user
    assert _key(admin, user) in info["keyring"]
    stored = rbd_api.attachment(att_id)["connection_info"]
    assert stored["auth_username"] == user and "keyring" not in stored
    assert rbd_api.delete("/attachments/%s" % att_id).status_code == 200
    assert _key(admin, user) is None


@BOTH_DBS
def test_concurrent_read_only_connects_and_disconnects_of_one_volume(
        rbd_api, admin):
    """One read-only attachment stays connected while four threads
    connect and disconnect others of the same volume: the identity holds
    the key the first got all along (a disconnect that is not the last
    never removes it, a connect never makes a new key); after the last
    disconnect it is gone."""
    vol = rbd_api.create_volume(multiattach=True)
    rbd_api.made.append(vol["id"])
    user = _user(rbd_api, vol["id"])
    holder, info = _connect_ro(rbd_api, vol["id"], str(uuid.uuid4()))
    key = _key(admin, user)
    assert key in info["keyring"]
    errors = []
    start = threading.Barrier(4)

    def worker():
        try:
            start.wait()
            for _ in range(3):
                att_id, info = _connect_ro(rbd_api, vol["id"],
                                           str(uuid.uuid4()))
                assert key in info["keyring"]
                r = rbd_api.delete("/attachments/%s" % att_id)
                assert r.status_code == 200, r.text
                assert _key(admin, user) == key, "identity gone or changed"
        except Exception as e:      # reported by the main thread
            errors.append(e)
    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert _key(admin, user) == key
    assert rbd_api.delete("/attachments/%s" % holder).status_code == 200
    assert _key(admin, user) is None
    assert rbd_api.volume(vol["id"])["status"] == "available"


# -- retype keeps the image features right ------------------------------------

def _features(bindings, admin, volume_id):
    """(features, flags) of the volume's image."""
    _, rbd = bindings
    io = admin.open_ioctx(POOL)
    try:
        with rbd.Image(io, "volume-%s" % volume_id, read_only=True) as image:
            return image.features(), image.flags()
    finally:
        io.close()


def _retype(api, volume_id, type_name):
    return api.post("/volumes/%s/action" % volume_id,
                    {"os-retype": {"new_type": type_name}})


def test_retype_drops_and_restores_the_single_writer_features(
        rbd_api, admin, bindings):
    _, rbd = bindings
    single = (rbd.RBD_FEATURE_EXCLUSIVE_LOCK | rbd.RBD_FEATURE_OBJECT_MAP
              | rbd.RBD_FEATURE_FAST_DIFF)
    shared = rbd_api.create_type(extra_specs={"multiattach": "<is> True"})
    plain = rbd_api.create_type()
    vol = rbd_api.create_volume()
    rbd_api.made.append(vol["id"])
    before, _ = _features(bindings, admin, vol["id"])
    assert before & single == single        # the cluster's defaults

    r = _retype(rbd_api, vol["id"], shared["name"])
    assert r.status_code == 202, r.text
    features, _ = _features(bindings, admin, vol["id"])
    assert features & (single | rbd.RBD_FEATURE_JOURNALING) == 0
    assert rbd_api.volume(vol["id"])["multiattach"] is True

    r = _retype(rbd_api, vol["id"], plain["name"])
    assert r.status_code == 202, r.text
    features, flags = _features(bindings, admin, vol["id"])
    assert features == before
    # the object map was rebuilt: not flagged invalid
    assert flags & (rbd.RBD_FLAG_OBJECT_MAP_INVALID
                    | rbd.RBD_FLAG_FAST_DIFF_INVALID) == 0
    assert rbd_api.volume(vol["id"])["multiattach"] is False


def test_retype_of_an_attached_volume_cannot_change_multiattach(
        rbd_api, admin, bindings):
    """As Cinder: refused (400) both ways while in-use; the row and the
    image's features stay."""
    shared = rbd_api.create_type(extra_specs={"multiattach": "<is> True"})
    plain = rbd_api.create_type()
    for start, to in ((None, shared), (shared, plain)):
        extra = {"volume_type": start["id"]} if start else {}
        vol = rbd_api.create_volume(**extra)
        rbd_api.made.append(vol["id"])
        before = _features(bindings, admin, vol["id"])
        rbd_api.attach(vol["id"], str(uuid.uuid4()))
        r = _retype(rbd_api, vol["id"], to["name"])
        assert r.status_code == 400, r.text
        assert "multiattach" in r.text
        assert _features(bindings, admin, vol["id"]) == before
        shown = rbd_api.volume(vol["id"])
        assert (shown["status"], shown["multiattach"]) == (
            "in-use", start is not None)
