"""Real guests on Ceph RBD volumes: volattach-all with the libvirt driver
and the ``rbd`` volume backend on the single-node cluster of
tools/start-ceph.sh, then the real daemons over RabbitMQ and PostgreSQL
for a live migration between two libvirt daemons.

A multiattach volume is attached read-write to guest A and read-only to
guest B: A writes and reads back, B reads A's data and cannot write (QEMU's
flag, and under it the volume's own read-only cephx identity, whose key
came in the connection and sits only in a private, ephemeral libvirt
secret); A's disk uses the dedicated read-write user (``profile rbd``,
not admin), and the volume service itself runs as a user that may manage
only the read-only users.  The disks are QEMU's own rbd clients,
``<shareable/>`` in both guests (a single-attach volume's disk is not).
After the detaches no watcher is left on the image and the read-only
identity is gone.  An attach while the monitor is down fails cleanly.
A guest with an rw and an ro rbd volume is shelved, offloaded and
unshelved with both, and another moves to the peer libvirt, whose compute
defines the secrets there.

Needs what the guest tier needs, and a running Ceph
(tools/start-ceph.sh): without it the tests skip, except under CI
(``CI=true``), where they fail."""
import base64
import json
import os
import shutil
import subprocess
import time
import uuid
import xml.etree.ElementTree as ET

import pytest

from tests.guest import conftest as guest_env
from tests.integration import client as clients

CEPH_CONF = "/etc/ceph/ceph.conf"
POOL = os.environ.get("VOLATTACH_TEST_CEPH_POOL", "volumes")
RBD_USER = "volattach-test-rw"          # read-write attachments
SERVICE_USER = "volattach-test-svc"     # the volume service itself
READONLY_USER = "volattach-readonly"    # + "-<volume id>" per volume
SERVICE_MON_CAPS = (
    'profile rbd, ' + ", ".join(
        'allow command "auth %s" with entity prefix client.%s-'
        % (command, READONLY_USER)
        for command in ("get-or-create", "caps", "get", "del")))
PATTERN = "volattach-rbd-%s" % uuid.uuid4().hex[:8]
OFFSET = 2048        # sectors: away from what a partition scan reads


def ceph_unavailable():
    """Why the cluster of tools/start-ceph.sh cannot be used, or None."""
    if not os.path.exists(CEPH_CONF):
        return "no %s (tools/start-ceph.sh)" % CEPH_CONF
    if shutil.which("rbd") is None:
        return "the rbd command is missing (tools/start-ceph.sh)"
    try:
        subprocess.run(["rbd", "ls", POOL], check=True, capture_output=True,
                       timeout=20)
    except (subprocess.SubprocessError, OSError) as e:
        return "Ceph or its pool %s does not answer (tools/start-ceph.sh): " \
            "%s" % (POOL, getattr(e, "stderr", "") or e)
    return None


def ceph_users():
    """The read-write attach user and the volume service's user of
    README's Ceph RBD volumes section, their keyrings in /etc/ceph (the
    operator's way for these two; read-only users have no file)."""
    for user, mon, osd in (
            (RBD_USER, "profile rbd", "profile rbd pool=%s" % POOL),
            (SERVICE_USER, SERVICE_MON_CAPS, "profile rbd pool=%s" % POOL)):
        # the caps of this tree, also on a user an older run made
        subprocess.run(["ceph", "auth", "get-or-create", "client." + user],
                       check=True, capture_output=True, timeout=60)
        subprocess.run(["ceph", "auth", "caps", "client." + user,
                        "mon", mon, "osd", osd],
                       check=True, capture_output=True, timeout=60)
        subprocess.run(["ceph", "auth", "get", "client." + user, "-o",
                        "/etc/ceph/ceph.client.%s.keyring" % user],
                       check=True, capture_output=True, timeout=60)


def _identity_exists(user):
    return subprocess.run(["ceph", "auth", "get", "client." + user],
                          capture_output=True, timeout=60).returncode == 0


