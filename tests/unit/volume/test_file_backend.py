"""The file backend: sparse files, one node per volume, one export per
(volume, mode), exports dropped with their last user, rebuilt on start.

The storage daemon is replaced by an in-memory one that keeps QEMU's rules
(a node in use by an export cannot be deleted; export ids are unique); the
last test drives the real qemu-storage-daemon when it is installed.
"""
import contextlib
import os
import shutil
import socket
import subprocess
import uuid

import pytest

from volattach import exception
from volattach.volume.backends import file as file_backend


class FakeDaemon:

    def __init__(self):
        self.nodes = {}
        self.exports = {}
        self.calls = []
        self.refuse = None

    def ensure_running(self):
        return False

    @contextlib.contextmanager
    def batch(self, start=False):
        self.calls.append("session")
        yield

    def alive(self):
        return True

    def command(self, cmd, /, **args):
        self.calls.append(cmd)
        if cmd == self.refuse:
            raise file_backend.ExportError("%s: refused" % cmd)
        if cmd == "query-block-exports":
            return [{"id": k, "node-name": v["node-name"]}
                    for k, v in self.exports.items()]
        if cmd == "query-named-block-nodes":
            return [{"node-name": n} for n in self.nodes]
        if cmd == "blockdev-add":
            assert args["node-name"] not in self.nodes
            self.nodes[args["node-name"]] = args
        elif cmd == "block-export-add":
            assert args["id"] not in self.exports
            assert args["node-name"] in self.nodes
            self.exports[args["id"]] = args
        elif cmd == "block-export-del":
            del self.exports[args["id"]]
        elif cmd == "blockdev-del":
            assert not any(e["node-name"] == args["node-name"]
                           for e in self.exports.values()), "node in use"
            del self.nodes[args["node-name"]]
        return {}


@pytest.fixture
def backend(tmp_path):
    return file_backend.FileBackend("file", "vhost", str(tmp_path), "127.0.0.1",
                                    10809, daemon=FakeDaemon())


def _volume(backend, size=1):
    volume = {"id": str(uuid.uuid4()), "size": size}
    assert backend.create_volume(volume) == "vhost@file#file"
    return volume


def test_volumes_are_sparse_files_removed_on_delete(backend):
    volume = _volume(backend, size=2)
    path = backend.path(volume["id"])
    assert os.path.getsize(path) == 2 * 1024 ** 3
    assert os.stat(path).st_blocks == 0
    backend.delete_volume(volume)
    assert not os.path.exists(path)
    backend.delete_volume(volume)      # idempotent


def test_one_node_and_one_export_per_mode(backend):
    volume = _volume(backend)
    rw = backend.initialize_connection(volume, "a1", {"host": "c1"}, "rw")
    rw2 = backend.initialize_connection(volume, "a2", {"host": "c2"}, "rw")
    ro = backend.initialize_connection(volume, "a3", {"host": "c1"}, "ro")
    assert rw["driver_volume_type"] == "nbd"
    assert (rw["host"], rw["port"], rw["access_mode"]) == ("127.0.0.1", 10809, "rw")
    assert rw2["name"] == rw["name"] != ro["name"]
    assert ro["access_mode"] == "ro"
    daemon = backend.daemon
    assert len(daemon.nodes) == 1 and len(daemon.exports) == 2
    # one QMP session per connection, not one per command
    assert daemon.calls.count("session") == 3
    writable = {e["name"]: e["writable"] for e in daemon.exports.values()}
    assert writable == {rw["name"]: True, ro["name"]: False}


def test_export_goes_with_its_last_user_and_node_with_the_last_export(backend):
    volume = _volume(backend)
    backend.initialize_connection(volume, "a1", {"host": "c1"}, "rw")
    backend.initialize_connection(volume, "a2", {"host": "c2"}, "rw")
    backend.initialize_connection(volume, "a3", {"host": "c1"}, "ro")
    daemon = backend.daemon
    backend.terminate_connection(volume, {"attach_mode": "rw"}, {},
                                 remaining=[{"attach_mode": "rw"},
                                            {"attach_mode": "ro"}])
    assert len(daemon.exports) == 2
    backend.terminate_connection(volume, {"attach_mode": "rw"}, {},
                                 remaining=[{"attach_mode": "ro"}])
    assert len(daemon.exports) == 1 and len(daemon.nodes) == 1
    backend.terminate_connection(volume, {"attach_mode": "ro"}, {},
                                 remaining=[])
    assert daemon.exports == {} and daemon.nodes == {}


def test_restore_rebuilds_missing_exports_only(backend):
    volume = _volume(backend)
    backend.initialize_connection(volume, "a1", {"host": "c1"}, "rw")
    other = _volume(backend)
    backend.restore([{"volume_id": volume["id"], "attach_mode": "rw"},
                     {"volume_id": other["id"], "attach_mode": "ro"}])
    names = sorted(e["name"] for e in backend.daemon.exports.values())
    assert names == sorted(["volume-%s" % volume["id"],
                            "volume-%s-ro" % other["id"]])


