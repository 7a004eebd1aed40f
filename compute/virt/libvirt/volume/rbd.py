"""``rbd`` volumes (Ceph): QEMU's own rbd client, no kernel module.

The connection is what Cinder's RBD driver gives: ``name`` (pool/image),
``hosts`` and ``ports`` (the monitors, parallel lists), ``cluster_name``,
``auth_enabled``, ``auth_username``, ``secret_type``, ``secret_uuid``,
``discard``, and the volume manager's ``access_mode``.  When the
connection names no user or no secret, ``[libvirt] rbd_user`` and
``rbd_secret_uuid`` apply (Nova's fallback); a user with no secret uuid
anywhere gets one derived from (cluster, user).

Unlike Nova, the compute defines the libvirt secret itself (no manual
``virsh secret-define``): on connect, when libvirt has no secret with the
uuid, it takes the key of ``client.<user>`` from the connection's
``keyring`` (the key of a volume's read-only user, as Cinder's RBD driver
can send it: the secret is then ephemeral and private, in libvirtd's
memory only, and the key is written nowhere), else from Ceph's standard
keyring path ``/etc/ceph/<cluster>.client.<user>.keyring``, and defines
one whose value is the base64-decoded key; an existing secret gets the
new key when it changed (a rebuilt cluster, a user made again).  Secrets are never undefined on a
disconnect: other disks of the host may use them.  A secret that libvirt
already has is used as it is when this host has no keyring (an operator's
own).  Connect also checks that a monitor answers, so that an attach with
Ceph down fails at once instead of QEMU waiting for the cluster.
"""
import base64
import logging
import re
import socket
import threading
import uuid

from volattach.compute.virt.libvirt.volume import base
from volattach.conf import CONF
from volattach import exception

LOG = logging.getLogger(__name__)

KEYRING_DIR = "/etc/ceph"
DEFAULT_CLUSTER = "ceph"
DEFAULT_MON_PORT = 6789
MON_TIMEOUT = 3.0
_SECRET_NAMESPACE = uuid.UUID("0b0f0e5e-7c2b-4f0c-9d39-5a0f3bb1c0de")
_SECRETS_LOCK = threading.Lock()   # one definition per uuid at a time


def keyring_path(cluster, user):
    return "%s/%s.client.%s.keyring" % (KEYRING_DIR, cluster, user)


