"""Real guests on iSCSI volumes: volattach-all with the libvirt driver and
the volume service's ``iscsi`` backend, whose tgt targets (tgtd of
tools/start-tgt.sh) hand out the connection Cinder's LVM driver gives;
QEMU's own libiscsi logs in with CHAP from a libvirt secret of usage
type iscsi that the compute defined, no iscsiadm.

A multiattach volume is attached read-write to guest A and read-only to
guest B: A writes and reads back, B reads A's data and cannot write (QEMU's
flag, and under it a read-only LUN that the target enforces).  After the
detaches tgtd has no target (so no session) of the volume left.  An attach
whose CHAP does not match the target's fails cleanly: the volume is
available again, with no attachment and no target.  An attached volume
is retyped from the file backend to the iscsi one and back (the compute's
block copy), and a guest with an rw and an ro iscsi volume moves to the
peer libvirt (the real daemons), whose compute defines the secrets there.

Needs what the guest tier needs and tgtd (tools/start-tgt.sh), the live
migration also RabbitMQ and PostgreSQL: without them the tests skip,
except under CI (``CI=true``), where they fail."""
import os
import shutil
import time
import uuid
import xml.etree.ElementTree as ET

import pytest

from tests.guest import conftest as guest_env
from tests.guest import test_rbd as rbd_tests
from tests.integration import client as clients
from volattach.compute.virt.libvirt import driver as libvirt_driver
from volattach.compute.virt.libvirt.volume import iscsi as iscsi_driver
from volattach.volume.backends import tgt

PATTERN = "volattach-iscsi-%s" % uuid.uuid4().hex[:8]
OFFSET = 2048        # sectors: away from what a partition scan reads
PREFIX = "iqn.2010-10.org.volattach-guest-%s:" % uuid.uuid4().hex[:6]
PREFIX_TWO = "iqn.2010-10.org.volattach-guest-two-%s:" % uuid.uuid4().hex[:6]
PREFIX_LM = "iqn.2010-10.org.volattach-guest-lm-%s:" % uuid.uuid4().hex[:6]


def tgt_unavailable():
    if shutil.which("tgtadm") is None:
        return "tgt is not installed (tools/start-tgt.sh)"
    try:
        tgt.targets()
    except tgt.TargetError as e:
        return "tgtd does not answer (tools/start-tgt.sh): %s" % e
    if not libvirt_driver.iscsi_initiator():
        return "no %s (tools/start-tgt.sh)" % libvirt_driver.INITIATOR_FILE
    return None


class ISCSIDeployment(guest_env.Deployment):
    """The guest tier's volattach-all, its volume service on the iscsi
    backend (tgtd's portal on loopback)."""

    def __init__(self, tmp, image_dir):
        super().__init__(tmp, image_dir)
        with open(self.conf) as f:
            text = f.read()
        assert "backend = file\nbackend_name = file\n" in text
        text = text.replace("backend = file\nbackend_name = file\n",
                            "backend = iscsi\nbackend_name = lvm\n")
        text += "[iscsi]\ntarget_prefix = %s\n" % PREFIX
        with open(self.conf, "w") as f:
            f.write(text)


@pytest.fixture(scope="module")
def iscsi_deployment(image_id, tmp_path_factory):
    reason = tgt_unavailable()
    if reason:
        guest_env._unavailable(reason)
    image_dir, _ = image_id
    d = ISCSIDeployment(str(tmp_path_factory.mktemp("g-iscsi")),
                        image_dir)
    d.start()
    d.created = []
    yield d
    guest_env.tear_down(d, clients.ComputeClient(d.api_url),
                        clients.VolumeClient(d.volume_url))
    for name, tid in tgt.targets().items():
        if name.startswith(PREFIX):
            tgt.tgtadm("--mode", "target", "--op", "delete", "--force",
                       "--tid", str(tid), check=False)


@pytest.fixture(scope="module")
def iscsi_api(iscsi_deployment):
    return clients.ComputeClient(iscsi_deployment.api_url,
                                 microversion="2.105")


@pytest.fixture(scope="module")
def iscsi_volumes(iscsi_deployment):
    return clients.VolumeClient(iscsi_deployment.volume_url)


@pytest.fixture(scope="module")
def iscsi_guests(iscsi_api, iscsi_deployment, image_id):
    _, image = image_id
    return tuple(guest_env.boot(iscsi_api, iscsi_deployment, image,
                                ["iscsi-a", "iscsi-b"]))


def _tgt_show():
    return tgt.tgtadm("--mode", "target", "--op", "show")


