"""Real guests over NBD with TLS: volattach-all with ``[volume] nbd_tls``
(qemu-storage-daemon with tls-creds-x509 and an authz list naming
compute1's certificate) and libvirt's QEMU connecting with compute1's
client certificate (``tls='yes'`` disks).

libvirt takes the client certificate from qemu.conf's
``nbd_tls_x509_cert_dir``, which defaults to ``/etc/pki/qemu``: the test
writes compute1's certificate there (and removes it after), so that the
running libvirt needs no restart.  It skips when that directory holds
certificates it did not make.  Attaches read-write and read-only, and a
missing or expired client certificate fails the attach cleanly."""
import datetime
import os
import shutil
import subprocess
import time
import uuid

import pytest

from tests.guest import conftest as guest_env
from tests.guest import test_data_path as data_path
from volattach import nbd_certs

PKI = "/etc/pki/qemu"
MARK = os.path.join(PKI, ".volattach-test")
CLIENT_FILES = ("ca-cert.pem", "client-cert.pem", "client-key.pem")


@pytest.fixture(scope="module")
def ca():
    return nbd_certs.Authority.create()


@pytest.fixture(scope="module")
def client_pki(ca):
    if os.path.isdir(PKI) and not os.path.exists(MARK) and any(
            os.path.exists(os.path.join(PKI, f)) for f in CLIENT_FILES):
        guest_env._unavailable("%s holds certificates this test did not "
                               "make" % PKI)
    made = [p for p in ("/etc/pki", PKI) if not os.path.isdir(p)]
    os.makedirs(PKI, exist_ok=True)
    open(MARK, "w").close()
    dname = ca.issue(PKI, "compute1")
    try:
        yield dname
    finally:
        for name in CLIENT_FILES + (os.path.basename(MARK),):
            try:
                os.unlink(os.path.join(PKI, name))
            except FileNotFoundError:
                pass
        for path in reversed(made):
            try:
                os.rmdir(path)
            except OSError:
                pass


class TLSDeployment(guest_env.Deployment):
    """The guest tier's volattach-all, its NBD server behind TLS."""

    def __init__(self, tmp, image_dir, server_dir, allowed):
        super().__init__(tmp, image_dir)
        with open(self.conf) as f:
            text = f.read()
        text = text.replace("[volume]\n", "[volume]\nnbd_tls = true\n"
                            "nbd_tls_dir = %s\nnbd_tls_allowed_clients = %s\n"
                            % (server_dir, allowed), 1)
        text = text.replace("[libvirt]\n", "[libvirt]\nnbd_tls_dir = %s\n"
                            % PKI, 1)
        with open(self.conf, "w") as f:
            f.write(text)


@pytest.fixture(scope="module")
def tls(image_id, tmp_path_factory, ca, client_pki):
    image_dir, image = image_id
    tmp = str(tmp_path_factory.mktemp("guest-tls"))
    server_dir = os.path.join(tmp, "server-pki")
    ca.issue(server_dir, "volume-host", server=True, addresses=["127.0.0.1"])
    dep = TLSDeployment(tmp, image_dir, server_dir, client_pki)
    dep.start()
    api = guest_env.clients.ComputeClient(dep.api_url,
                                          microversion="2.105")
    volumes = guest_env.clients.VolumeClient(dep.volume_url)
    try:
        guest, = guest_env.boot(api, dep, image, ["guest-tls"])
        yield dep, api, volumes, guest
    finally:
        try:
            guest_env.tear_down(dep, api, volumes)
        finally:
            dep.stop_storage_daemon()


def _live_sources(guest):
    xml = subprocess.run(["virsh", "-c", "qemu:///system", "dumpxml",
                          "volattach-%s" % guest.id], capture_output=True,
                         text=True, check=True).stdout
    return [line for line in xml.splitlines() if "protocol='nbd'" in line]