def read_key(path, user):
    """The raw (base64-decoded) key of ``client.<user>`` in the keyring
    file ``path``; VirtDriverError naming the file when it is missing or
    holds no valid key of that user."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise exception.VirtDriverError(
            operation="connect",
            reason="cannot read the key of client.%s from %s: %s"
            % (user, path, e.strerror or e))
    return parse_key(text, user, path)


def parse_key(text, user, source="the connection's keyring"):
    """The raw key of ``client.<user>`` in keyring ``text`` (Ceph's
    keyring format); VirtDriverError naming ``source`` and the user when
    it holds none."""
    section = None
    for line in str(text).splitlines():
        line = line.strip()
        m = re.fullmatch(r"\[(.+)\]", line)
        if m:
            section = m.group(1).strip()
            continue
        m = re.fullmatch(r"key\s*=\s*(\S+)", line)
        if m and section == "client.%s" % user:
            try:
                return base64.b64decode(m.group(1), validate=True)
            except ValueError:
                break
    raise exception.VirtDriverError(
        operation="connect",
        reason="%s holds no valid key of client.%s" % (source, user))


def derived_secret_uuid(cluster, user):
    """The secret uuid of a user no configuration gives one for."""
    return str(uuid.uuid5(_SECRET_NAMESPACE, "%s/%s" % (cluster, user)))


class RBDVolumeDriver(base.VolumeDriver):
    """An rbd image opened by QEMU (librbd) with a cephx secret."""

    # no client-side cache: the readers of a multiattach volume see what
    # its writer wrote, and a flush in the guest is a flush in the cluster
    cache = "none"

    @staticmethod
    def cluster(data):
        return data.get("cluster_name") or DEFAULT_CLUSTER

    def auth(self, data):
        """(user, secret uuid) of the disk's cephx identity, or None for a
        cluster without cephx."""
        user = data.get("auth_username") if data.get("auth_enabled") else None
        user = user or CONF.libvirt.rbd_user
        if not user:
            return None
        secret_type = data.get("secret_type") or "ceph"
        if secret_type != "ceph":
            raise exception.VirtDriverError(
                operation="connect",
                reason="rbd secret_type %r is not supported (only 'ceph')"
                % secret_type)
        secret = (data.get("secret_uuid") or CONF.libvirt.rbd_secret_uuid
                  or derived_secret_uuid(self.cluster(data), user))
        return user, secret

    # -- connect -----------------------------------------------------------
    def connect_volume(self, connection_info):
        data = base.connection_data(connection_info)
        if not data.get("name"):
            raise exception.VirtDriverError(
                operation="connect", reason="rbd connection without a name")
        self.check_monitors(data)
        auth = self.auth(data)
        if auth is not None:
            self.ensure_secret(self.cluster(data), *auth,
                               keyring=data.get("keyring"))

    @staticmethod
    def monitors(data):
        """[(host, port)] of the connection's monitors."""
        hosts = data.get("hosts") or []
        ports = data.get("ports") or []
        return [(str(h).strip("[]"),
                 ports[i] if i < len(ports) and ports[i] else None)
                for i, h in enumerate(hosts)]

    def check_monitors(self, data):
        mons = self.monitors(data)
        if not mons:
            return          # QEMU finds them in the cluster's ceph.conf
        errors = []
        for host, port in mons:
            try:
                socket.create_connection(
                    (host, int(port or DEFAULT_MON_PORT)),
                    timeout=MON_TIMEOUT).close()
                return
            except (OSError, ValueError) as e:
                errors.append("%s:%s: %s" % (host, port, e))
        raise exception.VirtDriverError(
            operation="connect",
            reason="no Ceph monitor of %s reachable (%s)"
            % (data.get("name"), "; ".join(errors)))

    def ensure_secret(self, cluster, user, secret_uuid, keyring=None):
        """A libvirt secret ``secret_uuid`` holding the key of
        ``client.<user>``: defined when missing, its value updated when
        the key changed.  The key comes from the connection's ``keyring``
        when it has one (a volume's read-only user): that secret is
        ephemeral and private (libvirt keeps it in memory only and never
        shows its value), and no file is read or written.  Else from
        ``/etc/ceph/<cluster>.client.<user>.keyring``."""
        lv = self.host.libvirt
        conn = self.host.get_connection()
        path = keyring_path(cluster, user)
        with _SECRETS_LOCK:
            try:
                try:
                    secret = conn.secretLookupByUUIDString(secret_uuid)
                except lv.libvirtError as e:
                    if e.get_error_code() != lv.VIR_ERR_NO_SECRET:
                        raise
                    secret = None
                if keyring is not None:
                    key = parse_key(keyring, user)
                else:
                    try:
                        key = read_key(path, user)
                    except exception.VirtDriverError:
                        if secret is not None:
                            return      # the operator's own secret
                        raise
                if secret is None:
                    flags = ("ephemeral='yes' private='yes'"
                             if keyring is not None
                             else "ephemeral='no' private='no'")
                    secret = conn.secretDefineXML(
                        "<secret %s><uuid>%s</uuid>"
                        "<usage type='ceph'><name>%s</name></usage></secret>"
                        % (flags, secret_uuid,
                           self.usage_name(cluster, user, secret_uuid)))
                    LOG.info("defined libvirt secret %s for %s.client.%s",
                             secret_uuid, cluster, user)
                try:
                    current = secret.value()
                except lv.libvirtError:
                    current = None      # no value yet, or a private one
                if current != key:
                    secret.setValue(key)
            except lv.libvirtError as e:
                raise exception.VirtDriverError(
                    operation="connect",
                    reason="libvirt secret %s of client.%s: %s (is "
                           "libvirt-daemon-driver-secret installed?)"
                    % (secret_uuid, user, e))

    def attach_failure(self, connection_info, error):
        """QEMU could not open the image: name the cephx user it opened
        it as (a volume's own read-only user whose key was revoked, a
        user without the caps)."""
        data = base.connection_data(connection_info)
        auth = self.auth(data)
        return "%s (rbd image %s as %s)" % (
            error, data.get("name"),
            "client.%s" % auth[0] if auth else "no cephx user")

    @staticmethod
    def usage_name(cluster, user, secret_uuid):
        # unique per secret: libvirt refuses a second secret with the usage
        # name of another (an operator's secret of the same user)
        return "%s.client.%s secret %s" % (cluster, user, secret_uuid)

    # -- XML ---------------------------------------------------------------
    def auth_xml(self, data):
        auth = self.auth(data)
        if auth is None:
            return ""
        return ("<auth username=%s><secret type='ceph' uuid=%s/></auth>"
                % (base.q(auth[0]), base.q(auth[1])))

    def source_xml(self, data):
        hosts = "".join(
            "<host name=%s%s/>" % (base.q(h), " port=%s" % base.q(p) if p
                                   else "")
            for h, p in self.monitors(data))
        cluster = self.cluster(data)
        config = ("" if cluster == DEFAULT_CLUSTER else
                  "<config file=%s/>" % base.q("%s/%s.conf" % (KEYRING_DIR,
                                                               cluster)))
        # <auth> inside <source>: a live migration's destination XML,
        # which takes the <source> of the destination's connection, gets
        # the destination's secret with it
        return ("<source protocol='rbd' name=%s>%s%s%s</source>"
                % (base.q(data["name"]), hosts, config, self.auth_xml(data)))
