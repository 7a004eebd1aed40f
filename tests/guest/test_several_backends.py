"""Several backends in one volume service under a real guest: volattach-all
with a ``file`` and an ``rbd`` backend ([volume] enabled_backends), volume
types choosing them by ``volume_backend_name``.  An attached volume is
retyped (migration_policy on-demand) from file to rbd and back: the
compute's swap block-copies the disk onto the other backend's volume and
the guest keeps reading what it wrote.  The way back is a second swap
within the same attachment: the pivoted disk keeps the first volume's
alias, so the driver finds it at its device.

Needs what tests/guest/test_rbd.py needs (libvirt, QEMU, a running Ceph:
tools/start-ceph.sh); without them the tests skip, except under CI."""
import os
import subprocess
import time
import uuid

import pytest

from tests.guest import conftest as guest_env
from tests.guest.test_data_path import OFFSET, _attach, _read
from tests.guest.test_rbd import (POOL, RBD_USER, SERVICE_USER,
                                  ceph_unavailable, ceph_users)
from tests.guest.test_swap import _retype, _wait_migrated
from tests.integration import client as clients


class TwoBackendDeployment(guest_env.Deployment):
    """The guest tier's volattach-all with two backends: file-1 (NBD
    exports of files) and ceph-1 (images in the rbd pool)."""

    def __init__(self, tmp, image_dir):
        super().__init__(tmp, image_dir)
        with open(self.conf) as f:
            text = f.read()
        single = ("backend = file\nbackend_name = file\n"
                  "export_port = %d\n" % self.export_port)
        assert single in text
        text = text.replace(single, "enabled_backends = file-1, ceph-1\n")
        text += ("[file-1]\nvolume_backend = file\nvolumes_dir = %s\n"
                 "export_port = %d\n"
                 "[ceph-1]\nvolume_backend = rbd\nrbd_pool = %s\n"
                 "rbd_user = %s\nrbd_attach_user = %s\n"
                 % (os.path.join(self.state, "volumes"), self.export_port,
                    POOL, SERVICE_USER, RBD_USER))
        with open(self.conf, "w") as f:
            f.write(text)


@pytest.fixture(scope="module")
def two(image_id, tmp_path_factory):
    reason = ceph_unavailable()
    if reason:
        guest_env._unavailable(reason)
    image_dir, image = image_id
    ceph_users()
    d = TwoBackendDeployment(str(tmp_path_factory.mktemp("guest-two")),
                             image_dir)
    d.start()
    api = clients.ComputeClient(d.api_url, microversion="2.105")
    volumes = clients.VolumeClient(d.volume_url)
    try:
        (guest,) = guest_env.boot(api, d, image, ["two-backends"])
        yield d, api, volumes, guest
    finally:
        for server in (api.list_servers()[1] or {}).get("servers", []):
            api.delete_server(server["id"])
            api.wait_for_server_deleted(server["id"], timeout=guest_env.WAIT)
        d.stop()
        d.stop_storage_daemon()


def _images():
    return set(subprocess.run(["rbd", "ls", POOL], check=True,
                              capture_output=True, text=True,
                              timeout=30).stdout.split())


def _write(guest, dev, text):
    status, out = guest.run(
        "echo %s | dd of=/dev/%s bs=512 seek=%d count=1 conv=sync && sync"
        % (text, dev, OFFSET))
    assert status == 0, out


def test_retype_from_file_to_rbd_and_back_under_a_guest(two):
    d, api, volumes, guest = two
    suffix = uuid.uuid4().hex[:6]
    types = {}
    for backend in ("file-1", "ceph-1"):
        code, body, _ = volumes.create_volume_type(
            "%s-%s" % (backend, suffix), {"volume_backend_name": backend})
        assert code == 200, (code, body)
        types[backend] = body["volume_type"]["name"]
    code, body, _ = volumes.request("GET", volumes._path("/os-services"))
    assert code == 200, body
    assert {s["host"].split("@")[1] for s in body["services"]} == {
        "file-1", "ceph-1"}

    images = _images()
    code, body, _ = volumes.create_volume(size=1,
                                          volume_type=types["file-1"])
    assert code == 202, (code, body)
    volume_id = body["volume"]["id"]
    volumes.wait_for_volume_status(volume_id, "available")
    assert volumes.show_volume(volume_id)[1]["volume"][
        "os-vol-host-attr:host"].split("@")[1] == "file-1#file-1"
    dev, _, ro = _attach(api, volumes, guest, volume_id, "rw")
    assert ro == "0"
    pattern = "volattach-two-%s" % suffix
    _write(guest, dev, pattern)

    # file -> rbd: the data is now an image of the pool
    _retype(volumes, volume_id, types["ceph-1"])
    done = _wait_migrated(volumes, volume_id)
    assert (done["migration_status"], done["status"],
            done["volume_type"]) == ("success", "in-use",
                                     types["ceph-1"]), done
    assert done["os-vol-host-attr:host"].split("@")[1] == "ceph-1#ceph-1"
    new_images = _images() - images
    assert len(new_images) == 1, new_images
    assert pattern in _read(guest, dev, len(pattern))
    _write(guest, dev, pattern + "-2")

    # rbd -> file, in the same attachment (a second swap of one disk):
    # back on an NBD export, the rbd image goes
    _retype(volumes, volume_id, types["file-1"])
    deadline = time.monotonic() + 120
    while volumes.show_volume(volume_id)[1]["volume"][
            "volume_type"] != types["file-1"]:
        if volumes.show_volume(volume_id)[1]["volume"][
                "migration_status"] == "error":
            break
        assert time.monotonic() < deadline
        time.sleep(0.2)
    back = _wait_migrated(volumes, volume_id)
    assert (back["migration_status"], back["volume_type"],
            back["os-vol-host-attr:host"].split("@")[1]) == (
        "success", types["file-1"], "file-1#file-1"), back
    assert pattern + "-2" in _read(guest, dev, len(pattern) + 2)
    deadline = time.monotonic() + 20
    # (only this test's image: other tests share the pool, in CI too)
    while new_images & _images() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not new_images & _images()

    code, body, _ = api.detach_volume(guest.id, volume_id)
    assert code == 202, (code, body)
    volumes.wait_for_volume_status(volume_id, "available")
    code, _b, _r = volumes.request(
        "DELETE", volumes._path("/volumes/%s" % volume_id))
    assert code == 202