def _target_block(name):
    """tgtadm's show of target ``name`` (None when tgtd has none)."""
    out = _tgt_show()
    start = out.find(": %s\n" % name)
    if start < 0:
        return None
    end = out.find("\nTarget ", start)
    return out[start:] if end < 0 else out[start:end]


def _sessions(name):
    block = _target_block(name) or ""
    nexus = block.split("I_T nexus information:", 1)[-1].split(
        "LUN information:", 1)[0]
    return nexus.count("I_T nexus:")


def _check_disk(disk, volume_id, mode):
    """The live <disk>: QEMU's libiscsi on the volume's target, CHAP by the
    compute's iscsi secret (defined in libvirt), the compute's initiator."""
    iqn = tgt.target_name(PREFIX, volume_id, mode)
    source = disk.find("source")
    assert (disk.get("type"), source.get("protocol"), source.get("name")) \
        == ("network", "iscsi", iqn + "/1")
    assert [(h.get("name"), h.get("port")) for h in source.findall("host")] \
        == [("127.0.0.1", "3260")]
    user = tgt.chap_user(volume_id, mode)
    auth = source.find("auth")
    assert auth is not None and auth.get("username") == user
    secret = auth.find("secret")
    assert secret.get("type") == "iscsi"
    usage = iscsi_driver.usage_name(user, iqn)
    assert secret.get("usage") == usage
    assert usage in rbd_tests._virsh("secret-list")
    assert source.find("initiator/iqn").get("name") == \
        libvirt_driver.iscsi_initiator()
    assert (disk.find("readonly") is not None) == (mode == "ro")
    return iqn


def test_multiattach_rw_and_target_held_ro(iscsi_api, iscsi_volumes,
                                           iscsi_guests, iscsi_deployment):
    a, b = iscsi_guests
    code, body, _ = iscsi_volumes.create_volume_type(
        "iscsi-multiattach-%s" % uuid.uuid4().hex[:6],
        {"multiattach": "<is> True"})
    assert code == 200, (code, body)
    volume_id = rbd_tests._volume(iscsi_volumes, iscsi_deployment,
                                  volume_type=body["volume_type"]["name"])

    dev_a, size_a, ro_a = rbd_tests._attach(iscsi_api, iscsi_volumes, a,
                                            volume_id, "rw")
    assert (size_a, ro_a) == (1024 ** 3, "0")
    rw_iqn = _check_disk(rbd_tests._live_disk(a, volume_id), volume_id,
                         "rw")
    assert _sessions(rw_iqn) == 1
    status, out = a.run(
        "echo %s | dd of=/dev/%s bs=512 seek=%d count=1 conv=sync && sync"
        % (PATTERN, dev_a, OFFSET))
    assert status == 0, out
    status, out = a.run(
        "blockdev --flushbufs /dev/%s; dd if=/dev/%s bs=512 skip=%d count=1 "
        "2>/dev/null | head -c %d" % (dev_a, dev_a, OFFSET, len(PATTERN)))
    assert status == 0 and PATTERN in out, out

    dev_b, size_b, ro_b = rbd_tests._attach(iscsi_api, iscsi_volumes, b,
                                            volume_id, "ro")
    assert (size_b, ro_b) == (1024 ** 3, "1")
    ro_iqn = _check_disk(rbd_tests._live_disk(b, volume_id), volume_id,
                         "ro")
    # the read-only target's LUN is tgt's readonly: the target refuses
    # writes, not only QEMU's flag
    lun1 = _target_block(ro_iqn).split("LUN: 1", 1)[1]
    assert "Readonly: Yes" in lun1.split("LUN:", 1)[0]
    assert _sessions(ro_iqn) == 1
    status, out = b.run(
        "blockdev --flushbufs /dev/%s; dd if=/dev/%s bs=512 skip=%d count=1 "
        "2>/dev/null | head -c %d" % (dev_b, dev_b, OFFSET, len(PATTERN)))
    assert status == 0 and PATTERN in out, out
    status, out = b.run("echo x | dd of=/dev/%s bs=512 seek=%d count=1 "
                        "conv=sync" % (dev_b, OFFSET))
    assert status != 0 and "Operation not permitted" in out, out

    # the CHAP passwords are in no log and no domain XML
    backend = tgt.ISCSIBackend(
        "check", "check", os.path.join(iscsi_deployment.state, "volumes"),
        "127.0.0.1")
    passwords = [backend.chap(volume_id, mode)[1] for mode in ("rw", "ro")]
    # (they are the real ones: the rw one logs in)
    from tests.unit.volume.test_tgt_backend import qemu_io
    probe = qemu_io({"target_portal": "127.0.0.1:3260", "target_iqn": rw_iqn,
                     "target_lun": 1,
                     "auth_username": tgt.chap_user(volume_id, "rw"),
                     "auth_password": passwords[0]},
                    "read 0 4k", initiator=libvirt_driver.iscsi_initiator(),
                    readonly=True)
    assert probe.returncode == 0 and "read 4096" in probe.stdout, probe
    with open(os.path.join(iscsi_deployment.tmp, "volattach-all.log")) as f:
        log = f.read()
    for guest in (a, b):
        xml = rbd_tests._virsh("dumpxml", "volattach-%s" % guest.id)
        assert not [p for p in passwords if p in xml + log]

    rbd_tests._detach(iscsi_api, a, volume_id)
    iscsi_volumes.wait_for_volume_status(volume_id, "in-use")
    assert _target_block(rw_iqn) is None
    assert _sessions(ro_iqn) == 1
    rbd_tests._detach(iscsi_api, b, volume_id)
    iscsi_volumes.wait_for_volume_status(volume_id, "available")
    # no target of the volume left, so no session either
    assert volume_id not in _tgt_show()
    accounts = tgt.tgtadm("--mode", "account", "--op", "show")
    assert tgt.chap_user(volume_id, "rw") not in accounts
    assert tgt.chap_user(volume_id, "ro") not in accounts

    # the data is in the volume's file
    path = "%s/volumes/volume-%s" % (iscsi_deployment.state, volume_id)
    with open(path, "rb") as f:
        f.seek(OFFSET * 512)
        assert f.read(len(PATTERN)) == PATTERN.encode()


