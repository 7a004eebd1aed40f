"""``iscsi`` volumes: QEMU's own iSCSI initiator (libiscsi), no iscsiadm.

The connection is what Cinder's LVM driver with a tgt (or LIO) target
gives: ``target_portal`` (``host:port``, ``[v6]:port``), ``target_iqn``,
``target_lun``, ``auth_method`` (``CHAP``), ``auth_username``,
``auth_password``, ``discard``, and the volume manager's ``access_mode``
and ``encrypted``.  Multipath connections also carry ``target_portals``,
``target_iqns`` and ``target_luns``: QEMU opens one path, so the singular
keys are used when present, else the first of each list (no multipath).

The disk is ``<source protocol='iscsi' name='IQN/LUN'>`` with the portal
as its host and this compute's initiator name (open-iscsi's
``/etc/iscsi/initiatorname.iscsi``, the one the connector sent the volume
service, so that the target's initiator ACL lets QEMU in).  For CHAP the
compute defines the libvirt secret itself (usage type ``iscsi``, one per
(user, target)) from ``auth_password`` and updates its value when the
password changed; the password is never logged and never in the disk XML.
Secrets are not undefined on a disconnect, as the rbd driver's: another
disk of the host may use the same one.  Connect checks that the portal
answers, so that an attach with the target down fails at once.
"""
import logging
import socket
import threading
import uuid
from xml.sax import saxutils

from volattach.compute.virt.libvirt.volume import base
from volattach import exception

LOG = logging.getLogger(__name__)

DEFAULT_PORT = 3260
PORTAL_TIMEOUT = 3.0
# libvirt's VIR_SECRET_USAGE_TYPE_ISCSI
USAGE_TYPE_ISCSI = 3
_SECRET_NAMESPACE = uuid.UUID("6c3f3a52-2b0e-4d4e-8f0a-3b1f6b1c9e27")
_SECRETS_LOCK = threading.Lock()


def _fail(reason):
    raise exception.VirtDriverError(operation="connect", reason=reason)


def parse_portal(portal):
    """(host, port) of ``host:port``, ``[v6]:port`` or a bare host."""
    portal = str(portal or "").strip()
    if not portal:
        _fail("iscsi connection without a target_portal")
    if portal.startswith("["):
        host, _, rest = portal[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif portal.count(":") == 1:
        host, port = portal.split(":")
    else:
        host, port = portal, ""     # a bare name, or a v6 address
    try:
        port = int(port) if port else DEFAULT_PORT
    except ValueError:
        _fail("iscsi target_portal %r has no valid port" % portal)
    return host, port


def target(data):
    """(portal, iqn, lun) of the connection: its singular keys, else the
    first path of a multipath connection."""
    portal, iqn, lun = (data.get("target_portal"), data.get("target_iqn"),
                        data.get("target_lun"))
    if not (portal and iqn):
        portals = data.get("target_portals") or []
        iqns = data.get("target_iqns") or []
        luns = data.get("target_luns") or []
        if portals and iqns:
            portal, iqn = portals[0], iqns[0]
            lun = luns[0] if luns else lun
    if not portal or not iqn:
        _fail("iscsi connection without target_portal/target_iqn")
    if len(data.get("target_portals") or []) > 1:
        LOG.debug("iscsi volume %s: %d paths offered, QEMU uses %s only",
                  data.get("volume_id"), len(data["target_portals"]), portal)
    try:
        lun = int(lun or 0)
    except (TypeError, ValueError):
        _fail("iscsi target_lun %r is not a number" % (lun,))
    return portal, iqn, lun


def chap(data):
    """(username, password) for CHAP, or None without authentication."""
    method = data.get("auth_method")
    if not method or str(method).lower() == "none":
        return None
    if str(method).upper() != "CHAP":
        _fail("iscsi auth_method %r is not supported (only CHAP)" % method)
    user, password = data.get("auth_username"), data.get("auth_password")
    if not user or not password:
        _fail("iscsi CHAP without auth_username or auth_password")
    return user, password


def usage_name(user, iqn):
    return "volattach-iscsi %s@%s" % (user, iqn)


def secret_uuid(usage):
    """The uuid of a usage: the same on every host (a live migration's
    destination defines the same secret)."""
    return str(uuid.uuid5(_SECRET_NAMESPACE, usage))


def initiator_name():
    """This compute's initiator name (the connector's), or None: QEMU then
    uses its own default."""
    from volattach.compute.virt.libvirt import driver
    return driver.iscsi_initiator(driver.INITIATOR_FILE)


class ISCSIVolumeDriver(base.VolumeDriver):
    """An iSCSI LUN opened by QEMU's libiscsi, CHAP by a libvirt secret."""

    # no host cache: the readers of a multiattach volume see its writer's
    # flushed data, and a flush in the guest reaches the target
    cache = "none"

    def connect_volume(self, connection_info):
        data = base.connection_data(connection_info)
        portal, iqn, _ = target(data)
        if data.get("encrypted"):
            _fail("encrypted iscsi volumes are not supported")
        host, port = parse_portal(portal)
        try:
            socket.create_connection((host, port),
                                     timeout=PORTAL_TIMEOUT).close()
        except OSError as e:
            _fail("iSCSI portal %s of %s unreachable: %s" % (portal, iqn, e))
        auth = chap(data)
        if auth is not None:
            self.ensure_secret(iqn, *auth)

    def ensure_secret(self, iqn, user, password):
        """The libvirt secret of (user, target) holding ``password``."""
        lv = self.host.libvirt
        conn = self.host.get_connection()
        usage = usage_name(user, iqn)
        value = password.encode()
        with _SECRETS_LOCK:
            try:
                try:
                    secret = conn.secretLookupByUsage(USAGE_TYPE_ISCSI, usage)
                except lv.libvirtError as e:
                    if e.get_error_code() != lv.VIR_ERR_NO_SECRET:
                        raise
                    secret = conn.secretDefineXML(
                        "<secret ephemeral='no' private='yes'><uuid>%s</uuid>"
                        "<usage type='iscsi'><target>%s</target></usage>"
                        "</secret>" % (secret_uuid(usage),
                                       saxutils.escape(usage)))
                    LOG.info("defined libvirt iscsi secret %s for %s",
                             secret_uuid(usage), usage)
                try:
                    current = secret.value()
                except lv.libvirtError:
                    current = None      # private, or no value yet
                if current != value:
                    secret.setValue(value)
            except lv.libvirtError as e:
                _fail("libvirt iscsi secret of %s: %s (is "
                      "libvirt-daemon-driver-secret installed?)" % (usage, e))

    # -- XML ---------------------------------------------------------------
    def source_xml(self, data):
        portal, iqn, lun = target(data)
        host, port = parse_portal(portal)
        auth = chap(data)
        auth_xml = ("<auth username=%s><secret type='iscsi' usage=%s/></auth>"
                    % (base.q(auth[0]), base.q(usage_name(auth[0], iqn)))
                    if auth else "")
        initiator = initiator_name()
        initiator_xml = ("<initiator><iqn name=%s/></initiator>"
                         % base.q(initiator) if initiator else "")
        # <auth> inside <source>: a live migration's destination takes the
        # <source> of its own connection, with the secret it defined
        return ("<source protocol='iscsi' name=%s><host name=%s port=%s/>"
                "%s%s</source>"
                % (base.q("%s/%d" % (iqn, lun)), base.q(host), base.q(port),
                   auth_xml, initiator_xml))
