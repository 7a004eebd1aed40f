"""``nbd`` volumes (the volume service's file backend): QEMU's NBD client.

A connection that says ``tls`` gets ``<source ... tls='yes'>``: libvirt's
QEMU then connects with the client certificate of qemu.conf's
``nbd_tls_x509_cert_dir`` (``[libvirt] nbd_tls_dir``), whose files are
checked before the disk is plugged: a missing or expired one fails the
attach naming the file."""
import datetime
import os
import socket

from volattach.compute.virt.libvirt.volume import base
from volattach.conf import CONF
from volattach import exception

TLS_CLIENT_FILES = ("ca-cert.pem", "client-cert.pem", "client-key.pem")


def check_client_certificate(directory):
    """Raise VirtDriverError naming the file when a TLS client file of
    ``directory`` is missing, or its certificate (or the CA's) is not
    valid now."""
    from cryptography import x509

    def fail(reason):
        raise exception.VirtDriverError(
            operation="connect",
            reason="NBD over TLS: %s ([libvirt] nbd_tls_dir)" % reason)

    for name in TLS_CLIENT_FILES:
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            fail("client certificate file %s is missing" % path)
    now = datetime.datetime.now(datetime.timezone.utc)
    for name in ("client-cert.pem", "ca-cert.pem"):
        path = os.path.join(directory, name)
        try:
            with open(path, "rb") as f:
                cert = x509.load_pem_x509_certificate(f.read())
        except (OSError, ValueError) as e:
            fail("cannot read certificate %s: %s" % (path, e))
        after = _utc(cert, "not_valid_after")
        before = _utc(cert, "not_valid_before")
        if now > after:
            fail("certificate %s expired on %s" % (path, after.isoformat()))
        if now < before:
            fail("certificate %s is not valid before %s"
                 % (path, before.isoformat()))


def _utc(cert, name):
    value = getattr(cert, name + "_utc", None)     # cryptography >= 42
    if value is None:
        value = getattr(cert, name).replace(tzinfo=datetime.timezone.utc)
    return value


class NBDVolumeDriver(base.VolumeDriver):
    """An NBD export; QEMU reconnects for ``reconnect_delay`` seconds when
    the server goes away (a storage daemon restart)."""

    reconnect_delay = 10

    def connect_volume(self, connection_info):
        data = base.connection_data(connection_info)
        if data.get("tls"):
            check_client_certificate(CONF.libvirt.nbd_tls_dir)
        try:
            socket.create_connection((data["host"], int(data["port"])),
                                     timeout=5).close()
        except (OSError, KeyError, ValueError) as e:
            raise exception.VirtDriverError(
                operation="connect",
                reason="NBD server %s:%s unreachable: %s"
                % (data.get("host"), data.get("port"), e))

    def source_xml(self, data):
        return ("<source protocol='nbd' name=%s%s><host name=%s port=%s/>"
                "<reconnect delay=%s/></source>"
                % (base.q(data["name"]),
                   " tls='yes'" if data.get("tls") else "",
                   base.q(data["host"]),
                   base.q(data["port"]), base.q(self.reconnect_delay)))