def test_wrong_chap_fails_the_attach_cleanly(iscsi_api, iscsi_volumes,
                                             iscsi_guests, iscsi_deployment):
    """tgtd already has the target's CHAP account with another password
    (the backend cannot read it back and keeps it): QEMU's login fails,
    the attach rolls back, the volume is available with no attachment
    and no target; the account goes with the rollback, and the next
    attach of the volume works."""
    a, _ = iscsi_guests
    volume_id = rbd_tests._volume(iscsi_volumes, iscsi_deployment)
    user = tgt.chap_user(volume_id, "rw")
    tgt.tgtadm("--mode", "account", "--op", "new", "--user", user,
               "--password", "not-the-password")
    code, body, headers = iscsi_api.attach_volume(a.id, volume_id)
    assert code == 202, (code, body)
    events = rbd_tests._action_events(iscsi_api, a.id,
                                      headers["x-openstack-request-id"])
    failed = [e for e in events if e.get("result") == "Error"]
    assert failed, events
    iscsi_volumes.wait_for_volume_status(volume_id, "available")
    iscsi_api.wait_for_volume_attachment_gone(a.id, volume_id)
    assert volume_id[:20] not in a.disks()
    code, body, _ = iscsi_volumes.list_attachments(volume_id=volume_id,
                                                   microversion="3.27")
    assert code == 200 and body["attachments"] == [], body
    assert volume_id not in _tgt_show()
    assert user not in tgt.tgtadm("--mode", "account", "--op", "show")
    root = ET.fromstring(rbd_tests._virsh("dumpxml",
                                          "volattach-%s" % a.id))
    assert all(d.findtext("serial") != volume_id
               for d in root.findall("./devices/disk"))

    # with the stale account gone, the volume attaches
    rbd_tests._attach(iscsi_api, iscsi_volumes, a, volume_id, "rw")
    rbd_tests._detach(iscsi_api, a, volume_id)
    iscsi_volumes.wait_for_volume_status(volume_id, "available")
    deadline = time.monotonic() + 10
    while volume_id in _tgt_show():
        assert time.monotonic() < deadline, _tgt_show()
        time.sleep(0.2)


class FileAndISCSIDeployment(guest_env.Deployment):
    """volattach-all with two backends: file-1 (NBD exports of files) and
    lvm-1 (tgt targets of files of their own directory)."""

    def __init__(self, tmp, image_dir):
        super().__init__(tmp, image_dir)
        with open(self.conf) as f:
            text = f.read()
        single = ("backend = file\nbackend_name = file\n"
                  "export_port = %d\n" % self.export_port)
        assert single in text
        text = text.replace(single, "enabled_backends = file-1, lvm-1\n")
        text += ("[file-1]\nvolume_backend = file\nvolumes_dir = %s\n"
                 "export_port = %d\n"
                 "[lvm-1]\nvolume_backend = iscsi\nvolumes_dir = %s\n"
                 "target_prefix = %s\n"
                 % (os.path.join(self.state, "volumes"), self.export_port,
                    os.path.join(self.state, "iscsi-volumes"), PREFIX_TWO))
        with open(self.conf, "w") as f:
            f.write(text)