class RBDDeployment(guest_env.Deployment):
    """The guest tier's volattach-all, its volume service on the rbd
    backend as ``rbd_user`` (a user that may manage the read-only users
    only), read-write attachments as ``rbd_attach_user``."""

    def __init__(self, tmp, image_dir, pool=POOL, rbd_user=SERVICE_USER):
        super().__init__(tmp, image_dir)
        with open(self.conf) as f:
            text = f.read()
        assert "backend = file\nbackend_name = file\n" in text
        text = text.replace("backend = file\nbackend_name = file\n",
                            "backend = rbd\nbackend_name = rbd\n")
        text += ("[rbd]\nrbd_pool = %s\nrbd_user = %s\nrbd_attach_user = "
                 "%s\n" % (pool, rbd_user, RBD_USER))
        with open(self.conf, "w") as f:
            f.write(text)


@pytest.fixture(scope="module")
def rbd_deployment(image_id, tmp_path_factory):
    reason = ceph_unavailable()
    if reason:
        guest_env._unavailable(reason)
    image_dir, _ = image_id
    ceph_users()
    d = RBDDeployment(str(tmp_path_factory.mktemp("guest-rbd")), image_dir)
    d.start()
    d.created = []
    yield d
    guest_env.tear_down(d, clients.ComputeClient(d.api_url),
                        clients.VolumeClient(d.volume_url))


@pytest.fixture(scope="module")
def rbd_api(rbd_deployment):
    return clients.ComputeClient(rbd_deployment.api_url,
                                 microversion="2.105")


@pytest.fixture(scope="module")
def rbd_volumes(rbd_deployment):
    return clients.VolumeClient(rbd_deployment.volume_url)


@pytest.fixture(scope="module")
def rbd_guests(rbd_api, rbd_deployment, image_id):
    _, image = image_id
    return tuple(guest_env.boot(rbd_api, rbd_deployment, image,
                                ["rbd-a", "rbd-b"]))


def _volume(volumes, deployment, **fields):
    code, body, _ = volumes.create_volume(size=1, **fields)
    assert code == 202, (code, body)
    volume_id = body["volume"]["id"]
    deployment.created.append(volume_id)
    volumes.wait_for_volume_status(volume_id, "available")
    return volume_id


def _attach(api, volumes, guest, volume_id, mode):
    since = len(guest.text())
    code, body, _ = api.attach_volume(guest.id, volume_id, attach_mode=mode)
    assert code == 202 and body is None, (code, body)
    disk = guest.wait_disk(volume_id, since=since, timeout=60)
    volumes.wait_for_volume_status(volume_id, "in-use")
    return disk


def _detach(api, guest, volume_id):
    since = len(guest.text())
    code, body, _ = api.detach_volume(guest.id, volume_id)
    assert code == 202, (code, body)
    guest.wait_disk(volume_id, present=False, since=since, timeout=60)
    api.wait_for_volume_attachment_gone(guest.id, volume_id)


def _virsh(*args, uri="qemu:///system"):
    return subprocess.run(["virsh", "-c", uri] + list(args),
                          check=True, capture_output=True, text=True).stdout


def _live_disk(guest, volume_id, uri="qemu:///system"):
    """The <disk> of ``volume_id`` in the guest's live libvirt XML."""
    root = ET.fromstring(_virsh("dumpxml", "volattach-%s" % guest.id,
                                uri=uri))
    for disk in root.findall("./devices/disk"):
        if disk.findtext("serial") == volume_id:
            return disk
    raise AssertionError("no disk of %s in %s" % (volume_id, guest.id))


def _keyring_key(user):
    with open("/etc/ceph/ceph.client.%s.keyring" % user) as f:
        for line in f:
            if line.strip().startswith("key"):
                return line.split("=", 1)[1].strip()
    raise AssertionError("no key of client.%s" % user)


