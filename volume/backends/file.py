"""The ``file`` storage backend: sparse raw files exported over NBD.

Volumes are sparse raw files under ``[volume] volumes_dir``.  One
``qemu-storage-daemon`` (started by the first volume service that needs it,
in its own session so that it outlives the service, and reused through its
QMP socket afterwards) exports them over NBD on ``[volume] export_host`` /
``export_port``.  Each volume in use has one block node; each (volume, mode)
in use has one export, so a read-write and a read-only attachment of a
multiattach volume share the node (no image locking between them) and the
read-only export refuses writes server-side.  An export is added when an
attachment is connected and removed when the last attachment of that
(volume, mode) is gone; the node goes with the last export.

connection_info carries ``driver_volume_type`` ``nbd`` and ``host``,
``port``, ``name``, ``access_mode`` (flat, as the fake backend's).  Needs the ``volattach[libvirt]`` extra
(``qemu.qmp``) and QEMU's ``qemu-storage-daemon``.
"""
import asyncio
import contextlib
import logging
import os
import shutil
import subprocess
import threading
import time
import uuid

from volattach import exception

LOG = logging.getLogger(__name__)
# qemu.qmp logs every refused connection (the probe of a daemon that is
# not running yet) as an error
logging.getLogger("qemu.qmp").setLevel(logging.CRITICAL)

DRIVER_VOLUME_TYPE = "nbd"
GiB = 1024 ** 3


class ExportError(Exception):
    """The storage daemon refused an operation."""


def backing(volume):
    """The id a volume's data is named by: its own, or after a migration
    of the attached volume the target's (Cinder's ``name_id``)."""
    return volume.get("name_id") or volume["id"]


def node_name(volume_id):
    # QEMU node names are at most 31 characters
    return "v" + uuid.UUID(volume_id).hex[:30]


def export_id(volume_id, mode):
    return "e%s%s" % (uuid.UUID(volume_id).hex[:28], mode)


def export_name(volume_id, mode):
    return "volume-%s%s" % (volume_id, "-ro" if mode == "ro" else "")


class StorageDaemon:
    """One qemu-storage-daemon reached over its QMP socket; one QMP
    session per operation, serialized in this process."""

    def __init__(self, state_dir, host, port, binary="qemu-storage-daemon"):
        self.state_dir = state_dir
        self.socket = os.path.join(state_dir, "qsd.qmp")
        self.pidfile = os.path.join(state_dir, "qsd.pid")
        self.host, self.port, self.binary = host, port, binary
        self._lock = threading.RLock()
        self._qmp = None          # the session of the running batch()

    def _session(self):
        from qemu.qmp import legacy
        # the sync client runs an asyncio loop of the calling thread; the
        # service's request threads have none until given one
        try:
            asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:
            asyncio.set_event_loop(asyncio.new_event_loop())
        qmp = legacy.QEMUMonitorProtocol(self.socket)
        qmp.connect()
        return qmp

    def alive(self):
        try:
            qmp = self._session()
        except (OSError, Exception):  # no socket, refused, no greeting
            return False
        qmp.close()
        return True

    def ensure_running(self, timeout=10.0):
        """Reuse a running daemon, else start one (in its own session)."""
        if self.alive():
            return False
        os.makedirs(self.state_dir, exist_ok=True)
        if os.path.exists(self.socket):
            os.unlink(self.socket)
        binary = shutil.which(self.binary) or self.binary
        log = open(os.path.join(self.state_dir, "qsd.log"), "ab")
        subprocess.Popen(
            [binary,
             "--chardev", "socket,id=qmp0,path=%s,server=on,wait=off"
             % self.socket,
             "--monitor", "chardev=qmp0",
             "--nbd-server", "addr.type=inet,addr.host=%s,addr.port=%d"
             % (self.host, self.port),
             "--pidfile", self.pidfile],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True, close_fds=True)
        log.close()
        deadline = time.monotonic() + timeout
        while not self.alive():
            if time.monotonic() > deadline:
                raise ExportError("qemu-storage-daemon did not start")
            time.sleep(0.02)
        return True

    @contextlib.contextmanager
    def batch(self, start=False):
        """Run the commands of the block over one QMP session (each
        session costs a connect and a greeting); ``start``: start the
        daemon when it does not answer."""
        with self._lock:
            if self._qmp is not None:
                yield
                return
            try:
                self._qmp = self._session()
            except Exception:
                if not start:
                    raise
                self.ensure_running()
                self._qmp = self._session()
            try:
                yield
            finally:
                qmp, self._qmp = self._qmp, None
                qmp.close()

    def command(self, cmd, /, **args):
        with self._lock:
            qmp = self._qmp or self._session()
            try:
                reply = qmp.cmd_raw(cmd, args or None)
            finally:
                if qmp is not self._qmp:
                    qmp.close()
        if "error" in reply:
            raise ExportError("%s: %s" % (cmd, reply["error"].get("desc")))
        return reply.get("return")

    def stop(self):
        try:
            self.command("quit")
        except Exception:
            pass


