"""The file backend's NBD security settings: no export on the network
without TLS unless allowed, TLS material checked at start, the authz rules
and the NBD server's configuration over QMP (the daemon recorded)."""
import contextlib
import json
import os
import subprocess
import sys
import time

import pytest
from oslo_config import cfg

from volattach import conf as volattach_conf
from volattach import nbd_certs
from volattach.volume import backend as backend_mod
from volattach.volume.backends import file as file_backend
from volattach.wsgi import insecure

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def _conf(**volume):
    conf = cfg.ConfigOpts()
    volattach_conf.register_opts(conf)
    conf([], default_config_files=[])
    conf.set_override("backend", "file", group="volume")
    for name, value in volume.items():
        conf.set_override(name, value, group="volume")
    return conf


def test_export_on_the_network_without_tls_refuses_to_start_naming_option():
    conf = _conf(export_host="10.250.0.1")
    with pytest.raises(insecure.InsecureNoauth) as exc:
        insecure.check_volume(conf)
    assert "[volume] allow_insecure_nbd" in str(exc.value)
    assert "[volume] nbd_tls" in str(exc.value)


@pytest.mark.parametrize("volume", [
    {"export_host": "127.0.0.1"},
    {"export_host": "0.0.0.0", "allow_insecure_nbd": True},
    {"export_host": "10.250.0.1", "backend": "fake"},
])
def test_loopback_or_allowed_exports_start(volume):
    insecure.check_volume(_conf(**volume))


def test_tls_needs_its_files_and_allowed_clients(tmp_path):
    conf = _conf(export_host="0.0.0.0", nbd_tls=True,
                 nbd_tls_dir=str(tmp_path))
    with pytest.raises(file_backend.InsecureNBD) as exc:
        file_backend.check_security(conf)
    assert str(tmp_path / "server-key.pem") in str(exc.value)
    nbd_certs.Authority.create().issue(str(tmp_path), "vol", server=True)
    with pytest.raises(file_backend.InsecureNBD) as exc:
        file_backend.check_security(conf)
    assert "nbd_tls_allowed_clients" in str(exc.value)
    conf.set_override("nbd_tls_allowed_clients", ["O=volattach,CN=c1"],
                      group="volume")
    file_backend.check_security(conf)


def test_authz_rules_take_both_orders_and_escaped_commas():
    rules = file_backend.authz_rules(["O=volattach,CN=c1",
                                      "CN=c2,O=a\\,b"])
    assert [r["match"] for r in rules] == [
        "O=volattach,CN=c1", "CN=c1,O=volattach",
        "CN=c2,O=a\\,b", "O=a\\,b,CN=c2"]
    assert {r["policy"] for r in rules} == {"allow"}


def test_connections_name_tls_and_the_advertised_host(tmp_path):
    conf = _conf(export_host="0.0.0.0", nbd_tls=True,
                 nbd_tls_dir=str(tmp_path), volumes_dir=str(tmp_path / "v"))
    conf.set_override("my_ip", "10.250.0.7")
    backend = backend_mod.load_backend(conf, "vhost")
    assert backend.connect_host == "10.250.0.7"
    assert backend.tls is True
    assert backend.daemon.tls_dir == str(tmp_path)
    conf.set_override("nbd_tls", False, group="volume")
    conf.set_override("export_host", "10.250.0.9", group="volume")
    backend = backend_mod.load_backend(conf, "vhost")
    assert (backend.connect_host, backend.tls) == ("10.250.0.9", False)
    assert backend.daemon.tls_dir is None