def test_retype_from_file_to_iscsi_and_back_under_a_guest(image_id,
                                                          tmp_path_factory):
    """An attached volume moves from NBD to a tgt target and back by the
    compute's block copy (the swap), the guest keeps reading what it
    wrote, and the target goes with the way back."""
    from tests.guest.test_data_path import _attach, _read
    from tests.guest.test_swap import _retype, _wait_migrated
    reason = tgt_unavailable()
    if reason:
        guest_env._unavailable(reason)
    image_dir, image = image_id
    d = FileAndISCSIDeployment(str(tmp_path_factory.mktemp("g-two-i")),
                               image_dir)
    d.start()
    api = clients.ComputeClient(d.api_url, microversion="2.105")
    volumes = clients.VolumeClient(d.volume_url)
    try:
        (guest,) = guest_env.boot(api, d, image, ["file-and-iscsi"])
        suffix = uuid.uuid4().hex[:6]
        types = {}
        for backend in ("file-1", "lvm-1"):
            code, body, _ = volumes.create_volume_type(
                "%s-%s" % (backend, suffix),
                {"volume_backend_name": backend})
            assert code == 200, (code, body)
            types[backend] = body["volume_type"]["name"]
        code, body, _ = volumes.create_volume(size=1,
                                              volume_type=types["file-1"])
        assert code == 202, (code, body)
        volume_id = body["volume"]["id"]
        volumes.wait_for_volume_status(volume_id, "available")
        dev, _, ro = _attach(api, volumes, guest, volume_id, "rw")
        assert ro == "0"
        pattern = "volattach-iscsi-two-%s" % suffix
        status, out = guest.run(
            "echo %s | dd of=/dev/%s bs=512 seek=%d count=1 conv=sync && "
            "sync" % (pattern, dev, OFFSET))
        assert status == 0, out

        # file -> iscsi: the guest's disk is now a tgt target's LUN
        _retype(volumes, volume_id, types["lvm-1"])
        done = _wait_migrated(volumes, volume_id)
        assert (done["migration_status"], done["status"],
                done["volume_type"]) == ("success", "in-use",
                                         types["lvm-1"]), done
        assert done["os-vol-host-attr:host"].split("@")[1] == "lvm-1#lvm-1"
        disk = [x for x in ET.fromstring(rbd_tests._virsh(
            "dumpxml", "volattach-%s" % guest.id)).findall("./devices/disk")
            if x.find("target").get("dev") == dev][0]
        source = disk.find("source")
        assert source.get("protocol") == "iscsi", ET.tostring(disk)
        assert source.find("auth/secret").get("type") == "iscsi"
        assert [n for n in tgt.targets() if n.startswith(PREFIX_TWO)]
        assert pattern in _read(guest, dev, len(pattern))
        status, out = guest.run(
            "echo %s-2 | dd of=/dev/%s bs=512 seek=%d count=1 conv=sync && "
            "sync" % (pattern, dev, OFFSET))
        assert status == 0, out

        # iscsi -> file, in the same attachment: the target goes
        _retype(volumes, volume_id, types["file-1"])
        # the first move's "success" stays until the second one starts:
        # wait for the volume back on file-1 and listed on the server
        deadline = time.monotonic() + 120
        while True:
            back = volumes.show_volume(volume_id)[1]["volume"]
            if back["migration_status"] == "error" or (
                    back["migration_status"] == "success"
                    and back["os-vol-host-attr:host"].endswith(
                        "@file-1#file-1")
                    and api.show_volume_attachment(
                        guest.id, volume_id)[0] == 200):
                break
            assert time.monotonic() < deadline, back
            time.sleep(0.2)
        assert (back["migration_status"], back["volume_type"],
                back["os-vol-host-attr:host"].split("@")[1]) == (
            "success", types["file-1"], "file-1#file-1"), back
        assert pattern + "-2" in _read(guest, dev, len(pattern) + 2)
        deadline = time.monotonic() + 20
        while [n for n in tgt.targets() if n.startswith(PREFIX_TWO)]:
            assert time.monotonic() < deadline, tgt.targets()
            time.sleep(0.2)
        code, body, _ = api.detach_volume(guest.id, volume_id)
        assert code == 202, (code, body)
        volumes.wait_for_volume_status(volume_id, "available")
    finally:
        for server in (api.list_servers()[1] or {}).get("servers", []):
            api.delete_server(server["id"])
            api.wait_for_server_deleted(server["id"], timeout=guest_env.WAIT)
        d.stop()
        d.stop_storage_daemon()


