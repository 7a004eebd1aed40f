"""The iscsi backend against a real tgtd (tools/start-tgt.sh), with QEMU's
libiscsi (qemu-io) as the initiator: the connection is Cinder's LVM one,
CHAP and the initiator ACL let only the connector in, the read-only
target refuses writes itself, and the last detach removes the target and
its account.  Skips without tgtd and qemu-io, except under CI."""
import os
import shutil
import subprocess
import uuid

import pytest

from volattach import exception
from volattach.volume import backend as volume_backend
from volattach.volume.backends import tgt

INITIATOR = "iqn.1993-08.org.debian:01:volattach-test"


def _unavailable():
    if shutil.which("tgtadm") is None or shutil.which("qemu-io") is None:
        return "tgtadm or qemu-io missing (tools/start-tgt.sh)"
    try:
        tgt.targets()
    except tgt.TargetError as e:
        return "tgtd does not answer (tools/start-tgt.sh): %s" % e
    return None


@pytest.fixture
def backend(tmp_path):
    reason = _unavailable()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    prefix = "iqn.2010-10.org.volattach-test-%s:" % uuid.uuid4().hex[:6]
    b = tgt.ISCSIBackend("iscsi", "host1", str(tmp_path / "volumes"),
                         "127.0.0.1", 3260, target_prefix=prefix)
    b.created = []
    yield b
    for name, tid in tgt.targets().items():
        if name.startswith(prefix):
            tgt.tgtadm("--mode", "target", "--op", "delete", "--force",
                       "--tid", str(tid), check=False)
    for volume_id in b.created:
        for mode in ("rw", "ro"):
            tgt.tgtadm("--mode", "account", "--op", "delete", "--user",
                       tgt.chap_user(volume_id, mode), check=False)


def _volume(b):
    vol = {"id": str(uuid.uuid4()), "size": 1}
    b.create_volume(vol)
    b.created.append(vol["id"])
    return vol


def qemu_io(info, command, initiator=INITIATOR, password=None,
            readonly=False):
    opts = ("driver=iscsi,transport=tcp,portal=%s,target=%s,lun=%d,"
            "user=%s,password-secret=s0,initiator-name=%s"
            % (info["target_portal"], info["target_iqn"], info["target_lun"],
               info["auth_username"], initiator))
    return subprocess.run(
        ["qemu-io"] + (["-r"] if readonly else []) + [
            "-c", command, "--object",
            "secret,id=s0,data=%s" % (password or info["auth_password"]),
            "--image-opts", opts],
        capture_output=True, text=True, timeout=60)


def _connector(**extra):
    return dict({"host": "compute1", "initiator": INITIATOR}, **extra)


def test_connection_is_cinders_lvm_one(backend):
    vol = _volume(backend)
    info = backend.initialize_connection(vol, "a1", _connector(), "rw")
    assert info["driver_volume_type"] == "iscsi"
    assert info["target_portal"] == "127.0.0.1:3260"
    assert info["target_iqn"] == backend.prefix + "volume-" + vol["id"]
    assert info["target_lun"] == 1
    assert info["auth_method"] == "CHAP"
    assert 12 <= len(info["auth_password"]) <= 16
    assert info["access_mode"] == "rw" and info["target_discovered"] is False
    assert "target_portals" not in info
    multi = backend.initialize_connection(vol, "a2",
                                          _connector(multipath=True), "rw")
    assert (multi["target_portals"], multi["target_iqns"],
            multi["target_luns"]) == (["127.0.0.1:3260"],
                                      [info["target_iqn"]], [1])


def test_rw_writes_and_only_the_right_chap_and_initiator_get_in(backend):
    vol = _volume(backend)
    info = backend.initialize_connection(vol, "a1", _connector(), "rw")
    w = qemu_io(info, "write -P 0x5a 0 64k")
    assert w.returncode == 0, w.stderr + w.stdout
    assert "wrote" in w.stdout
    wrong = qemu_io(info, "read 0 4k", password="wrong-password")
    assert "Authentication failure" in wrong.stderr + wrong.stdout
    stranger = qemu_io(info, "read 0 4k", initiator="iqn.2000-01.other:x")
    assert "read 4096" not in stranger.stdout
    assert stranger.returncode != 0 or "can't open" in stranger.stderr
    with open(backend.path(vol["id"]), "rb") as f:
        assert f.read(65536) == b"\x5a" * 65536


def test_read_only_target_refuses_writes_itself(backend):
    vol = _volume(backend)
    rw = backend.initialize_connection(vol, "a1", _connector(), "rw")
    assert qemu_io(rw, "write -P 0x33 0 4k").returncode == 0
    ro = backend.initialize_connection(vol, "a2", _connector(), "ro")
    assert ro["target_iqn"].endswith("-ro") and ro["access_mode"] == "ro"
    assert ro["auth_username"] != rw["auth_username"]
    # opened read-write, the LUN says it is write protected
    opened_rw = qemu_io(ro, "write -P 0x44 0 4k")
    assert "write protected" in opened_rw.stderr + opened_rw.stdout
    read = qemu_io(ro, "read -P 0x33 0 4k", readonly=True)
    assert read.returncode == 0 and "read 4096" in read.stdout, read.stderr
    with open(backend.path(vol["id"]), "rb") as f:
        assert f.read(4096) == b"\x33" * 4096


