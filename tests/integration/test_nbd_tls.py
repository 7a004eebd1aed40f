"""NBD over TLS with authorization: the file backend's real
qemu-storage-daemon, reached across network namespaces.

The storage daemon runs in a namespace of its own ("controller", through a
wrapper that ``ip netns exec``s it) and the clients (qemu-img, qemu-io) in
another one, joined by a veth pair with private addresses (10.250.x.1/.2):
nothing goes over loopback.  A test CA (``volattach.nbd_certs``) signs the
server's certificate, two listed clients (one named in GnuTLS's order, one
in RFC 4514's) and one client the authz does not list.

Needs root (``ip netns``), QEMU's tools and ``qemu.qmp``; without them the
tests skip, except under CI (``CI=true``), where they fail.
"""
import os
import shutil
import subprocess
import uuid

import pytest

from tests import utils
from volattach import nbd_certs

PORT = 10809


def _unavailable(reason):
    if utils.in_ci():
        pytest.fail("CI: %s" % reason, pytrace=False)
    pytest.skip(reason)


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True,
                          check=check, timeout=30)


class Namespaces:
    """Two network namespaces joined by a veth pair: the server's at
    ``server_ip`` and the clients' at ``client_ip``."""

    def __init__(self):
        tag = "%04x" % (os.getpid() & 0xffff)
        self.server, self.client = "vasrv" + tag, "vacli" + tag
        self.server_if, self.client_if = "vas" + tag, "vac" + tag
        subnet = 1 + os.getpid() % 250
        self.server_ip = "10.250.%d.1" % subnet
        self.client_ip = "10.250.%d.2" % subnet

    def create(self):
        _ip("netns", "add", self.server)
        try:
            _ip("netns", "add", self.client)
            _ip("link", "add", self.server_if, "netns", self.server, "type",
                "veth", "peer", "name", self.client_if, "netns", self.client)
            for ns, dev, addr in ((self.server, self.server_if,
                                   self.server_ip),
                                  (self.client, self.client_if,
                                   self.client_ip)):
                _ip("-n", ns, "addr", "add", addr + "/24", "dev", dev)
                _ip("-n", ns, "link", "set", dev, "up")
                _ip("-n", ns, "link", "set", "lo", "up")
        except Exception:
            self.delete()
            raise

    def delete(self):
        # the veth pair goes with its namespaces
        for ns in (self.client, self.server):
            _ip("netns", "del", ns, check=False)

    def run(self, *argv):
        """``argv`` in the clients' namespace."""
        return subprocess.run(["ip", "netns", "exec", self.client, *argv],
                              capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def netns():
    for tool in ("ip", "qemu-storage-daemon", "qemu-img", "qemu-io"):
        if shutil.which(tool) is None:
            _unavailable("%s is not installed (tools/start-libvirt.sh "
                         "installs QEMU)" % tool)
    try:
        import qemu.qmp  # noqa: F401
    except ImportError:
        _unavailable("qemu.qmp is missing (the volattach[libvirt] extra)")
    spaces = Namespaces()
    try:
        spaces.create()
    except (subprocess.CalledProcessError, OSError) as e:
        _unavailable("cannot make network namespaces (ip netns needs "
                     "root): %s" % getattr(e, "stderr", e))
    try:
        yield spaces
    finally:
        spaces.delete()


@pytest.fixture(scope="module")
def pki(tmp_path_factory, netns):
    """The CA's material: the server's directory, the clients'."""
    root = tmp_path_factory.mktemp("pki")
    ca = nbd_certs.Authority.create()
    dirs = {name: str(root / name) for name in
            ("server", "compute1", "compute2", "intruder", "nocert")}
    ca.issue(dirs["server"], "volume-host", server=True,
             addresses=[netns.server_ip])
    allowed = [ca.issue(dirs["compute1"], "compute1")]
    # the second one as RFC 4514 writes it (reversed): let in as well
    dname = ca.issue(dirs["compute2"], "compute2")
    allowed.append(",".join(reversed(dname.split(","))))
    ca.issue(dirs["intruder"], "intruder")
    ca.write(dirs["nocert"])                   # trusts the CA, no cert
    dirs["allowed"] = allowed
    return dirs


def _backend(netns, tmp_path, volumes_dir, tls_dir=None, allowed=()):
    from volattach.volume.backends import file as file_backend
    wrapper = tmp_path / ("qsd-in-%s" % netns.server)
    wrapper.write_text("#!/bin/sh\nexec ip netns exec %s %s \"$@\"\n"
                       % (netns.server, shutil.which("qemu-storage-daemon")))
    wrapper.chmod(0o755)
    daemon = file_backend.StorageDaemon(
        os.path.join(volumes_dir, ".qsd"), netns.server_ip, PORT,
        binary=str(wrapper), tls_dir=tls_dir, tls_allowed_clients=allowed)
    return file_backend.FileBackend(
        "file", "vhost", volumes_dir, netns.server_ip, PORT, daemon=daemon,
        tls_dir=tls_dir, tls_allowed_clients=allowed)


@pytest.fixture
def tls_backend(netns, pki, tmp_path):
    backend = _backend(netns, tmp_path, str(tmp_path / "volumes"),
                       pki["server"], pki["allowed"])
    backend.restore([])
    try:
        yield backend
    finally:
        backend.daemon.stop()


def _image(conn, creds_dir=None):
    opts = ("driver=nbd,server.type=inet,server.host=%s,server.port=%s,"
            "export=%s" % (conn["host"], conn["port"], conn["name"]))
    if creds_dir is None:
        return ["--image-opts", opts]
    return ["--object", "tls-creds-x509,id=tls0,endpoint=client,dir=%s"
            % creds_dir, "--image-opts", opts + ",tls-creds=tls0"]


def _io(netns, conn, command, creds_dir=None, readonly=False):
    return netns.run("qemu-io", *(["-r"] if readonly else []),
                     "-c", command, *_image(conn, creds_dir))


def _info(netns, conn, creds_dir=None):
    return netns.run("qemu-img", "info", *_image(conn, creds_dir))


def _connect(backend, mode):
    volume = {"id": str(uuid.uuid4()), "size": 1}
    backend.create_volume(volume)
    conn = backend.initialize_connection(
        volume, str(uuid.uuid4()), {"host": "compute1"}, mode)
    return volume, conn


def test_listed_clients_read_and_write(netns, pki, tls_backend):
    volume, conn = _connect(tls_backend, "rw")
    assert conn["tls"] is True and conn["host"] == netns.server_ip
    wrote = _io(netns, conn, "write -P 0x5a 0 64k", pki["compute1"])
    assert wrote.returncode == 0, wrote.stderr + wrote.stdout
    for client in ("compute1", "compute2"):
        read = _io(netns, conn, "read -P 0x5a 0 64k", pki[client],
                   readonly=True)
        assert read.returncode == 0, read.stderr + read.stdout
        assert "Pattern verification failed" not in read.stdout
    with open(tls_backend.path(volume["id"]), "rb") as f:
        assert f.read(65536) == b"\x5a" * 65536


def test_client_without_certificate_is_refused(netns, pki, tls_backend):
    _, conn = _connect(tls_backend, "rw")
    no_cert = _info(netns, conn, pki["nocert"])
    assert no_cert.returncode != 0
    plain = _info(netns, conn)                       # no TLS at all
    assert plain.returncode != 0
    assert "TLS negotiation required" in plain.stderr
    # the listed one gets in: the refusals are the server's choice
    assert _info(netns, conn, pki["compute1"]).returncode == 0


def test_client_the_authz_does_not_list_is_refused(netns, pki, tls_backend):
    volume, conn = _connect(tls_backend, "rw")
    wrote = _io(netns, conn, "write -P 0x33 0 4k", pki["intruder"])
    assert wrote.returncode != 0
    assert _info(netns, conn, pki["intruder"]).returncode != 0
    with open(tls_backend.path(volume["id"]), "rb") as f:
        assert f.read(4096) == b"\0" * 4096
    log = open(os.path.join(tls_backend.daemon.state_dir, "qsd.log")).read()
    assert "authz check for O=volattach,CN=intruder is denied" in log


def test_read_only_export_refuses_writes_over_tls(netns, pki, tls_backend):
    volume, rw = _connect(tls_backend, "rw")
    assert _io(netns, rw, "write -P 0x11 0 4k",
               pki["compute1"]).returncode == 0
    ro = tls_backend.initialize_connection(
        volume, str(uuid.uuid4()), {"host": "compute1"}, "ro")
    assert ro["access_mode"] == "ro" and ro["tls"] is True
    wrote = _io(netns, ro, "write -P 0x22 0 4k", pki["compute1"])
    assert wrote.returncode != 0 or "write failed" in wrote.stdout
    read = _io(netns, ro, "read -P 0x11 0 4k", pki["compute1"],
               readonly=True)
    assert read.returncode == 0 and "verification failed" not in read.stdout


def test_reused_daemon_turns_tls_on(netns, pki, tmp_path):
    """A daemon left running without TLS by an earlier service is
    reconfigured by a service started with TLS: plaintext is then
    refused, and the exports of connected attachments are back."""
    volumes_dir = str(tmp_path / "volumes")
    plain = _backend(netns, tmp_path, volumes_dir)
    plain.restore([])
    try:
        volume, conn = _connect(plain, "rw")
        assert conn["tls"] is False
        assert _info(netns, conn).returncode == 0
        secure = _backend(netns, tmp_path, volumes_dir, pki["server"],
                          pki["allowed"])
        secure.restore([{"volume_id": volume["id"], "attach_mode": "rw"}])
        assert _info(netns, conn).returncode != 0
        assert _info(netns, conn, pki["compute1"]).returncode == 0
    finally:
        plain.daemon.stop()
