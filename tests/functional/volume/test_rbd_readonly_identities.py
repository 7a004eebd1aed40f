"""Per-volume read-only Ceph identities through the volume API (the rbd
backend on tools/start-ceph.sh's cluster, the volume database on SQLite):
the key reaches the caller and never the database, and concurrent
read-only connects and disconnects of one volume keep the identity
exactly while a read-only attachment holds it.

Without a running cluster the tests skip, except under CI (``CI=true``),
where they fail."""
import json
import threading
import uuid

import pytest

from tests.functional.volume.volume_testlib import (ADMIN, Api, build_api,
                                                    connector, make_conf)
from tests.unit.volume import test_rbd_backend as rbd_testlib

POOL = rbd_testlib.POOL


@pytest.fixture
def rbd_api(tmp_path, admin):
    prefix = "volattach-test-ro-%s" % uuid.uuid4().hex[:8]
    conf = make_conf(tmp_path, backend="rbd", backend_name="rbd",
                     connection="sqlite:///%s" % (tmp_path / "v.sqlite"))
    conf.set_override("rbd_pool", POOL, group="rbd")
    conf.set_override("rbd_ceph_conf", rbd_testlib.CEPH_CONF, group="rbd")
    conf.set_override("rbd_readonly_user", prefix, group="rbd")
    api = build_api(conf)
    api.prefix = prefix
    api.made = []
    yield api
    for volume_id in api.made:
        api.delete("/volumes/%s" % volume_id, token=ADMIN)


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