def test_last_detach_removes_the_target_and_account(backend):
    vol = _volume(backend)
    a1 = {"id": "a1", "attach_mode": "rw"}
    a2 = {"id": "a2", "attach_mode": "rw"}
    info = backend.initialize_connection(vol, "a1", _connector(), "rw")
    backend.initialize_connection(vol, "a2", _connector(), "rw")
    backend.terminate_connection(vol, a1, _connector(), remaining=[a2])
    assert info["target_iqn"] in tgt.targets()
    backend.terminate_connection(vol, a2, _connector(), remaining=[])
    assert info["target_iqn"] not in tgt.targets()
    accounts = tgt.tgtadm("--mode", "account", "--op", "show")
    assert info["auth_username"] not in accounts
    assert qemu_io(info, "read 0 4k").returncode != 0


def test_a_tid_taken_meanwhile_gives_the_next_one(backend):
    """Another service on the same tgtd took the tid this one computed
    from a stale list: the target gets the next free tid."""
    vol = _volume(backend)
    first = backend.initialize_connection(vol, "a1", _connector(), "rw")
    taken = tgt.targets()[first["target_iqn"]]
    stale = {n: t for n, t in tgt.targets().items() if t < taken}
    name = tgt.target_name(backend.prefix, str(uuid.uuid4()), "rw")
    tid = backend._new_target(name, stale)
    assert tid != taken and tgt.targets()[name] == tid


def test_a_connector_without_initiator_is_refused(backend):
    vol = _volume(backend)
    with pytest.raises(exception.InvalidInput, match="initiator"):
        backend.check_connector({"host": "compute1"})
    assert not [n for n in tgt.targets() if vol["id"] in n]


def test_restore_rebuilds_a_lost_target_with_its_acl(backend):
    vol = _volume(backend)
    info = backend.initialize_connection(vol, "a1", _connector(), "rw")
    tid = tgt.targets()[info["target_iqn"]]
    tgt.tgtadm("--mode", "target", "--op", "delete", "--force", "--tid",
               str(tid))
    backend.restore([{"volume_id": vol["id"], "attach_mode": "rw"}])
    assert info["target_iqn"] in tgt.targets()
    assert qemu_io(info, "read 0 4k").returncode == 0


def test_iscsi_is_a_backend_kind_of_enabled_backends(tmp_path):
    from oslo_config import cfg
    from volattach import conf as conf_mod
    conf = cfg.ConfigOpts()
    conf_mod.register_opts(conf)
    path = tmp_path / "v.conf"
    path.write_text(
        "[volume]\nenabled_backends = lvm1\n"
        "[lvm1]\nvolume_backend = iscsi\nvolume_backend_name = LVM\n"
        "volumes_dir = %s\ntarget_port = 3261\n"
        "target_prefix = iqn.2000-01.test:\n" % (tmp_path / "vols"))
    conf(["--config-file", str(path)], project="volattach")
    backends = volume_backend.load_backends(conf, "host1")
    b = backends.by_name["LVM"]
    assert isinstance(b, tgt.ISCSIBackend)
    assert (b.portal, b.prefix) == ("127.0.0.1:3261", "iqn.2000-01.test:")
    assert backends.kinds["LVM"] == "iscsi"


# -- extend -------------------------------------------------------------------

def _lun_size_mb(backend, volume_id, mode="rw"):
    """The size tgtd reports for LUN 1 of the volume's target (MB)."""
    out = tgt.tgtadm("--mode", "target", "--op", "show")
    name = tgt.target_name(backend.prefix, volume_id, mode)
    block = out.split("Target %d: %s\n" % (tgt.targets()[name], name), 1)[1]
    lun = block.split("LUN: %d\n" % tgt.LUN, 1)[1]
    return int(lun.split("Size: ", 1)[1].split(" MB", 1)[0])


def test_extend_of_an_attached_volume_grows_the_lun_for_the_session(backend):
    vol = _volume(backend)
    info = backend.initialize_connection(vol, "a1", _connector(), "rw")
    ro = backend.initialize_connection(vol, "a2", _connector(), "ro")
    assert qemu_io(info, "length").stdout.strip() == "1 GiB"
    assert _lun_size_mb(backend, vol["id"]) == 1074
    backend.extend_volume(vol, 2, attached=True)
    assert os.path.getsize(backend.path(vol["id"])) == 2 * 1024 ** 3
    assert _lun_size_mb(backend, vol["id"]) == 2147
    assert _lun_size_mb(backend, vol["id"], "ro") == 2147
    # the new tail is there for the initiator; CHAP and ACL still hold
    w = qemu_io(info, "write -P 0x3c 2047M 64k")
    assert w.returncode == 0, w.stderr + w.stdout
    assert qemu_io(info, "length").stdout.strip() == "2 GiB"
    # the read-only target stays read-only
    denied = qemu_io(ro, "write -P 0x00 0 4k")
    assert "wrote" not in denied.stdout
    assert qemu_io(ro, "read -P 0x3c 2047M 64k", readonly=True).returncode == 0


def test_extend_of_a_detached_volume_grows_the_file_only(backend):
    vol = _volume(backend)
    backend.extend_volume(vol, 3)
    assert os.path.getsize(backend.path(vol["id"])) == 3 * 1024 ** 3
    info = backend.initialize_connection(vol, "a1", _connector(), "rw")
    assert qemu_io(info, "length").stdout.strip() == "3 GiB"