@pytest.fixture(scope="module")
def iscsi_hosts(image_id, tmp_path_factory):
    reason = tgt_unavailable()
    if reason:
        guest_env._unavailable(reason)
    image_dir, image = image_id
    with guest_env.libvirt_daemons(
            str(tmp_path_factory.mktemp("iscsi-lm")), image_dir, image,
            volume_overrides={
                "volume": {"backend": "iscsi", "backend_name": "lvm"},
                "iscsi": {"target_prefix": PREFIX_LM}}) as hosts:
        yield hosts


def test_live_migration_defines_the_secrets_on_the_destination(
        iscsi_hosts):
    """A guest with an rw and an ro iscsi volume moves to the peer
    libvirt: the destination's compute defined the CHAP secrets in its own
    libvirt, the guest reads its data there and still cannot write the ro
    one; the detaches leave no target."""
    hosts = iscsi_hosts
    api, volumes = hosts.api, hosts.volumes
    peer = hosts.uris["compute2"]
    code, body, _ = api.create_server(
        name="iscsi-lm", image_ref=hosts.image, flavor_ref="1",
        availability_zone="nova:compute1")
    assert code == 202, (code, body)
    server_id = body["server"]["id"]
    api.wait_for_server_status(server_id, "ACTIVE", timeout=guest_env.WAIT)
    guest = hosts.guest(server_id, "compute1")
    guest.wait_for("VA-READY", timeout=guest_env.BOOT_TIMEOUT)
    made = []
    for _ in range(2):
        code, body, _ = volumes.create_volume(size=1)
        assert code == 202, (code, body)
        made.append(body["volume"]["id"])
        volumes.wait_for_volume_status(made[-1], "available")
    rw, ro = made
    dev_rw = rbd_tests._attach(api, volumes, guest, rw, "rw")[0]
    dev_ro = rbd_tests._attach(api, volumes, guest, ro, "ro")[0]
    status, out = guest.run(
        "echo %s | dd of=/dev/%s bs=512 seek=%d count=1 conv=sync && sync"
        % (PATTERN, dev_rw, OFFSET))
    assert status == 0, out
    peer_secrets = rbd_tests._secrets(peer)
    assert not [u for u in peer_secrets.values() if PREFIX_LM in u]

    moved = api.live_migrate(server_id, "compute2", timeout=guest_env.WAIT)
    assert moved["OS-EXT-SRV-ATTR:host"] == "compute2", moved
    guest = hosts.guest(server_id, "compute2")
    for volume_id, mode in ((rw, "rw"), (ro, "ro")):
        disk = rbd_tests._live_disk(guest, volume_id, uri=peer)
        source = disk.find("source")
        assert source.get("protocol") == "iscsi"
        assert (disk.find("readonly") is not None) == (mode == "ro")
        usage = source.find("auth/secret").get("usage")
        assert usage == iscsi_driver.usage_name(
            tgt.chap_user(volume_id, mode),
            tgt.target_name(PREFIX_LM, volume_id, mode))
        # the peer's own secret store (virsh: "<uuid> iscsi <usage>")
        assert "iscsi " + usage in rbd_tests._secrets(peer).values()
    status, out = guest.run(
        "blockdev --flushbufs /dev/%s; dd if=/dev/%s bs=512 skip=%d count=1 "
        "2>/dev/null | head -c %d" % (dev_rw, dev_rw, OFFSET, len(PATTERN)))
    assert status == 0 and PATTERN in out, out
    status, out = guest.run("echo x | dd of=/dev/%s bs=512 seek=%d count=1 "
                            "conv=sync" % (dev_ro, OFFSET))
    assert status != 0 and "Operation not permitted" in out, out

    for volume_id in made:
        rbd_tests._detach(api, guest, volume_id)
        volumes.wait_for_volume_status(volume_id, "available")
    deadline = time.monotonic() + 20
    while [n for n in tgt.targets() if n.startswith(PREFIX_LM)]:
        assert time.monotonic() < deadline, tgt.targets()
        time.sleep(0.2)


def test_in_use_extend_reaches_the_guest_at_its_next_plug(
        iscsi_api, iscsi_volumes, iscsi_guests, iscsi_deployment):
    """The LUN follows the file (tgtd reports the new size), and the guest
    sees it once plugged again."""
    a, _ = iscsi_guests
    volume_id = rbd_tests._volume(iscsi_volumes, iscsi_deployment)
    _, size, _ = rbd_tests._attach(iscsi_api, iscsi_volumes, a, volume_id,
                                   "rw")
    assert size == 1024 ** 3
    rbd_tests.extend_then_replug(iscsi_api, iscsi_volumes, a, volume_id)
    rbd_tests._detach(iscsi_api, a, volume_id)
