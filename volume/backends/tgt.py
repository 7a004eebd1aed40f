"""The ``iscsi`` storage backend: the file backend's images as tgt targets.

Volumes are the ``file`` backend's sparse raw files (``volumes_dir``);
instead of NBD they are exported by tgtd (Debian's ``tgt``, started by
tools/start-tgt.sh) through ``tgtadm``, as Cinder's LVM driver with its
tgt target helper does.  Each (volume, mode) in use has one target,
``<target_prefix>volume-<id>`` (``-ro`` appended for read-only), with the
file as LUN 1 (tgt's LUN 0 is its controller).  The read-only target's
LUN is tgt's ``readonly``: the target itself advertises write protection
and refuses writes (QEMU refuses to open it read-write: "LUN is write
protected"), not only QEMU's flag, as the rbd backend's read-only
identity.

Access: CHAP per target (an account of tgtd bound to it, whose password
is derived from a random key kept in ``<volumes_dir>/.tgt/chap.key``, so
that it survives restarts and is never stored in the database) and an
initiator ACL: the connector's ``initiator`` (open-iscsi's name; a
connector without one is refused, as Cinder's LIO).  A target is removed,
with its account and ACL, when the last connected attachment of that
(volume, mode) is gone.  The initiators bound to a target are kept in
``<volumes_dir>/.tgt/<target>.json``, so that ``restore`` rebuilds the
targets of connected attachments after tgtd lost them (a restart).

connection_info is what Cinder's LVM driver gives (flat, as the file
backend's): ``driver_volume_type`` ``iscsi`` and ``target_discovered``,
``target_portal``, ``target_iqn``, ``target_lun``, ``auth_method``
``CHAP``, ``auth_username``, ``auth_password``, ``volume_id``,
``access_mode``, ``encrypted``, ``discard``; with the connector's
``multipath``, ``target_portals``, ``target_iqns`` and ``target_luns``
too.  Needs tgt's ``tgtadm``, run as root.
"""
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import subprocess
import threading
import uuid

from volattach import exception
from volattach.volume.backends import file as file_backend

LOG = logging.getLogger(__name__)

DRIVER_VOLUME_TYPE = "iscsi"
LUN = 1
TGTADM_TIMEOUT = 30


class TargetError(Exception):
    """tgtadm refused an operation (the message has its stderr)."""


def tgtadm(*args, check=True):
    """Run ``tgtadm --lld iscsi ARGS``; its stdout, TargetError on a
    failure (never with an account's password in the message)."""
    cmd = ["tgtadm", "--lld", "iscsi"] + list(args)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True,
                              timeout=TGTADM_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise TargetError("tgtadm: %s (is tgt installed and tgtd running? "
                          "tools/start-tgt.sh)" % e)
    if check and proc.returncode != 0:
        shown = list(args)
        if "--password" in shown:
            shown[shown.index("--password") + 1] = "***"
        raise TargetError("tgtadm %s: %s" % (" ".join(shown),
                                             proc.stderr.strip()))
    return proc.stdout


def targets():
    """{target name: tid} of tgtd."""
    out = tgtadm("--mode", "target", "--op", "show")
    return {m.group(2): int(m.group(1))
            for m in re.finditer(r"^Target (\d+): (\S+)$", out, re.M)}


def target_name(prefix, volume_id, mode):
    return "%svolume-%s%s" % (prefix, volume_id, "-ro" if mode == "ro"
                              else "")


def chap_user(volume_id, mode):
    # tgtd's accounts are global: one per (volume, mode)
    return "volattach-%s%s" % (uuid.UUID(volume_id).hex[:20], mode)