def _check_auth(disk, volume_id, user, uri="qemu:///system"):
    """QEMU opens ``pool/volume-<id>`` as ``user`` with the libvirt
    secret the compute defined (QEMU as root would also find a keyring
    itself: the live XML must say).  The read-write user's secret holds
    its keyring's key; a volume's read-only user's is private and
    ephemeral (its value cannot be read back; QEMU reading proves it) and
    no keyring of it exists on the host."""
    source = disk.find("source")
    assert (disk.get("type"), source.get("protocol"), source.get("name")) \
        == ("network", "rbd", "%s/volume-%s" % (POOL, volume_id))
    assert [(h.get("name"), h.get("port")) for h in source.findall("host")] \
        == [("127.0.0.1", "6789")]
    auth = source.find("auth")
    assert auth is not None and auth.get("username") == user
    secret = auth.find("secret")
    assert secret.get("type") == "ceph"
    if user.startswith(READONLY_USER + "-"):
        xml = ET.fromstring(_virsh("secret-dumpxml", secret.get("uuid"),
                                   uri=uri))
        assert (xml.get("ephemeral"), xml.get("private")) == ("yes", "yes")
        assert not os.path.exists("/etc/ceph/ceph.client.%s.keyring" % user)
        return
    value = _virsh("secret-get-value", secret.get("uuid"), uri=uri).strip()
    assert base64.b64decode(value) == base64.b64decode(_keyring_key(user))


def _ro_user(volume_id):
    return "%s-%s" % (READONLY_USER, volume_id)


def _watchers(volume_id):
    out = subprocess.run(
        ["rbd", "status", "--format", "json",
         "%s/volume-%s" % (POOL, volume_id)],
        check=True, capture_output=True, text=True, timeout=30).stdout
    return json.loads(out)["watchers"]


def test_multiattach_rw_and_cluster_held_ro(rbd_api, rbd_volumes,
                                            rbd_guests, rbd_deployment):
    a, b = rbd_guests
    code, body, _ = rbd_volumes.create_volume_type(
        "rbd-multiattach-%s" % uuid.uuid4().hex[:6],
        {"multiattach": "<is> True"})
    assert code == 200, (code, body)
    volume_id = _volume(rbd_volumes, rbd_deployment,
                        volume_type=body["volume_type"]["name"])
    info = subprocess.run(["rbd", "info", "--format", "json",
                           "%s/volume-%s" % (POOL, volume_id)], check=True,
                          capture_output=True, text=True).stdout
    assert "exclusive-lock" not in json.loads(info)["features"]

    dev_a, size_a, ro_a = _attach(rbd_api, rbd_volumes, a, volume_id, "rw")
    assert (size_a, ro_a) == (1024 ** 3, "0")
    disk_a = _live_disk(a, volume_id)
    _check_auth(disk_a, volume_id, RBD_USER)
    # a multiattach volume is shareable in every guest (QEMU's share-rw)
    assert disk_a.find("shareable") is not None
    assert disk_a.find("driver").get("cache") == "none"
    status, out = a.run(
        "echo %s | dd of=/dev/%s bs=512 seek=%d count=1 conv=sync && sync"
        % (PATTERN, dev_a, OFFSET))
    assert status == 0, out
    status, out = a.run(
        "blockdev --flushbufs /dev/%s; dd if=/dev/%s bs=512 skip=%d count=1 "
        "2>/dev/null | head -c %d" % (dev_a, dev_a, OFFSET, len(PATTERN)))
    assert status == 0 and PATTERN in out, out

    dev_b, size_b, ro_b = _attach(rbd_api, rbd_volumes, b, volume_id, "ro")
    assert (size_b, ro_b) == (1024 ** 3, "1")
    disk_b = _live_disk(b, volume_id)
    assert disk_b.find("readonly") is not None
    assert disk_b.find("shareable") is not None
    # the read-only attachment's identity: the cluster refuses its writes
    _check_auth(disk_b, volume_id, _ro_user(volume_id))
    assert len(_watchers(volume_id)) == 2
    status, out = b.run(
        "blockdev --flushbufs /dev/%s; dd if=/dev/%s bs=512 skip=%d count=1 "
        "2>/dev/null | head -c %d" % (dev_b, dev_b, OFFSET, len(PATTERN)))
    assert status == 0 and PATTERN in out, out
    status, out = b.run("echo x | dd of=/dev/%s bs=512 seek=%d count=1 "
                        "conv=sync" % (dev_b, OFFSET))
    assert status != 0 and "Operation not permitted" in out, out

    _detach(rbd_api, a, volume_id)
    rbd_volumes.wait_for_volume_status(volume_id, "in-use")
    _detach(rbd_api, b, volume_id)
    rbd_volumes.wait_for_volume_status(volume_id, "available")
    # the last read-only attachment took the volume's identity with it
    assert not _identity_exists(_ro_user(volume_id))
    deadline = time.monotonic() + 10
    while _watchers(volume_id):
        assert time.monotonic() < deadline, _watchers(volume_id)
        time.sleep(0.2)

    # the data stays in the cluster
    dump = subprocess.run(
        ["rbd", "export", "%s/volume-%s" % (POOL, volume_id), "-"],
        check=True, capture_output=True, timeout=60).stdout
    assert dump[OFFSET * 512:OFFSET * 512 + len(PATTERN)] == PATTERN.encode()


