"""Real guests on volumes of a real OpenStack Cinder 29.0.0 with its RBD
driver, on the single-node Ceph of tools/start-ceph.sh (issue 20).

volattach-all runs without its volume service, its ``[cinder] endpoint``
the real Cinder of ``tests/conformance/real_cinder.py`` (backend ``rbd``:
Cinder's own ``RBDDriver`` as the cephx user ``client.cinder-real``, its
connections naming the libvirt secret ``RBD_SECRET_UUID``); the libvirt
compute opens the images with QEMU's rbd client and defines that secret
from the user's keyring itself.

Two guests share a volume of a multiattach type of real Cinder: read-write
on A, read-only on B (compute API 2.105).  Real Cinder answers B's
``mode: ro`` attachment with ``access_mode: "rw"``: the disk must still be
read-only (``<readonly/>`` in the live XML, ``/sys/block/*/ro`` 1 in the
guest, writes refused).  B reads what A wrote.  After the detaches no
watcher is left on the image.  Then both attach again and detach at once:
real Cinder refuses the second's os-begin_detaching (400) while the first
holds the volume ``detaching``, and both detaches must still succeed.

Needs what the guest tier needs, a running Ceph and Debian's
python3-rados/python3-rbd (tools/start-ceph.sh), and real Cinder (installed
from PyPI by tools/real-cinder/setup.sh on first use): without them the
tests skip, except under CI (``CI=true``), where they fail."""
import base64
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
import xml.etree.ElementTree as ET

import pytest

from tests.conformance import real_cinder as real_cinder_mod
from tests.guest import conftest as guest_env
from tests.integration import client as clients

POOL = real_cinder_mod.RBD_POOL
RBD_USER = real_cinder_mod.RBD_USER
SECRET_UUID = real_cinder_mod.RBD_SECRET_UUID
PROJECT_ID = real_cinder_mod.PROJECT_ID
PATTERN = "real-cinder-rbd-%s" % uuid.uuid4().hex[:8]
OFFSET = 2048        # sectors: away from what a partition scan reads
SKIPPED_BEGIN = "is detaching from another server"   # the API's log line


class RealCinderDeployment(guest_env.Deployment):
    """The guest tier's volattach-all without its volume service, its
    Cinder the real one at ``cinder_url``."""

    def __init__(self, tmp, image_dir, cinder_url):
        super().__init__(tmp, image_dir)
        with open(self.conf) as f:
            text = f.read()
        cinder = "[cinder]\nendpoint = %s/v3\n" % self.volume_url
        assert cinder in text and "[all]\n" in text
        text = text.replace(cinder, (
            "[cinder]\nendpoint = %s/v3\n"
            # real Cinder's noauth: the project is all after the first colon
            "noauth_include_roles = False\n" % cinder_url))
        text = text.replace("[all]\n", "[all]\nrun_volume_service = False\n")
        with open(self.conf, "w") as f:
            f.write(text)
        self.volume_url = cinder_url

    def log_text(self):
        with open(os.path.join(self.tmp, "volattach-all.log"), "rb") as f:
            return f.read().decode("utf-8", "replace")


@pytest.fixture(scope="module")
def real_cinder_rbd(tmp_path_factory, image_id):
    reason = real_cinder_mod.ceph_unavailable()
    if reason:
        guest_env._unavailable(reason)
    with real_cinder_mod.start_real_cinder(
            tmp_path_factory.mktemp("real-cinder-rbd"),
            on_unavailable=guest_env._unavailable, backend="rbd") as url:
        yield url