class ISCSIBackend(file_backend.FileBackend):
    """Files of ``volumes_dir`` exported by tgtd on ``portal``."""

    shared_targets = False
    needs_remaining = True
    # tgtd reads a LUN's size when the LUN is added: re-adding it after
    # the file grew makes it report the new capacity to the sessions
    # open on the target (see refresh_luns), which QEMU's iSCSI client
    # then reads (block_resize)
    online_extend = True

    def __init__(self, name, service_host, volumes_dir, portal_host,
                 portal_port=3260, target_prefix="iqn.2010-10.org.openstack:"):
        # the file backend's volumes; its NBD daemon is never started
        super().__init__(name, service_host, volumes_dir,
                         export_host="127.0.0.1", export_port=0)
        self.portal = ("[%s]:%d" if ":" in portal_host else "%s:%d") % (
            portal_host, portal_port)
        self.prefix = target_prefix
        self.state_dir = os.path.join(volumes_dir, ".tgt")
        self._tgt_lock = threading.Lock()

    # -- credentials -------------------------------------------------------
    def _key(self):
        os.makedirs(self.state_dir, mode=0o700, exist_ok=True)
        path = os.path.join(self.state_dir, "chap.key")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            with open(path, "rb") as f:
                return f.read()
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(32))
        with open(path, "rb") as f:
            return f.read()

    def chap(self, volume_id, mode):
        """(user, password) of the target of (volume, mode)."""
        user = chap_user(volume_id, mode)
        digest = hmac.new(self._key(), user.encode(), hashlib.sha256)
        # tgt (and the iSCSI RFC's CHAP secrets) want 12 to 16 characters
        return user, digest.hexdigest()[:16]

    # -- targets -----------------------------------------------------------
    def _acl_file(self, name):
        return os.path.join(self.state_dir, "%s.json" % name)

    def _acl(self, name):
        try:
            with open(self._acl_file(name)) as f:
                return json.load(f)
        except (OSError, ValueError):
            return []

    def _save_acl(self, name, initiators):
        os.makedirs(self.state_dir, mode=0o700, exist_ok=True)
        with open(self._acl_file(name), "w") as f:
            json.dump(sorted(set(initiators)), f)

    def ensure_target(self, volume_id, mode, initiators):
        """The target of (volume, mode), created when missing, with
        ``initiators`` (and those bound before) let in."""
        name = target_name(self.prefix, volume_id, mode)
        with self._tgt_lock:
            existing = targets()
            tid = existing.get(name)
            if tid is None:
                tid = self._new_target(name, existing)
                try:
                    self._populate(tid, volume_id, mode)
                except TargetError:
                    tgtadm("--mode", "target", "--op", "delete", "--force",
                           "--tid", str(tid), check=False)
                    raise
                LOG.info("tgt target %s (tid %d) for volume %s", name, tid,
                         volume_id)
                bound = set()
            else:
                bound = set(self._bound(tid))
            wanted = set(self._acl(name)) | set(initiators)
            for initiator in sorted(wanted - bound):
                tgtadm("--mode", "target", "--op", "bind", "--tid", str(tid),
                       "--initiator-name", initiator)
            self._save_acl(name, wanted)
        return name

    @staticmethod
    def _new_target(name, existing, attempts=5):
        """A new target ``name``; its tid, the next free one (another
        service on the same tgtd may take it first: then the next)."""
        tid = max(existing.values(), default=0) + 1
        for _ in range(attempts):
            try:
                tgtadm("--mode", "target", "--op", "new", "--tid", str(tid),
                       "--targetname", name)
                return tid
            except TargetError as e:
                if "exist" not in str(e):
                    raise
                tid = max(list(targets().values()) + [tid]) + 1
        raise TargetError("no free tid for %s after %d attempts"
                          % (name, attempts))

    def _populate(self, tid, volume_id, mode):
        tgtadm("--mode", "logicalunit", "--op", "new", "--tid", str(tid),
               "--lun", str(LUN), "--backing-store", self.path(volume_id))
        if mode == "ro":
            tgtadm("--mode", "logicalunit", "--op", "update", "--tid",
                   str(tid), "--lun", str(LUN), "--params", "readonly=1")
        user, password = self.chap(volume_id, mode)
        # an account of the same name left by a crash keeps its password:
        # tgtadm cannot show it, so a wrong one fails the login (cleanly)
        out = subprocess.run(
            ["tgtadm", "--lld", "iscsi", "--mode", "account", "--op", "new",
             "--user", user, "--password", password],
            capture_output=True, text=True, timeout=TGTADM_TIMEOUT)
        if out.returncode != 0 and "exist" not in out.stderr:
            raise TargetError("tgtadm account new %s: %s"
                              % (user, out.stderr.strip()))
        tgtadm("--mode", "account", "--op", "bind", "--tid", str(tid),
               "--user", user)

    @staticmethod
    def _bound(tid):
        """The initiator names of the target's ACL (from the full show:
        ``--op show --tid`` gives only its parameters)."""
        out = tgtadm("--mode", "target", "--op", "show")
        blocks = re.split(r"^Target (\d+): \S+$", out, flags=re.M)
        for i in range(1, len(blocks) - 1, 2):
            if int(blocks[i]) == tid:
                acl = blocks[i + 1].split("ACL information:", 1)
                return [line.strip() for line in acl[-1].splitlines()
                        if line.strip()] if len(acl) == 2 else []
        return []

    def remove_target(self, volume_id, mode):
        """Remove the target of (volume, mode) with its account (sessions
        still open are cut: --force)."""
        name = target_name(self.prefix, volume_id, mode)
        with self._tgt_lock:
            tid = targets().get(name)
            if tid is not None:
                tgtadm("--mode", "target", "--op", "delete", "--force",
                       "--tid", str(tid))
            tgtadm("--mode", "account", "--op", "delete", "--user",
                   chap_user(volume_id, mode), check=False)
            try:
                os.unlink(self._acl_file(name))
            except FileNotFoundError:
                pass

    def refresh_luns(self, volume_id):
        """Make the LUN of each target of the volume report its file's
        size: tgtd reads it when the LUN is added and never again (neither
        a truncate nor ``logicalunit update`` changes it, measured with tgt
        1.0.85), so LUN 1 is deleted and added again with the same backing
        file (sessions stay logged in; the read-only target gets its
        ``readonly`` flag back).  Cinder's tgt helper instead re-creates
        the whole target (``tgt-admin --update --force``), cutting them."""
        with self._tgt_lock:
            existing = targets()
            for mode in ("rw", "ro"):
                tid = existing.get(target_name(self.prefix, volume_id, mode))
                if tid is None:
                    continue
                tgtadm("--mode", "logicalunit", "--op", "delete", "--tid",
                       str(tid), "--lun", str(LUN))
                tgtadm("--mode", "logicalunit", "--op", "new", "--tid",
                       str(tid), "--lun", str(LUN), "--backing-store",
                       self.path(volume_id))
                if mode == "ro":
                    tgtadm("--mode", "logicalunit", "--op", "update",
                           "--tid", str(tid), "--lun", str(LUN),
                           "--params", "readonly=1")
                LOG.info("tgt target %s (tid %d): LUN %d re-read its size",
                         target_name(self.prefix, volume_id, mode), tid, LUN)

    def extend_volume(self, volume, new_size, attached=False):
        """Grow the volume's file, then the LUN of each of its targets.
        Once the file grew the extend stands, as Cinder's
        (``TargetUpdateFailed``: "Volume extended but failed to update
        target"): a LUN that did not follow is logged, and the next
        connection of the volume gets the new size."""
        vid = file_backend.backing(volume)
        file_backend.grow_file(self.path(vid),
                               int(new_size) * file_backend.GiB)
        try:
            self.refresh_luns(vid)
        except TargetError as e:
            LOG.warning("Volume %s extended but its iSCSI target did not "
                        "follow: %s", volume["id"], e)

    # -- connections -------------------------------------------------------
    @staticmethod
    def check_connector(connector):
        return file_backend.volume_backend.check_connector_keys(
            connector, keys=("host", "initiator"))

    def initialize_connection(self, volume, attachment_id, connector,
                              attach_mode):
        self.check_connector(connector)
        mode = "ro" if attach_mode == "ro" else "rw"
        vid = file_backend.backing(volume)
        try:
            iqn = self.ensure_target(vid, mode, [connector["initiator"]])
        except (TargetError, OSError) as e:
            raise exception.InvalidInput(
                reason="Volume %s cannot be exported: %s" % (volume["id"], e))
        user, password = self.chap(vid, mode)
        info = {
            "driver_volume_type": DRIVER_VOLUME_TYPE,
            "target_discovered": False,
            "target_portal": self.portal, "target_iqn": iqn,
            "target_lun": LUN, "auth_method": "CHAP",
            "auth_username": user, "auth_password": password,
            "access_mode": mode, "volume_id": volume["id"],
            "attachment_id": attachment_id, "encrypted": False,
            "discard": False, "qos_specs": None, "cacheable": False,
        }
        if connector.get("multipath"):
            info.update(target_portals=[self.portal], target_iqns=[iqn],
                        target_luns=[LUN])
        return info

    def terminate_connection(self, volume, attachment, connector,
                             remaining=()):
        """Remove the target of the attachment's mode unless another
        connected attachment in ``remaining`` still uses it."""
        mode = "ro" if attachment.get("attach_mode") == "ro" else "rw"
        if any(("ro" if a.get("attach_mode") == "ro" else "rw") == mode
               for a in remaining):
            return
        try:
            self.remove_target(file_backend.backing(volume), mode)
        except TargetError as e:
            LOG.warning("removing the target of volume %s: %s",
                        volume["id"], e)

    def restore(self, attachments):
        """On start: rebuild the targets of connected attachments that
        tgtd lost (its restart), with their recorded initiators."""
        for a in attachments:
            mode = "ro" if a.get("attach_mode") == "ro" else "rw"
            vid = a.get("name_id") or a["volume_id"]
            try:
                self.ensure_target(vid, mode, [])
            except (TargetError, OSError):
                LOG.exception("Cannot rebuild the target of volume %s",
                              a["volume_id"])