def test_a_single_attach_volume_is_not_shareable(rbd_api, rbd_volumes,
                                                 rbd_guests, rbd_deployment):
    a, _ = rbd_guests
    volume_id = _volume(rbd_volumes, rbd_deployment)
    _attach(rbd_api, rbd_volumes, a, volume_id, "rw")
    disk = _live_disk(a, volume_id)
    _check_auth(disk, volume_id, RBD_USER)
    assert disk.find("shareable") is None
    _detach(rbd_api, a, volume_id)
    rbd_volumes.wait_for_volume_status(volume_id, "available")


def test_shelve_offload_and_unshelve_keep_the_rbd_volumes(
        rbd_api, rbd_volumes, rbd_deployment, image_id):
    """A guest with an rw and an ro rbd volume is shelved (offloaded: its
    QEMU and so its rbd clients go away) and unshelved: the new domain
    opens both images again with the right identities, the modes stay and
    the data written before is there."""
    _, image = image_id
    (guest,) = guest_env.boot(rbd_api, rbd_deployment, image, ["rbd-shelve"])
    rw, ro = (_volume(rbd_volumes, rbd_deployment) for _ in range(2))
    dev, _, _ = _attach(rbd_api, rbd_volumes, guest, rw, "rw")
    _attach(rbd_api, rbd_volumes, guest, ro, "ro")
    pattern = "shelve-%s" % uuid.uuid4().hex[:8]
    status, out = guest.run(
        "echo %s | dd of=/dev/%s bs=512 seek=%d count=1 conv=sync && sync"
        % (pattern, dev, OFFSET))
    assert status == 0, out
    assert [len(_watchers(v)) for v in (rw, ro)] == [1, 1]

    url = "/servers/%s/action" % guest.id
    assert rbd_api.request("POST", url, {"shelve": None})[0] == 202
    rbd_api.wait_for_server_status(guest.id, "SHELVED_OFFLOADED",
                                   timeout=guest_env.WAIT)
    deadline = time.monotonic() + 10
    while any(_watchers(v) for v in (rw, ro)):
        assert time.monotonic() < deadline, "watchers left after offload"
        time.sleep(0.2)

    since = len(guest.text())
    assert rbd_api.request("POST", url, {"unshelve": None})[0] == 202
    rbd_api.wait_for_server_status(guest.id, "ACTIVE", timeout=guest_env.WAIT)
    guest.wait_for("VA-READY", since, timeout=guest_env.BOOT_TIMEOUT)
    disks = {v: guest.wait_disk(v, since=since) for v in (rw, ro)}
    assert [disks[v][2] for v in (rw, ro)] == ["0", "1"], disks
    _check_auth(_live_disk(guest, rw), rw, RBD_USER)
    _check_auth(_live_disk(guest, ro), ro, _ro_user(ro))
    dev = disks[rw][0]
    status, out = guest.run(
        "blockdev --flushbufs /dev/%s; dd if=/dev/%s bs=512 skip=%d count=1 "
        "2>/dev/null | head -c %d" % (dev, dev, OFFSET, len(pattern)))
    assert status == 0 and pattern in out, out
    for volume_id in (rw, ro):
        _detach(rbd_api, guest, volume_id)
        rbd_volumes.wait_for_volume_status(volume_id, "available")
    assert rbd_api.delete_server(guest.id)[0] == 204
    rbd_api.wait_for_server_deleted(guest.id, timeout=guest_env.WAIT)


