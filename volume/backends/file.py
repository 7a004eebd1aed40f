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

NBD over TLS (``[volume] nbd_tls``): the daemon gets a ``tls-creds-x509``
object (endpoint server, ``[volume] nbd_tls_dir``: ``ca-cert.pem``,
``server-cert.pem``, ``server-key.pem``) and an ``authz-list`` that lets in
only the client certificates whose distinguished names
``[volume] nbd_tls_allowed_clients`` lists; its NBD server requires both.
The NBD server is configured over QMP (``configure``), so that a reused
daemon whose settings differ is reconfigured on start, its exports rebuilt
by ``restore``.  Exporting on a non-loopback address without TLS is refused
at start (``check_security``) unless ``[volume] allow_insecure_nbd``.

connection_info carries ``driver_volume_type`` ``nbd`` and ``host``,
``port``, ``name``, ``access_mode`` and ``tls`` (flat, as the fake
backend's); ``host`` is ``[volume] export_host``, or ``[DEFAULT] my_ip``
when that is a wildcard address.  Needs the ``volattach[libvirt]`` extra
(``qemu.qmp``) and QEMU's ``qemu-storage-daemon``.
"""
import asyncio
import contextlib
import ipaddress
import json
import logging
import os
import shutil
import subprocess
import threading
import time
import uuid

from volattach import exception
from volattach.volume import backend as volume_backend
from volattach.wsgi import insecure

LOG = logging.getLogger(__name__)
# qemu.qmp logs every refused connection (the probe of a daemon that is
# not running yet) as an error
logging.getLogger("qemu.qmp").setLevel(logging.CRITICAL)

DRIVER_VOLUME_TYPE = "nbd"
GiB = 1024 ** 3


TLS_SERVER_FILES = ("ca-cert.pem", "server-cert.pem", "server-key.pem")
ALLOW_INSECURE_OPTION = "[volume] allow_insecure_nbd"


class ExportError(Exception):
    """The storage daemon refused an operation."""


class NBDPortInUse(ExportError):
    """Another process listens on the NBD port a daemon would start on."""


class InsecureNBD(insecure.InsecureNoauth):
    """The file backend would export volumes on the network without TLS
    (or with TLS but no usable credentials or authorization)."""


def is_wildcard(host):
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def check_security(conf):
    """Raise InsecureNBD when the file backend of ``conf`` would export
    volumes beyond loopback without TLS and authorization, or when its TLS
    material is missing; names the option to change."""
    vconf = conf.volume
    if vconf.backend != "file":
        return
    if vconf.nbd_tls:
        missing = [os.path.join(vconf.nbd_tls_dir or "", name)
                   for name in TLS_SERVER_FILES
                   if not vconf.nbd_tls_dir or not os.path.isfile(
                       os.path.join(vconf.nbd_tls_dir, name))]
        if missing:
            raise InsecureNBD(
                "[volume] nbd_tls is on but [volume] "
                "nbd_tls_dir (%s) lacks %s" % (vconf.nbd_tls_dir,
                                               ", ".join(missing)))
        if not vconf.nbd_tls_allowed_clients:
            raise InsecureNBD(
                "[volume] nbd_tls is on but [volume] "
                "nbd_tls_allowed_clients is empty: list the distinguished "
                "names of the computes' client certificates")
        return
    if conf.volume.allow_insecure_nbd or insecure.is_loopback(
            vconf.export_host):
        return
    raise InsecureNBD(
        "volattach-volume refuses to export volumes over NBD on %s, which "
        "is not a loopback address, without TLS: any host reaching port %s "
        "could read and write every volume.  Set [volume] nbd_tls = true "
        "(with nbd_tls_dir and nbd_tls_allowed_clients), export on "
        "loopback, or set %s = true."
        % (vconf.export_host, vconf.export_port, ALLOW_INSECURE_OPTION))


def authz_rules(allowed_clients):
    """QEMU ``authz-list`` rules letting in each distinguished name, in
    the order given and reversed (GnuTLS prints the subject in the
    certificate's order, ``O=volattach,CN=compute1``; RFC 4514 tools
    print it backwards)."""
    rules, seen = [], set()
    for dname in allowed_clients:
        parts = [p.strip() for p in _split_dn(dname)]
        for form in (",".join(parts), ",".join(reversed(parts))):
            if form and form not in seen:
                seen.add(form)
                rules.append({"match": form, "policy": "allow",
                              "format": "exact"})
    return rules


def _split_dn(dname):
    """The RDNs of ``dname``, split on commas that are not escaped."""
    parts, current, escaped = [], "", False
    for char in dname:
        if escaped:
            current += char
            escaped = False
        elif char == "\\":
            current += char
            escaped = True
        elif char == ",":
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [p for p in parts if p.strip()]


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

    def __init__(self, state_dir, host, port, binary="qemu-storage-daemon",
                 tls_dir=None, tls_allowed_clients=()):
        self.state_dir = state_dir
        self.socket = os.path.join(state_dir, "qsd.qmp")
        self.pidfile = os.path.join(state_dir, "qsd.pid")
        # the NBD server settings last applied to the running daemon
        self.server_file = os.path.join(state_dir, "qsd.nbd-server.json")
        self.host, self.port, self.binary = host, port, binary
        self.tls_dir = tls_dir
        self.tls_allowed_clients = list(tls_allowed_clients or ())
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
        """Reuse a running daemon, else start one (in its own session);
        either way its NBD server has this object's settings after."""
        if self.alive():
            self.configure()
            return False
        self._check_can_start()
        os.makedirs(self.state_dir, exist_ok=True)
        for path in (self.socket, self.server_file):
            if os.path.exists(path):
                os.unlink(path)
        binary = shutil.which(self.binary) or self.binary
        log = open(os.path.join(self.state_dir, "qsd.log"), "ab")
        child = subprocess.Popen(
            [binary,
             "--chardev", "socket,id=qmp0,path=%s,server=on,wait=off"
             % self.socket,
             "--monitor", "chardev=qmp0",
             "--pidfile", self.pidfile],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True, close_fds=True)
        log.close()
        deadline = time.monotonic() + timeout
        while not self.alive():
            if child.poll() is not None or time.monotonic() > deadline:
                child.kill()            # no orphan left behind
                child.wait()
                raise ExportError("qemu-storage-daemon did not start (see "
                                  "%s)" % os.path.join(self.state_dir,
                                                       "qsd.log"))
            time.sleep(0.02)
        try:
            self.configure()
        except ExportError:
            self.stop()
            child.wait(timeout)
            raise
        return True

    def _check_can_start(self):
        """Before starting a daemon: its Python client and its binary are
        there, and no other process holds the NBD port (another
        deployment's daemon, one whose state directory was removed)."""
        try:
            from qemu.qmp import legacy  # noqa: F401
        except ImportError as exc:
            raise ExportError("the file backend needs the qemu.qmp package "
                              "(pip install 'volattach[libvirt]'): %s" % exc)
        if not shutil.which(self.binary):
            raise ExportError("the file backend needs %s, which is not on "
                              "PATH (install QEMU)" % self.binary)
        from volattach.volume.backends import storage_daemons
        holder = storage_daemons.port_holder(int(self.port))
        if holder is not None:
            raise NBDPortInUse(
                "[volume] export_port %s (NBD on %s) is in use by %s: stop "
                "it, or set another [volume] export_port" % (
                    self.port, self.host,
                    storage_daemons.describe_holder(holder)))

    def _record(self, settings):
        with open(self.server_file, "w") as f:
            json.dump(settings, f)

    def _started_with(self, settings):
        """Whether the running daemon was started by an earlier release
        with these settings on its command line (plain NBD, no record):
        adopted without a restart of its NBD server, so that an upgrade
        does not cut the guests' connections."""
        if settings["tls_dir"]:
            return False
        try:
            with open(self.pidfile) as f:
                pid = int(f.read().strip())
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                argv = f.read().decode(errors="replace").split("\0")
        except (OSError, ValueError):
            return False
        return "addr.type=inet,addr.host=%s,addr.port=%d" % (
            settings["host"], settings["port"]) in argv

    def server_settings(self):
        return {"host": self.host, "port": self.port,
                "tls_dir": self.tls_dir,
                "tls_allowed_clients": self.tls_allowed_clients}

    def configure(self):
        """Start the daemon's NBD server with these settings, unless it
        already runs with them: stop it (its exports go), replace the TLS
        and authz objects, start it again."""
        wanted = self.server_settings()
        try:
            with open(self.server_file) as f:
                if json.load(f) == wanted:
                    return False
        except (OSError, ValueError):
            if self._started_with(wanted):
                self._record(wanted)
                return False
        with self.batch():
            for cmd, args in (("nbd-server-stop", {}),
                              ("object-del", {"id": "authz0"}),
                              ("object-del", {"id": "tls0"})):
                try:
                    self.command(cmd, **args)
                except ExportError:
                    pass                # not there
            server = {"addr": {"type": "inet", "data": {
                "host": self.host, "port": str(self.port)}}}
            if self.tls_dir:
                self.command("object-add", **{
                    "qom-type": "tls-creds-x509", "id": "tls0",
                    "endpoint": "server", "dir": self.tls_dir,
                    "verify-peer": True})
                self.command("object-add", **{
                    "qom-type": "authz-list", "id": "authz0",
                    "policy": "deny",
                    "rules": authz_rules(self.tls_allowed_clients)})
                server.update({"tls-creds": "tls0", "tls-authz": "authz0"})
            self.command("nbd-server-start", **server)
        self._record(wanted)
        LOG.info("NBD server of qemu-storage-daemon on %s:%s (%s)",
                 self.host, self.port,
                 "TLS, %d allowed clients" % len(self.tls_allowed_clients)
                 if self.tls_dir else "no TLS")
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
        """One QMP command (every one goes through here: logged at DEBUG
        with its outcome)."""
        with self._lock:
            qmp = self._qmp or self._session()
            try:
                reply = qmp.cmd_raw(cmd, args or None)
            finally:
                if qmp is not self._qmp:
                    qmp.close()
        if "error" in reply:
            LOG.debug("QMP %s: error %s", cmd, reply["error"].get("desc"))
            raise ExportError("%s: %s" % (cmd, reply["error"].get("desc")))
        LOG.debug("QMP %s: ok", cmd)
        return reply.get("return")

    def stop(self):
        try:
            self.command("quit")
        except Exception:
            pass


def grow_file(path, size):
    """Grow the raw image ``path`` to ``size`` bytes (sparse: a truncate,
    what ``qemu-img resize -f raw`` does); a file already that large is
    left alone, so that a repeated extend is harmless.  OSError (the file
    is missing...) goes to the caller."""
    if os.stat(path).st_size < size:
        os.truncate(path, size)


class FileBackend:

    shared_targets = False
    needs_remaining = True
    # QEMU's NBD client fixes the export's size when it connects (7.2,
    # measured: block_resize of the guest's NBD node answers "Cannot grow
    # NBD nodes") and the storage daemon cannot resize an exported node
    # ("Permission conflict on node ...: permissions 'resize' are ...
    # unshared"); a detach, extend and attach gives the guest the size.
    online_extend = False
    ONLINE_EXTEND_REFUSED = (
        "the file backend cannot extend an attached volume: QEMU's NBD "
        "client fixes the size of the export when it connects (\"Cannot "
        "grow NBD nodes\"); detach the volume, extend it, attach it again")

    def __init__(self, name, service_host, volumes_dir, export_host,
                 export_port, daemon=None, tls_dir=None,
                 tls_allowed_clients=(), connect_host=None):
        """``tls_dir``: NBD over TLS with the server credentials there,
        letting in ``tls_allowed_clients`` (distinguished names) only;
        ``connect_host``: the address computes connect to (default:
        ``export_host``)."""
        self.name = name
        self.service_host = service_host
        self.volumes_dir = volumes_dir
        self.export_host, self.export_port = export_host, export_port
        self.connect_host = connect_host or export_host
        self.tls = bool(tls_dir)
        self.daemon = daemon or StorageDaemon(
            os.path.join(volumes_dir, ".qsd"), export_host, export_port,
            tls_dir=tls_dir, tls_allowed_clients=tls_allowed_clients)
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

    def extend_volume(self, volume, new_size, attached=False):
        """Grow the volume's file to ``new_size`` GiB.  Only a detached
        volume (the manager refuses an attached one: ``online_extend``);
        an export left over by a crash would go on serving the old size to
        the next attach, so it goes first."""
        if attached:
            raise exception.InvalidVolume(reason=self.ONLINE_EXTEND_REFUSED)
        name = backing(volume)
        for mode in ("rw", "ro"):
            self.remove_export(name, mode)
        grow_file(self.path(name), int(new_size) * GiB)

    def copy_volume(self, source, dest):
        """The data move of a migration or retype (sparse copy, both
        detached or the source only read)."""
        subprocess.run(["cp", "--sparse=always", self.path(backing(source)),
                        self.path(backing(dest))], check=True)

    # -- connections -----------------------------------------------------------
    @staticmethod
    def check_connector(connector):
        return volume_backend.check_connector_keys(connector)

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
            "host": self.connect_host, "port": self.export_port,
            "name": export_name(backing(volume), mode), "tls": self.tls,
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