@pytest.fixture(scope="module")
def deployment(real_cinder_rbd, image_id):
    image_dir, _ = image_id
    # a console socket's path must fit in 108 bytes: not under pytest's tmp
    d = RealCinderDeployment(tempfile.mkdtemp(prefix="va-rc-"), image_dir,
                             real_cinder_rbd)
    d.start()
    d.created = []
    yield d
    api = clients.ComputeClient(d.api_url, "admin:%s" % PROJECT_ID)
    cinder = clients.VolumeClient(real_cinder_rbd, real_cinder_mod.TOKEN)
    try:
        guest_env.tear_down(d, api, cinder)
    finally:
        shutil.rmtree(d.tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def api(deployment):
    return clients.ComputeClient(deployment.api_url,
                                 "alice:%s" % PROJECT_ID,
                                 microversion="2.105")


@pytest.fixture(scope="module")
def cinder(real_cinder_rbd):
    return clients.VolumeClient(real_cinder_rbd, real_cinder_mod.TOKEN)


@pytest.fixture(scope="module")
def guests(api, deployment, image_id):
    _, image = image_id
    return tuple(guest_env.boot(api, deployment, image, ["rc-a", "rc-b"]))


@pytest.fixture(scope="module")
def shared_volume(cinder, deployment):
    """A volume of a multiattach type of real Cinder, on Ceph."""
    code, body, _ = cinder.create_volume_type(
        "rbd-multiattach-%s" % uuid.uuid4().hex[:6],
        {"multiattach": "<is> True"})
    assert code == 200, (code, body)
    code, body, _ = cinder.create_volume(
        size=1, volume_type=body["volume_type"]["name"])
    assert code == 202, (code, body)
    volume_id = body["volume"]["id"]
    deployment.created.append(volume_id)
    volume = cinder.wait_for_volume_status(volume_id, "available")
    assert volume["multiattach"] is True, volume
    return volume_id


def _image(volume_id):
    return "%s/volume-%s" % (POOL, volume_id)


def _watchers(volume_id):
    out = subprocess.run(["rbd", "status", "--format", "json",
                          _image(volume_id)], check=True, capture_output=True,
                         text=True, timeout=30).stdout
    return json.loads(out)["watchers"]


def _virsh(*args):
    return subprocess.run(["virsh", "-c", "qemu:///system"] + list(args),
                          check=True, capture_output=True, text=True).stdout


def _live_disk(guest, volume_id):
    """The <disk> of ``volume_id`` in the guest's live libvirt XML."""
    root = ET.fromstring(_virsh("dumpxml", "volattach-%s" % guest.id))
    for disk in root.findall("./devices/disk"):
        if disk.findtext("serial") == volume_id:
            return disk
    raise AssertionError("no disk of %s in %s" % (volume_id, guest.id))


def _keyring_key(user):
    with open(real_cinder_mod.keyring_path(user)) as f:
        for line in f:
            if line.strip().startswith("key"):
                return line.split("=", 1)[1].strip()
    raise AssertionError("no key of client.%s" % user)


def _check_rbd_disk(disk, volume_id):
    """A network disk of QEMU's rbd client on Cinder's image, as Cinder's
    user, with the libvirt secret the compute defined from its keyring
    (QEMU as root would find the keyring itself: the XML must say)."""
    source = disk.find("source")
    assert (disk.get("type"), source.get("protocol"), source.get("name")) \
        == ("network", "rbd", _image(volume_id))
    assert [(h.get("name"), h.get("port")) for h in source.findall("host")] \
        == [("127.0.0.1", "6789")]
    auth = source.find("auth")
    assert auth is not None and auth.get("username") == RBD_USER
    secret = auth.find("secret")
    assert (secret.get("type"), secret.get("uuid")) == ("ceph", SECRET_UUID)
    value = _virsh("secret-get-value", SECRET_UUID).strip()
    assert base64.b64decode(value) == base64.b64decode(_keyring_key(RBD_USER))


def _cinder_attachments(cinder, volume_id):
    """{server id: attachment} of real Cinder's detailed attachments."""
    code, body, _ = cinder.request(
        "GET", cinder._path("/attachments/detail"),
        params={"volume_id": volume_id}, microversion="3.54")
    assert code == 200, (code, body)
    return {a["instance"]: a for a in body["attachments"]}


def _attach(api, cinder, guest, volume_id, mode):
    """Attach at 2.105 (202); wait for the guest's disk and real Cinder's
    completed attachment; returns the guest's (dev, bytes, ro)."""
    since = len(guest.text())
    code, body, _ = api.attach_volume(guest.id, volume_id, attach_mode=mode)
    assert code == 202 and body is None, (code, body)
    disk = guest.wait_disk(volume_id, since=since, timeout=60)
    deadline = time.monotonic() + 60
    while True:     # the volume lists completed attachments only
        volume = cinder.wait_for_volume_status(volume_id, "in-use")
        if guest.id in [a["server_id"] for a in volume["attachments"]]:
            return disk
        assert time.monotonic() < deadline, volume
        time.sleep(0.1)


def _read(guest, dev):
    status, out = guest.run(
        "blockdev --flushbufs /dev/%s; dd if=/dev/%s bs=512 skip=%d count=1 "
        "2>/dev/null | head -c %d" % (dev, dev, OFFSET, len(PATTERN)))
    assert status == 0, out
    return out


def _wait_no_watcher(volume_id):
    deadline = time.monotonic() + 10
    while _watchers(volume_id):
        assert time.monotonic() < deadline, _watchers(volume_id)
        time.sleep(0.2)


def test_rw_and_ro_guests_share_a_real_cinder_rbd_volume(
        api, cinder, guests, shared_volume):
    a, b = guests
    volume_id = shared_volume
    # Cinder's RBD driver made the image of the multiattach type without
    # exclusive-lock
    info = json.loads(subprocess.run(
        ["rbd", "info", "--format", "json", _image(volume_id)], check=True,
        capture_output=True, text=True).stdout)
    assert "exclusive-lock" not in info["features"], info

    dev_a, size_a, ro_a = _attach(api, cinder, a, volume_id, "rw")
    assert (size_a, ro_a) == (1024 ** 3, "0")
    disk_a = _live_disk(a, volume_id)
    _check_rbd_disk(disk_a, volume_id)
    assert disk_a.find("readonly") is None
    status, out = a.run(
        "echo %s | dd of=/dev/%s bs=512 seek=%d count=1 conv=sync && sync"
        % (PATTERN, dev_a, OFFSET))
    assert status == 0, out
    assert PATTERN in _read(a, dev_a)

    dev_b, size_b, ro_b = _attach(api, cinder, b, volume_id, "ro")
    # real Cinder: B's attachment is ro, but its connection says rw
    attachments = _cinder_attachments(cinder, volume_id)
    assert attachments[b.id]["attach_mode"] == "ro", attachments[b.id]
    assert attachments[b.id]["connection_info"]["access_mode"] == "rw"
    assert attachments[a.id]["attach_mode"] == "rw", attachments[a.id]
    # ... and the compute still made the disk read-only
    assert (size_b, ro_b) == (1024 ** 3, "1")
    status, out = b.run("cat /sys/block/%s/ro" % dev_b)
    assert status == 0 and out.strip() == "1", out
    disk_b = _live_disk(b, volume_id)
    assert disk_b.find("readonly") is not None
    _check_rbd_disk(disk_b, volume_id)
    assert len(_watchers(volume_id)) == 2

    assert PATTERN in _read(b, dev_b)
    status, out = b.run("echo x | dd of=/dev/%s bs=512 seek=%d count=1 "
                        "conv=sync" % (dev_b, OFFSET))
    assert status != 0 and "Operation not permitted" in out, out
    assert PATTERN in _read(a, dev_a)

    for guest, left in ((a, "in-use"), (b, "available")):
        since = len(guest.text())
        code, body, _ = api.detach_volume(guest.id, volume_id)
        assert code == 202, (code, body)
        guest.wait_disk(volume_id, present=False, since=since, timeout=60)
        api.wait_for_volume_attachment_gone(guest.id, volume_id)
        cinder.wait_for_volume_status(volume_id, left)
    assert _cinder_attachments(cinder, volume_id) == {}
    _wait_no_watcher(volume_id)
    # the data stays in the cluster
    dump = subprocess.run(["rbd", "export", _image(volume_id), "-"],
                          check=True, capture_output=True, timeout=60).stdout
    assert dump[OFFSET * 512:OFFSET * 512 + len(PATTERN)] == PATTERN.encode()


def test_two_detaches_at_once_both_succeed(api, cinder, guests, shared_volume,
                                          deployment):
    """Real Cinder answers the second os-begin_detaching with 400 while the
    first detach holds the volume ``detaching``; both detaches succeed."""
    a, b = guests
    volume_id = shared_volume
    _attach(api, cinder, a, volume_id, "rw")
    _attach(api, cinder, b, volume_id, "ro")
    since = {g.id: len(g.text()) for g in guests}
    start = threading.Barrier(2)
    answers = {}

    def detach(guest):
        start.wait(10)
        answers[guest.id] = api.detach_volume(guest.id, volume_id)[:2]

    threads = [threading.Thread(target=detach, args=(g,)) for g in guests]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert {k: v[0] for k, v in answers.items()} == {a.id: 202, b.id: 202}, \
        answers
    for guest in guests:
        guest.wait_disk(volume_id, present=False, since=since[guest.id],
                        timeout=60)
        api.wait_for_volume_attachment_gone(guest.id, volume_id)
    cinder.wait_for_volume_status(volume_id, "available")
    assert _cinder_attachments(cinder, volume_id) == {}
    _wait_no_watcher(volume_id)
    # the two met: one of them found the volume detaching
    assert any(SKIPPED_BEGIN in line and volume_id in line
               for line in deployment.log_text().splitlines()), \
        "the detaches did not overlap"
