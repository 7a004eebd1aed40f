"""os-extend through the volume service's API: the size reaches the storage
(file: the image's virtual size), an in-use volume from 3.42 (events to the
compute API, one per attached server), Cinder's 400s for bad input, and a
backend failure that leaves the volume as it was."""
import json
import os
import signal
import subprocess
import threading

import pytest

from tests.functional.volume.volume_testlib import (
    ADMIN, INSTANCE_A, INSTANCE_B, USER1, Api, ComputeStub, build_api,
    free_port, make_conf)
from volattach.volume import manager as manager_mod
from volattach.volume import service
from volattach.volume import wsgi
from volattach.volume.backends import file as file_backend

INSTANCE_C = "9a1e7c55-8a43-4c0e-9d7e-2b1f0c3d4e5f"

GiB = 1024 ** 3


def _all_ok(events):
    return 200, {"events": [dict(e, code=200, status="completed")
                            for e in events]}


@pytest.fixture
def compute():
    stub = ComputeStub(_all_ok)
    yield stub
    stub.close()


def _conf(tmp_path, compute_url, **volume):
    return make_conf(tmp_path, connection="sqlite:///%s"
                     % (tmp_path / "volume.sqlite"),
                     compute_endpoint=compute_url, **volume)


@pytest.fixture
def api(tmp_path, compute):
    return build_api(_conf(tmp_path, compute.url))


@pytest.fixture
def file_api(tmp_path, compute):
    conf = _conf(tmp_path, compute.url, backend="file",
                 backend_name="file", volumes_dir=str(tmp_path / "vols"),
                 export_port=free_port())
    api = build_api(conf)
    api.volumes_dir = str(tmp_path / "vols")
    yield api
    try:
        with open(os.path.join(api.volumes_dir, ".qsd", "qsd.pid")) as f:
            os.kill(int(f.read().strip()), signal.SIGTERM)
    except (OSError, ValueError):
        pass


def _extend(api, volume_id, new_size, mv="3.42", token=USER1):
    return api.post("/volumes/%s/action" % volume_id,
                    {"os-extend": {"new_size": new_size}}, mv=mv,
                    token=token)


def _message(resp):
    assert resp.status_code == 400, resp.text
    return resp.json["badRequest"]["message"]


def test_available_extend_changes_the_size_and_posts_no_event(api, compute):
    vol = api.create_volume(size=1)
    assert _extend(api, vol["id"], 2, mv="3.0").status_code == 202
    shown = api.volume(vol["id"])
    assert (shown["size"], shown["status"]) == (2, "available")
    assert compute.requests == []


def test_in_use_extend_at_3_42_posts_one_event_per_attached_server(
        api, compute):
    vol = api.create_volume(size=1, multiattach=True)
    api.attach(vol["id"], INSTANCE_A)
    api.attach(vol["id"], INSTANCE_B, host="compute-2")
    r = _extend(api, vol["id"], 3)
    assert r.status_code == 202, r.text
    shown = api.volume(vol["id"])
    assert (shown["size"], shown["status"]) == (3, "in-use")
    assert compute.received.wait(30), "no event reached the compute API"
    [(path, headers, body)] = compute.requests
    assert path == "/v2.1/os-server-external-events"
    assert headers["X-OpenStack-Nova-API-Version"] == "2.51"
    assert sorted(body["events"], key=lambda e: e["server_uuid"]) == sorted(
        [{"name": "volume-extended", "server_uuid": s, "tag": vol["id"]}
         for s in (INSTANCE_A, INSTANCE_B)], key=lambda e: e["server_uuid"])


def test_in_use_extend_below_3_42_is_cinders_400(api, compute):
    vol = api.create_volume(size=1)
    api.attach(vol["id"])
    assert _message(_extend(api, vol["id"], 2, mv="3.41")) == (
        "Invalid volume: Volume %s status must be '{'status': "
        "'available'}' to extend, currently in-use." % vol["id"])
    shown = api.volume(vol["id"])
    assert (shown["size"], shown["status"]) == (1, "in-use")


@pytest.mark.parametrize("new_size", [1, 2])
def test_equal_or_smaller_size_is_cinders_400(api, new_size):
    vol = api.create_volume(size=2)
    assert _message(_extend(api, vol["id"], new_size)) == (
        "Invalid input received: New size for extend must be greater than "
        "current size. (current: 2, extended: %d)." % new_size)
    assert api.volume(vol["id"])["size"] == 2


def test_reserved_or_detaching_volume_is_cinders_400(api, compute):
    reserved = api.create_volume(size=1)
    assert api.reserve(reserved["id"]).status_code == 200
    assert _message(_extend(api, reserved["id"], 2)) == (
        "Invalid volume: Volume %s status must be '{'status': "
        "'available'}' to extend, currently reserved." % reserved["id"])
    detaching = api.create_volume(size=1)
    api.attach(detaching["id"])
    r = api.post("/volumes/%s/action" % detaching["id"],
                 {"os-begin_detaching": None})
    assert r.status_code == 202, r.text
    assert _message(_extend(api, detaching["id"], 2)) == (
        "Invalid volume: Volume %s status must be '{'status': "
        "'available'}' to extend, currently detaching." % detaching["id"])
    for vol, status in ((reserved, "reserved"), (detaching, "detaching")):
        shown = api.volume(vol["id"])
        assert (shown["size"], shown["status"]) == (1, status)
    assert compute.requests == []


def test_compute_api_down_leaves_the_volume_in_use_at_its_new_size(tmp_path):
    down = "http://127.0.0.1:%d/v2.1" % free_port()
    api = build_api(_conf(tmp_path, down))
    vol = api.create_volume(size=1)
    api.attach(vol["id"])
    assert _extend(api, vol["id"], 2).status_code == 202
    shown = api.volume(vol["id"])
    assert (shown["size"], shown["status"]) == (2, "in-use")