def test_refused_export_is_invalid_input(backend):
    volume = _volume(backend)
    backend.daemon.refuse = "block-export-add"
    with pytest.raises(exception.InvalidInput):
        backend.initialize_connection(volume, "a1", {"host": "c1"}, "rw")


def test_connector_needs_a_host(backend):
    with pytest.raises(exception.InvalidInput):
        backend.check_connector({"initiator": "x"})


def test_node_names_fit_qemu():
    volume_id = str(uuid.uuid4())
    assert len(file_backend.node_name(volume_id)) <= 31
    assert file_backend.export_id(volume_id, "ro") != \
        file_backend.export_id(volume_id, "rw")


@pytest.mark.skipif(shutil.which("qemu-storage-daemon") is None
                    or shutil.which("qemu-io") is None,
                    reason="QEMU is not installed (tools/start-libvirt.sh)")
def test_real_daemon_refuses_writes_on_the_read_only_export(tmp_path):
    pytest.importorskip("qemu.qmp")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    backend = file_backend.FileBackend("file", "vhost", str(tmp_path / "v"),
                                       "127.0.0.1", port)
    try:
        volume = _volume(backend)
        rw = backend.initialize_connection(volume, "a1", {"host": "c"}, "rw")
        ro = backend.initialize_connection(volume, "a2", {"host": "c"}, "ro")

        def io(name, command, *flags):
            return subprocess.run(
                ["qemu-io", "-f", "raw", *flags, "-c", command,
                 "nbd://127.0.0.1:%d/%s" % (port, name)],
                capture_output=True, text=True)

        assert io(rw["name"], "write -P 0x5a 0 4k").returncode == 0
        assert io(ro["name"], "read -P 0x5a 0 4k", "-r").returncode == 0
        assert io(ro["name"], "write -P 0x00 0 4k").returncode != 0
        backend.terminate_connection(volume, {"attach_mode": "rw"}, {})
        backend.terminate_connection(volume, {"attach_mode": "ro"}, {})
        assert backend.daemon.command("query-block-exports") == []
        with open(backend.path(volume["id"]), "rb") as f:
            assert f.read(4096) == b"\x5a" * 4096
    finally:
        backend.daemon.stop()


# -- extend -------------------------------------------------------------------

def test_extend_grows_the_file_and_drops_a_stale_export(backend):
    volume = _volume(backend, size=1)
    # an export left by a crash would serve the old size to the next attach
    backend.ensure_export(volume["id"], "rw")
    backend.extend_volume(volume, 3)
    assert os.path.getsize(backend.path(volume["id"])) == 3 * 1024 ** 3
    assert backend.daemon.exports == {} and backend.daemon.nodes == {}
    backend.extend_volume(volume, 2)        # never shrinks
    assert os.path.getsize(backend.path(volume["id"])) == 3 * 1024 ** 3


def test_attached_extend_is_refused_with_the_reason(backend):
    volume = _volume(backend)
    assert backend.online_extend is False
    with pytest.raises(exception.InvalidVolume, match="Cannot grow NBD"):
        backend.extend_volume(volume, 2, attached=True)
    assert os.path.getsize(backend.path(volume["id"])) == 1024 ** 3


def test_missing_file_fails_the_extend(backend):
    volume = _volume(backend)
    os.unlink(backend.path(volume["id"]))
    with pytest.raises(FileNotFoundError):
        backend.extend_volume(volume, 2)


def test_real_nbd_client_cannot_grow_and_a_new_export_shows_the_size(
        tmp_path):
    """The measurement behind ``online_extend = False``: QEMU's NBD client
    refuses to grow its node, and only an export made after the file grew
    serves the new size."""
    pytest.importorskip("qemu.qmp")
    if shutil.which("qemu-io") is None:
        pytest.skip("qemu-io missing")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    backend = file_backend.FileBackend("file", "vhost", str(tmp_path / "v"),
                                       "127.0.0.1", port)

    def io(name, command):
        return subprocess.run(
            ["qemu-io", "-f", "raw", "-c", command,
             "nbd://127.0.0.1:%d/%s" % (port, name)],
            capture_output=True, text=True)
    try:
        volume = _volume(backend)
        rw = backend.initialize_connection(volume, "a1", {"host": "c"}, "rw")
        grown = io(rw["name"], "truncate 2G")
        assert "Cannot grow NBD nodes" in grown.stdout + grown.stderr
        backend.terminate_connection(volume, {"attach_mode": "rw"}, {})
        backend.extend_volume(volume, 2)
        out = subprocess.run(["qemu-img", "info", "--output=json", "-f",
                              "raw", backend.path(volume["id"])],
                             capture_output=True, text=True, check=True)
        assert '"virtual-size": %d' % (2 * 1024 ** 3) in out.stdout
        rw = backend.initialize_connection(volume, "a2", {"host": "c"}, "rw")
        assert io(rw["name"], "length").stdout.strip() == "2 GiB"
    finally:
        backend.daemon.stop()