class RecordingDaemon(file_backend.StorageDaemon):
    """The NBD server's QMP commands, recorded instead of sent."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = []

    @contextlib.contextmanager
    def batch(self, start=False):
        yield

    def command(self, cmd, /, **args):
        self.calls.append((cmd, args))
        if cmd in ("nbd-server-stop", "object-del"):
            raise file_backend.ExportError("%s: not there" % cmd)
        return {}


def test_configure_starts_the_server_with_tls_and_authz_once(tmp_path):
    daemon = RecordingDaemon(str(tmp_path), "10.250.0.1", 10809,
                             tls_dir="/pki", tls_allowed_clients=["CN=a"])
    assert daemon.configure() is True
    started = dict(daemon.calls)["nbd-server-start"]
    assert started == {"addr": {"type": "inet", "data": {
        "host": "10.250.0.1", "port": "10809"}},
        "tls-creds": "tls0", "tls-authz": "authz0"}
    objects = [a for c, a in daemon.calls if c == "object-add"]
    assert objects[0]["qom-type"] == "tls-creds-x509"
    assert objects[0]["endpoint"] == "server"
    assert objects[0]["verify-peer"] is True
    assert objects[1]["policy"] == "deny"
    assert [r["match"] for r in objects[1]["rules"]] == ["CN=a"]
    # the same settings again: nothing to do
    daemon.calls.clear()
    assert daemon.configure() is False and daemon.calls == []
    # other settings (TLS off): the server restarts without TLS
    plain = RecordingDaemon(str(tmp_path), "10.250.0.1", 10809)
    assert plain.configure() is True
    assert dict(plain.calls)["nbd-server-start"] == {"addr": {
        "type": "inet", "data": {"host": "10.250.0.1", "port": "10809"}}}
    assert "object-add" not in dict(plain.calls)
    with open(plain.server_file) as f:
        assert json.load(f)["tls_dir"] is None


def test_make_nbd_certs_tool_writes_qemu_names(tmp_path):
    out = subprocess.run(
        [sys.executable, os.path.join(REPO, "tools", "make-nbd-certs.py"),
         str(tmp_path), "--server-address", "10.250.0.1",
         "--client", "compute1", "--client", "compute2"],
        capture_output=True, text=True, check=True).stdout
    for name in ("ca-cert.pem", "server-cert.pem", "server-key.pem"):
        assert (tmp_path / "server" / name).is_file()
    for client in ("compute1", "compute2"):
        for name in ("ca-cert.pem", "client-cert.pem", "client-key.pem"):
            assert (tmp_path / client / name).is_file()
    assert oct((tmp_path / "compute1" / "client-key.pem").stat().st_mode
               & 0o777) == "0o600"
    assert "nbd_tls_allowed_clients = O=volattach,CN=compute1" in out
    assert "nbd_tls_allowed_clients = O=volattach,CN=compute2" in out


@pytest.mark.parametrize("listen, portal", [
    ("0.0.0.0", "10.250.0.7:3260"), ("::", "10.250.0.7:3260"),
    ("127.0.0.1", "127.0.0.1:3260"), ("10.250.0.9", "10.250.0.9:3260")])
def test_fake_portal_follows_my_ip_for_a_wildcard_listen(listen, portal):
    conf = _conf(backend="fake", listen=listen)
    conf.set_override("my_ip", "10.250.0.7")
    assert backend_mod.load_backend(conf, "vhost").portal == portal


def test_volattach_volume_refuses_to_start_naming_the_option(tmp_path):
    config = tmp_path / "volattach.conf"
    config.write_text("[DEFAULT]\nstate_path = %s\n[volume]\nbackend = file\n"
                      "export_host = 10.250.0.1\nauth_strategy = keystone\n"
                      % tmp_path)
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "volattach-volume"),
         "--config-file", str(config)],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "[volume] allow_insecure_nbd" in proc.stderr
    assert not (tmp_path / "volume.sqlite").exists()      # nothing started


def _cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read()
    except OSError:
        return b""


def test_a_daemon_of_an_earlier_release_with_the_same_settings_is_adopted(
        tmp_path):
    """Started with --nbd-server on its command line and no record: the
    same plain settings keep its NBD server (and the guests' connections);
    TLS wanted restarts it."""
    old = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)",
         "--nbd-server",
         "addr.type=inet,addr.host=10.250.0.1,addr.port=10809"])
    try:
        # a child just forked may not have exec'd yet: its cmdline is then
        # still (or briefly empty) the parent's, not the daemon's
        deadline = time.monotonic() + 10
        while b"--nbd-server" not in _cmdline(old.pid):
            assert time.monotonic() < deadline, "the stand-in never exec'd"
            time.sleep(0.01)
        (tmp_path / "qsd.pid").write_text("%d\n" % old.pid)
        daemon = RecordingDaemon(str(tmp_path), "10.250.0.1", 10809)
        assert daemon.configure() is False and daemon.calls == []
        assert os.path.exists(daemon.server_file)
        os.unlink(daemon.server_file)
        other = RecordingDaemon(str(tmp_path), "10.250.0.1", 10810)
        assert other.configure() is True
        os.unlink(daemon.server_file)
        secure = RecordingDaemon(str(tmp_path), "10.250.0.1", 10809,
                                 tls_dir="/pki", tls_allowed_clients=["C"])
        assert secure.configure() is True
    finally:
        old.kill()
        old.wait()