def _action_events(api, server_id, request_id, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        code, body, _ = api.request(
            "GET", "/servers/%s/os-instance-actions/%s"
            % (server_id, request_id), microversion="2.84")
        events = (body or {}).get("instanceAction", {}).get("events", [])
        if events and all(e.get("finish_time") for e in events):
            return events
        assert time.monotonic() < deadline, (code, body)
        time.sleep(0.2)


def _stop_monitor():
    """Stop tools/start-ceph.sh's monitor (the OSD and manager stay)."""
    pidfile = os.path.join(os.environ.get("VOLATTACH_CEPH_STATE",
                                          "/var/lib/volattach-ceph"),
                           "run", "mon.a.pid")
    with open(pidfile) as f:
        pid = int(f.read().strip())
    os.kill(pid, 15)
    deadline = time.monotonic() + 30
    while os.path.exists("/proc/%d" % pid):
        assert time.monotonic() < deadline, "ceph-mon did not stop"
        time.sleep(0.1)


def test_ceph_down_fails_the_attach_cleanly(rbd_api, rbd_volumes,
                                            rbd_guests, rbd_deployment):
    """The monitor is down: the volume service cannot make the connection,
    the attach fails and rolls back, the volume is available again; once
    Ceph is back the same volume attaches."""
    a, _ = rbd_guests
    volume_id = _volume(rbd_volumes, rbd_deployment)
    _stop_monitor()
    try:
        code, body, headers = rbd_api.attach_volume(a.id, volume_id)
        assert code == 202, (code, body)
        events = _action_events(rbd_api, a.id,
                                headers["x-openstack-request-id"],
                                timeout=180)
        assert [e for e in events if e.get("result") == "Error"], events
        rbd_volumes.wait_for_volume_status(volume_id, "available")
        rbd_api.wait_for_volume_attachment_gone(a.id, volume_id)
        code, body, _ = rbd_volumes.list_attachments(volume_id=volume_id,
                                                     microversion="3.27")
        assert code == 200 and body["attachments"] == [], body
        assert volume_id[:20] not in a.disks()
    finally:
        subprocess.run([os.path.join(guest_env.REPO, "tools",
                                     "start-ceph.sh")],
                       check=True, capture_output=True, timeout=180)
    _attach(rbd_api, rbd_volumes, a, volume_id, "rw")
    _detach(rbd_api, a, volume_id)
    rbd_volumes.wait_for_volume_status(volume_id, "available")


def _secrets(uri):
    """{uuid: usage} of the libvirt secrets at ``uri``."""
    lines = _virsh("secret-list", uri=uri).splitlines()[2:]
    return {line.split()[0]: line.split(None, 1)[1]
            for line in lines if line.strip()}


@pytest.fixture(scope="module")
def rbd_hosts(image_id, tmp_path_factory):
    reason = ceph_unavailable()
    if reason:
        guest_env._unavailable(reason)
    image_dir, image = image_id
    ceph_users()
    with guest_env.libvirt_daemons(
            str(tmp_path_factory.mktemp("rbd-live-migration")), image_dir,
            image, volume_overrides={
                "volume": {"backend": "rbd", "backend_name": "rbd"},
                "rbd": {"rbd_pool": POOL, "rbd_user": SERVICE_USER,
                        "rbd_attach_user": RBD_USER}}) as hosts:
        yield hosts


def test_live_migration_defines_the_secrets_on_the_destination(rbd_hosts):
    hosts = rbd_hosts
    api, volumes = hosts.api, hosts.volumes
    peer = hosts.uris["compute2"]
    # the destination's libvirt starts without the secrets of these users
    for uuid_, usage in _secrets(peer).items():
        if "client.%s " % RBD_USER in usage or READONLY_USER in usage:
            _virsh("secret-undefine", uuid_, uri=peer)
    code, body, _ = api.create_server(
        name="rbd-lm", image_ref=hosts.image, flavor_ref="1",
        availability_zone="nova:compute1")
    assert code == 202, (code, body)
    server_id = body["server"]["id"]
    made = []
    try:
        api.wait_for_server_status(server_id, "ACTIVE", timeout=guest_env.WAIT)
        guest = hosts.guest(server_id, "compute1")
        guest.wait_for("VA-READY", timeout=guest_env.BOOT_TIMEOUT)
        for _ in range(2):
            code, body, _ = volumes.create_volume(size=1)
            assert code == 202, (code, body)
            made.append(body["volume"]["id"])
            volumes.wait_for_volume_status(made[-1], "available")
        rw, ro = made
        dev_rw = _attach(api, volumes, guest, rw, "rw")[0]
        dev_ro = _attach(api, volumes, guest, ro, "ro")[0]
        status, out = guest.run(
            "echo %s | dd of=/dev/%s bs=512 seek=%d count=1 conv=sync && "
            "sync" % (PATTERN, dev_rw, OFFSET))
        assert status == 0, out

        moved = api.live_migrate(server_id, "compute2",
                                 timeout=guest_env.WAIT)
        assert moved["OS-EXT-SRV-ATTR:host"] == "compute2", moved
        guest = hosts.guest(server_id, "compute2")
        _check_auth(_live_disk(guest, rw, uri=peer), rw, RBD_USER, uri=peer)
        _check_auth(_live_disk(guest, ro, uri=peer), ro, _ro_user(ro),
                    uri=peer)
        status, out = guest.run(
            "blockdev --flushbufs /dev/%s; dd if=/dev/%s bs=512 skip=%d "
            "count=1 2>/dev/null | head -c %d"
            % (dev_rw, dev_rw, OFFSET, len(PATTERN)))
        assert status == 0 and PATTERN in out, out
        status, out = guest.run("echo x | dd of=/dev/%s bs=512 seek=%d "
                                "count=1 conv=sync" % (dev_ro, OFFSET))
        assert status != 0 and "Operation not permitted" in out, out
        # one watcher each: the destination's QEMU, the source's is gone
        assert len(_watchers(rw)) == len(_watchers(ro)) == 1

        for volume_id in (rw, ro):
            _detach(api, guest, volume_id)
            volumes.wait_for_volume_status(volume_id, "available")
            assert _watchers(volume_id) == []
    finally:
        api.delete_server(server_id)
        api.wait_for_server_deleted(server_id, timeout=guest_env.WAIT)
        for volume_id in made:
            volumes.delete_volume(volume_id)
            volumes.wait_for_volume_deleted(volume_id)


def extend_then_replug(api, volumes, guest, volume_id):
    """Extend the attached volume at 3.42 (202; in-use at the new size),
    then hard-reboot the guest: whether or not the compute API took the
    volume-extended event, the next plug gives the guest the new size
    (the storage grew before the size was written)."""
    since = len(guest.text())
    code, body, _ = volumes.request(
        "POST", volumes._path("/volumes/%s/action" % volume_id),
        {"os-extend": {"new_size": 2}}, microversion="3.42")
    assert code == 202, (code, body)
    volumes.wait_for_volume_status(volume_id, "in-use")
    assert volumes.show_volume(volume_id)[1]["volume"]["size"] == 2
    code, body, _ = api.request("POST", "/servers/%s/action" % guest.id,
                                {"reboot": {"type": "HARD"}})
    assert code == 202, (code, body)
    api.wait_for_server_status(guest.id, "ACTIVE", timeout=120)
    # the new boot's listing (one the old boot printed may follow since)
    boot = guest.wait_for("VA-INIT modules loaded", since=since,
                          timeout=guest_env.BOOT_TIMEOUT)
    _, size, _ = guest.wait_disk(volume_id, since=boot.end(), timeout=60)
    assert size == 2 * 1024 ** 3


def test_in_use_extend_reaches_the_guest_at_its_next_plug(
        rbd_api, rbd_volumes, rbd_guests, rbd_deployment):
    a, _ = rbd_guests
    volume_id = _volume(rbd_volumes, rbd_deployment)
    _, size, _ = _attach(rbd_api, rbd_volumes, a, volume_id, "rw")
    assert size == 1024 ** 3
    extend_then_replug(rbd_api, rbd_volumes, a, volume_id)
    _detach(rbd_api, a, volume_id)