def test_read_write_and_read_only_over_tls(tls):
    dep, api, volumes, guest = tls
    volume_id = data_path._volume(volumes)
    dev, size, ro = data_path._attach(api, volumes, guest, volume_id, "rw")
    assert (size, ro) == (1024 ** 3, "0")
    sources = _live_sources(guest)
    assert sources and all("tls='yes'" in s for s in sources), sources
    text = "tls-%s" % uuid.uuid4().hex[:8]
    data_path._write(guest, dev, text)
    with open(os.path.join(dep.state, "volumes", "volume-%s" % volume_id),
              "rb") as f:
        f.seek(data_path.OFFSET * 512)
        assert f.read(len(text)).decode() == text
    data_path._detach(api, guest, volume_id)
    volumes.wait_for_volume_status(volume_id, "available")

    dev, _, ro = data_path._attach(api, volumes, guest, volume_id, "ro")
    assert ro == "1"
    assert text in data_path._read(guest, dev, len(text))
    status, out = guest.run("echo x | dd of=/dev/%s bs=512 seek=%d count=1 "
                            "conv=sync oflag=direct" % (dev, data_path.OFFSET))
    assert status != 0, out
    # the export itself refuses a client without TLS
    conn_name = "volume-%s-ro" % volume_id
    plain = subprocess.run(
        ["qemu-img", "info", "nbd://127.0.0.1:%d/%s" % (dep.export_port,
                                                         conn_name)],
        capture_output=True, text=True)
    assert plain.returncode != 0
    assert "TLS negotiation required" in plain.stderr
    data_path._detach(api, guest, volume_id)
    volumes.wait_for_volume_status(volume_id, "available")


def _failed_attach(api, volumes, guest, volume_id):
    """Attach (cast), wait for the end of its action; returns its
    events."""
    code, body, headers = api.attach_volume(guest.id, volume_id,
                                            microversion="2.101")
    assert code == 202, (code, body)
    request_id = headers["x-openstack-request-id"]
    deadline = time.monotonic() + 60
    while True:
        code, body, _ = api.request(
            "GET", "/servers/%s/os-instance-actions/%s"
            % (guest.id, request_id), microversion="2.84")
        events = (body or {}).get("instanceAction", {}).get("events", [])
        if events and all(e.get("finish_time") for e in events):
            return events
        assert time.monotonic() < deadline, (code, body)
        time.sleep(0.2)


def _assert_nothing_left(dep, api, volumes, guest, volume_id):
    from volattach.volume.backends import file as file_backend
    volumes.wait_for_volume_status(volume_id, "available")
    api.wait_for_volume_attachment_gone(guest.id, volume_id)
    assert volume_id[:20] not in guest.disks()
    code, body, _ = volumes.list_attachments(volume_id=volume_id,
                                             microversion="3.27")
    assert code == 200 and body["attachments"] == [], body
    daemon = file_backend.StorageDaemon(
        os.path.join(dep.state, "volumes", ".qsd"), "127.0.0.1", 0)
    prefix = file_backend.export_id(volume_id, "")
    assert not [e["id"] for e in daemon.command("query-block-exports")
                if e["id"].startswith(prefix)]


@pytest.mark.parametrize("fault", ["missing", "expired"])
def test_bad_client_certificate_fails_the_attach_cleanly(tls, ca, fault):
    dep, api, volumes, guest = tls
    cert = os.path.join(PKI, "client-cert.pem")
    saved = cert + ".saved"
    shutil.copy(cert, saved)
    try:
        if fault == "missing":
            os.unlink(cert)
        else:
            past = (datetime.datetime.now(datetime.timezone.utc)
                    - datetime.timedelta(days=30))
            ca.issue(PKI, "compute1", days=1, not_before=past)
        volume_id = data_path._volume(volumes)
        events = _failed_attach(api, volumes, guest, volume_id)
        assert any(e.get("result") == "Error" for e in events), events
        said = " ".join("%s %s" % (e.get("traceback"), e.get("details"))
                        for e in events)
        assert cert in said, events
        assert ("missing" if fault == "missing" else "expired") in said
        _assert_nothing_left(dep, api, volumes, guest, volume_id)
    finally:
        key = os.path.join(PKI, "client-key.pem")
        if fault == "expired":
            # issue() wrote a new key with the expired certificate
            ca.issue(PKI, "compute1")
        else:
            os.replace(saved, cert)
        if os.path.exists(saved):
            os.unlink(saved)
        assert os.path.exists(key)
    # with the certificate back, the same volume attaches over TLS
    data_path._attach(api, volumes, guest, volume_id, "rw")
    data_path._detach(api, guest, volume_id)