class FileBackend:

    shared_targets = False
    needs_remaining = True

    def __init__(self, name, service_host, volumes_dir, export_host,
                 export_port, daemon=None):
        self.name = name
        self.service_host = service_host
        self.volumes_dir = volumes_dir
        self.export_host, self.export_port = export_host, export_port
        self.daemon = daemon or StorageDaemon(
            os.path.join(volumes_dir, ".qsd"), export_host, export_port)
        self._lock = threading.Lock()
        os.makedirs(volumes_dir, exist_ok=True)

    def path(self, name):
        """The file of the volume whose data is named ``name`` (its
        ``backing`` id)."""
        return os.path.join(self.volumes_dir, "volume-%s" % name)

    # -- volumes ---------------------------------------------------------------
    def create_volume(self, volume):
        with open(self.path(backing(volume)), "wb") as f:
            f.truncate(int(volume["size"]) * GiB)
        return "%s@%s#%s" % (self.service_host, self.name, self.name)

    def delete_volume(self, volume):
        try:
            os.unlink(self.path(backing(volume)))
        except FileNotFoundError:
            pass

    def copy_volume(self, source, dest):
        """The data move of a migration or retype (sparse copy, both
        detached or the source only read)."""
        subprocess.run(["cp", "--sparse=always", self.path(backing(source)),
                        self.path(backing(dest))], check=True)

    # -- connections -----------------------------------------------------------
    @staticmethod
    def check_connector(connector):
        if not isinstance(connector, dict):
            raise exception.InvalidInput(reason="Connector must be an object.")
        value = connector.get("host")
        if not isinstance(value, str) or not value.strip():
            raise exception.InvalidInput(
                reason="Connector doesn't have required information: host")
        return connector

    def shared_target_id(self, service_uuid, connector_host):
        return None

    def _exports(self):
        return {e["id"]: e for e in self.daemon.command("query-block-exports")}

    def _nodes(self):
        return {n["node-name"] for n in
                self.daemon.command("query-named-block-nodes", flat=True)}

    def ensure_export(self, volume_id, mode):
        """The export of (volume, mode), added when missing."""
        with self._lock, self.daemon.batch(start=True):
            eid = export_id(volume_id, mode)
            if eid in self._exports():
                return
            node = node_name(volume_id)
            if node not in self._nodes():
                self.daemon.command(
                    "blockdev-add", driver="raw", **{"node-name": node},
                    file={"driver": "file", "filename": self.path(volume_id),
                          "locking": "off"})
            self.daemon.command(
                "block-export-add", type="nbd", id=eid, name=export_name(
                    volume_id, mode), **{"node-name": node},
                writable=(mode != "ro"))

    def remove_export(self, volume_id, mode):
        """Remove the export of (volume, mode); the node goes with the
        volume's last export."""
        with self._lock:
            try:
                batch = self.daemon.batch()
                batch.__enter__()
            except Exception:
                return              # no daemon: nothing is exported
            try:
                self._remove_export(volume_id, mode)
            finally:
                batch.__exit__(None, None, None)

    def _remove_export(self, volume_id, mode):
        eid = export_id(volume_id, mode)
        exports = self._exports()
        if eid in exports:
            self.daemon.command("block-export-del", id=eid, mode="hard")
            for _ in range(100):
                if eid not in self._exports():
                    break
                time.sleep(0.01)
        node = node_name(volume_id)
        if (not any(e["node-name"] == node for k, e in
                    self._exports().items() if k != eid)
                and node in self._nodes()):
            self.daemon.command("blockdev-del", **{"node-name": node})

    def initialize_connection(self, volume, attachment_id, connector,
                              attach_mode):
        self.check_connector(connector)
        mode = "ro" if attach_mode == "ro" else "rw"
        try:
            self.ensure_export(backing(volume), mode)
        except (ExportError, OSError) as e:
            raise exception.InvalidInput(
                reason="Volume %s cannot be exported: %s" % (volume["id"], e))
        # flat, as Cinder's attachment API returns it (the driver data
        # merged with driver_volume_type); computes accept both shapes
        return {
            "driver_volume_type": DRIVER_VOLUME_TYPE,
            "host": self.export_host, "port": self.export_port,
            "name": export_name(backing(volume), mode),
            "access_mode": mode, "volume_id": volume["id"],
            "attachment_id": attachment_id,
            "encrypted": False, "qos_specs": None, "cacheable": False,
        }

    def terminate_connection(self, volume, attachment, connector,
                             remaining=()):
        """Drop the export of the attachment's mode unless another
        connected attachment in ``remaining`` still uses it."""
        mode = "ro" if attachment.get("attach_mode") == "ro" else "rw"
        if any(("ro" if a.get("attach_mode") == "ro" else "rw") == mode
               for a in remaining):
            return
        self.remove_export(backing(volume), mode)

    def restore(self, attachments):
        """On start: reuse (or start) the daemon and rebuild the exports
        of every connected attachment (``volume_id``, ``attach_mode`` and
        the volume's ``name_id``)."""
        self.daemon.ensure_running()
        for a in attachments:
            try:
                self.ensure_export(a.get("name_id") or a["volume_id"],
                                   "ro" if a.get("attach_mode") == "ro"
                                   else "rw")
            except ExportError:
                LOG.exception("Cannot rebuild the export of volume %s",
                              a["volume_id"])