# -- the file backend: real files, a real storage daemon -----------------------

def _virtual_size(path):
    out = subprocess.run(["qemu-img", "info", "--output=json", "-f", "raw",
                          path], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["virtual-size"]


def test_file_extend_grows_the_image_and_in_use_is_refused(file_api,
                                                           compute):
    pytest.importorskip("qemu.qmp")
    api = file_api
    vol = api.create_volume(size=1)
    path = os.path.join(api.volumes_dir, "volume-%s" % vol["id"])
    assert _extend(api, vol["id"], 2).status_code == 202
    assert _virtual_size(path) == 2 * GiB
    assert api.volume(vol["id"])["size"] == 2
    att = api.attach(vol["id"])
    assert _message(_extend(api, vol["id"], 3)) == (
        "Invalid volume: Volume %s is in-use and %s." % (
            vol["id"], file_backend.FileBackend.ONLINE_EXTEND_REFUSED))
    shown = api.volume(vol["id"])
    assert (shown["size"], shown["status"]) == (2, "in-use")
    assert _virtual_size(path) == 2 * GiB
    assert compute.requests == []
    # detach, extend, attach: the export serves the new size
    assert api.delete("/attachments/%s" % att).status_code == 200
    assert _extend(api, vol["id"], 3).status_code == 202
    assert _virtual_size(path) == 3 * GiB


def test_file_backend_failure_leaves_the_volume_as_it_was(file_api):
    api = file_api
    vol = api.create_volume(size=1)
    os.unlink(os.path.join(api.volumes_dir, "volume-%s" % vol["id"]))
    r = _extend(api, vol["id"], 2)
    assert r.status_code == 503, r.text
    assert "could not extend volume %s" % vol["id"] in r.text
    shown = api.volume(vol["id"])
    assert (shown["size"], shown["status"]) == (1, "available")


# -- races: what comes while the backend grows the volume ---------------------

class GatedBackend:
    """The volume's backend, stopping inside extend_volume until released
    (a pause point; the fake backend does the rest)."""

    def __init__(self, backend):
        self.backend = backend
        self.entered = threading.Event()
        self.release = threading.Event()

    def __getattr__(self, name):
        return getattr(self.backend, name)

    def extend_volume(self, volume, new_size, attached=False):
        self.entered.set()
        assert self.release.wait(30)
        return self.backend.extend_volume(volume, new_size, attached)


def test_attach_delete_and_detach_while_extending(tmp_path, compute):
    conf = _conf(tmp_path, compute.url)
    service.prepare(conf)
    manager = manager_mod.VolumeManager(conf)
    gate = GatedBackend(manager.backends.by_name["fake"])
    manager.backends.by_name["fake"] = gate
    api = Api(wsgi.make_app(conf, manager))
    vol = api.create_volume(size=1, multiattach=True)
    api.attach(vol["id"], INSTANCE_A)
    b = api.attach(vol["id"], INSTANCE_B, host="compute-2")
    answers = []
    extend = threading.Thread(target=lambda: answers.append(
        _extend(api, vol["id"], 2)))
    extend.start()
    try:
        assert gate.entered.wait(30)
        assert api.volume(vol["id"])["status"] == "extending"
        # a new attachment, a delete, a begin-detaching: refused by status
        assert api.reserve(vol["id"], INSTANCE_C).status_code == 400
        assert api.delete("/volumes/%s" % vol["id"]).status_code == 400
        r = api.post("/volumes/%s/action" % vol["id"],
                     {"os-begin_detaching": None})
        assert r.status_code == 400
        # a detach (a server deleted meanwhile) goes through
        assert api.delete("/attachments/%s" % b).status_code == 200
        assert api.volume(vol["id"])["status"] == "extending"
    finally:
        gate.release.set()
        extend.join(30)
    assert answers[0].status_code == 202, answers[0].text
    shown = api.volume(vol["id"])
    assert (shown["size"], shown["status"]) == (2, "in-use")
    assert compute.received.wait(30)
    [(_, _, body)] = compute.requests
    assert body["events"] == [{"name": "volume-extended",
                               "server_uuid": INSTANCE_A, "tag": vol["id"]}]


def test_a_volume_left_extending_recovers_at_the_next_start(tmp_path,
                                                            compute):
    conf = _conf(tmp_path, compute.url)
    api = build_api(conf)
    attached = api.create_volume(size=1)
    api.attach(attached["id"])
    detached = api.create_volume(size=1)
    for vol in (attached, detached):     # a service that died mid-extend
        r = api.post("/volumes/%s/action" % vol["id"],
                     {"os-reset_status": {"status": "extending"}},
                     token=ADMIN)
        assert r.status_code == 202, r.text
    service.prepare(conf)                # the next start
    for vol, status in ((attached, "in-use"), (detached, "available")):
        shown = api.volume(vol["id"])
        assert (shown["size"], shown["status"]) == (1, status)
    assert _extend(api, detached["id"], 2).status_code == 202


@pytest.mark.parametrize("migration_status", ["migrating", "target:x"])
def test_a_volume_being_migrated_is_not_extended(api, migration_status):
    vol = api.create_volume(size=1)
    api.attach(vol["id"])
    r = api.post("/volumes/%s/action" % vol["id"], {"os-reset_status": {
        "migration_status": migration_status}}, token=ADMIN)
    assert r.status_code == 202, r.text
    assert _message(_extend(api, vol["id"], 2)) == (
        "Invalid volume: Volume %s is being migrated (migration_status %s): "
        "extend it once the migration is done." % (vol["id"],
                                                   migration_status))
    shown = api.volume(vol["id"])
    assert (shown["size"], shown["status"]) == (1, "in-use")
