"""The ``rbd`` storage backend: volumes are images in a Ceph pool.

Images are ``volume-<id>`` (the volume's ``name_id`` after a migration) in
``[rbd] rbd_pool``; the service talks to the cluster through librados and
librbd (one connection per process, made on first use, as ``[rbd]
rbd_user`` or client.admin).  Multiattach volume types drop the image
features that let only one client write (exclusive-lock, object-map,
fast-diff, journaling), as Cinder does since Stein.

connection_info is Cinder's RBD driver's (``driver_volume_type`` ``rbd``,
flat as Cinder's attachment API returns it): ``name`` ``<pool>/<image>``,
``hosts`` and ``ports`` from ``mon dump``, ``cluster_name``,
``auth_enabled`` (``rbd_user`` is set), ``auth_username``, ``secret_type``
``ceph``, ``secret_uuid`` (``rbd_secret_uuid`` or the cluster's fsid),
``volume_id``, ``discard``, and the volume manager's ``access_mode``.
Beyond Cinder, a read-only attachment's connection names a read-only
cephx identity (``[rbd] rbd_readonly_user``), created here when missing
with its keyring written beside the Ceph configuration
(``/etc/ceph/<cluster>.client.<user>.keyring``, where computes read it):
the OSDs refuse that attachment's writes, not only QEMU's flag.  Its caps
are ``mon 'profile rbd' osd 'profile rbd-read-only pool=<pool>, allow rw
pool=<pool> object_prefix rbd_header.'``: QEMU (7.2) always opens an rbd
image read-write at the librbd level (its read-only flag only stops the
guest's writes), and librbd's read-write open registers a watch on the
image's header object, which is a write there; ``profile rbd-read-only``
alone makes QEMU fail to open the image ("error reading header ...:
Operation not permitted", measured).  Data objects stay read-only: a
write is refused by the OSDs with EPERM, and a resize or a snapshot with
EROFS (no class-write, so no exclusive lock either).

The Python bindings: Debian's python3-rados and python3-rbd (installed
with Ceph by tools/start-ceph.sh) are extension modules built for
Debian's python3.  When ``import rados`` fails in this interpreter but it
is the same CPython minor version (same ABI tag, e.g. a pyenv 3.11 venv on
Debian 12), the two modules are loaded from Debian's dist-packages by
file, without putting that directory on ``sys.path`` (its other packages
would shadow the venv's).  Otherwise the backend refuses to start and
names the packages.
"""
import contextlib
import errno
import importlib.machinery
import importlib.util
import json
import logging
import os
import re
import socket
import sys
import tempfile
import threading
import uuid

from volattach import exception
from volattach.volume import backend as volume_backend

LOG = logging.getLogger(__name__)

DRIVER_VOLUME_TYPE = "rbd"
GiB = 1024 ** 3
DEBIAN_BINDINGS_DIRS = ("/usr/lib/python3/dist-packages",)
_RO_SECRET_NAMESPACE = uuid.UUID("c2a4f5a1-3d0e-4f43-8a5e-2f8c9b7d1e6a")


def _load_extension(name, dirs):
    for directory in dirs:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(directory, name + suffix)
            if os.path.exists(path):
                spec = importlib.util.spec_from_file_location(name, path)
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                try:
                    spec.loader.exec_module(module)
                except Exception:
                    del sys.modules[name]
                    raise
                return module
    raise ImportError("no %s extension for this Python under %s"
                      % (name, ", ".join(dirs)))


def load_bindings(dirs=DEBIAN_BINDINGS_DIRS):
    """(rados, rbd): importable ones, else Debian's loaded by file."""
    try:
        import rados
        import rbd
        return rados, rbd
    except ImportError:
        pass
    try:
        rados = sys.modules.get("rados") or _load_extension("rados", dirs)
        rbd = sys.modules.get("rbd") or _load_extension("rbd", dirs)
    except ImportError as e:
        raise exception.ServiceUnavailable(
            reason="the rbd backend needs the rados and rbd Python bindings "
                   "(Debian: python3-rados python3-rbd, for Python %d.%d): "
                   "%s" % (sys.version_info[:2] + (e,)))
    return rados, rbd


def mon_addresses(mon_host):
    """[(host, port)] of a ``mon_host`` value that gives ports (IPv4,
    [IPv6] or names, msgr v1/v2 address vectors)."""
    return [(v6 or name, int(p6 or port)) for v6, p6, name, port in
            re.findall(r"\[([0-9a-fA-F:]+)\]:(\d+)|([\w.-]+):(\d+)",
                       re.sub(r"\bv[12]:", "", mon_host))]


def backing(volume):
    return volume.get("name_id") or volume["id"]


def image_name(volume):
    return "volume-%s" % backing(volume)


class RBDBackend:

    shared_targets = False

    def __init__(self, name, service_host, pool, ceph_conf, cluster_name,
                 user=None, secret_uuid=None,
                 readonly_user="volattach-readonly", connect_timeout=10,
                 bindings=None):
        self.name = name
        self.service_host = service_host
        self.pool = pool
        self.ceph_conf = ceph_conf
        self.cluster_name = cluster_name
        self.user = user
        self.secret_uuid = secret_uuid
        self.readonly_user = readonly_user
        self.connect_timeout = connect_timeout
        self.rados, self.rbd = bindings or load_bindings()
        self._lock = threading.Lock()
        self._client = None
        self._readonly_ready = False

    # -- the cluster ----------------------------------------------------------
    def keyring_path(self, user):
        return os.path.join(os.path.dirname(self.ceph_conf) or ".",
                            "%s.client.%s.keyring" % (self.cluster_name,
                                                      user))

    def _cluster(self):
        with self._lock:
            if self._client is None:
                timeout = str(self.connect_timeout)
                client = self.rados.Rados(
                    conffile=self.ceph_conf, rados_id=self.user,
                    clustername=self.cluster_name,
                    conf={"client_mount_timeout": timeout,
                          "rados_mon_op_timeout": timeout,
                          "rados_osd_op_timeout":
                              str(3 * self.connect_timeout)})
                try:
                    self._probe_monitors(client.conf_get("mon_host") or "")
                    client.connect(timeout=self.connect_timeout)
                except self.rados.Error:
                    client.shutdown()
                    raise
                self._client = client
            return self._client

    def _probe_monitors(self, mon_host):
        """Fail at once when no monitor of ``mon_host`` accepts a TCP
        connection (Ceph down), instead of librados waiting for
        rados_connect_timeout."""
        addrs = mon_addresses(mon_host)
        if not addrs:
            return      # names only (DNS SRV, hosts without ports)
        for host, port in addrs:
            try:
                socket.create_connection((host, port),
                                         timeout=self.connect_timeout).close()
                return
            except OSError:
                continue
        raise self.rados.Error("no monitor answers at %s" % mon_host)

    def _reset(self):
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            try:
                client.shutdown()
            except Exception:
                pass

    @contextlib.contextmanager
    def _errors(self, what):
        """Ceph's errors as domain exceptions; a failed connection is
        dropped so that the next call makes a new one."""
        try:
            yield
        except (self.rados.Error, self.rbd.Error) as e:
            if isinstance(e, self.rados.Error):
                self._reset()
            LOG.warning("rbd backend: %s failed: %s", what, e)
            raise exception.ServiceUnavailable(
                reason="Ceph cluster %s: %s failed: %s"
                % (self.cluster_name, what, e))

    @contextlib.contextmanager
    def _ioctx(self):
        ioctx = self._cluster().open_ioctx(self.pool)
        try:
            yield ioctx
        finally:
            ioctx.close()

    def _mon_command(self, cmd):
        ret, out, err = self._cluster().mon_command(json.dumps(cmd), b"")
        return ret, out, err

    # -- volumes --------------------------------------------------------------
    def multiattach_exclusions(self):
        """The features a multiattach image must not have (Cinder's
        MULTIATTACH_EXCLUSIONS)."""
        r = self.rbd
        return (r.RBD_FEATURE_JOURNALING | r.RBD_FEATURE_FAST_DIFF
                | r.RBD_FEATURE_OBJECT_MAP | r.RBD_FEATURE_EXCLUSIVE_LOCK)

    def create_volume(self, volume):
        name = image_name(volume)
        with self._errors("create of image %s" % name), self._ioctx() as io:
            self.rbd.RBD().create(io, name, int(volume["size"]) * GiB,
                                  old_format=False)
            try:
                if volume.get("multiattach"):
                    with self.rbd.Image(io, name) as image:
                        drop = (image.features()
                                & self.multiattach_exclusions())
                        if drop:
                            image.update_features(drop, False)
            except BaseException:
                self.rbd.RBD().remove(io, name)     # no half-made volume
                raise
        return "%s@%s#%s" % (self.service_host, self.name, self.name)

    # librbd resizes an image open elsewhere: its header changes and the
    # watchers (QEMU's librbd) learn the new size
    online_extend = True

    def extend_volume(self, volume, new_size, attached=False):
        """``rbd resize`` of the volume's image to ``new_size`` GiB (an
        image already that large is left alone)."""
        name = image_name(volume)
        size = int(new_size) * GiB
        with self._errors("resize of image %s" % name), self._ioctx() as io:
            with self.rbd.Image(io, name) as image:
                if image.size() < size:
                    image.resize(size)

    def delete_volume(self, volume):
        """Remove the image (gone already: nothing to do).  An image still
        open somewhere (a watcher) is refused by Ceph; the error is logged
        with the image's name, the volume row is gone."""
        name = image_name(volume)
        try:
            with self._ioctx() as io:
                self.rbd.RBD().remove(io, name)
        except self.rbd.ImageNotFound:
            pass
        except (self.rados.Error, self.rbd.Error) as e:
            if isinstance(e, self.rados.Error):
                self._reset()
            LOG.error("rbd backend: image %s/%s left behind: %s",
                      self.pool, name, e)

    # -- connections ----------------------------------------------------------
    @staticmethod
    def check_connector(connector):
        return volume_backend.check_connector_keys(connector)

    def shared_target_id(self, service_uuid, connector_host):
        return None

    def monitors(self):
        """(hosts, ports) of the monitors, parallel lists (``mon dump``'s
        legacy addresses, as Cinder's RBD driver gives them)."""
        ret, out, err = self._mon_command({"prefix": "mon dump",
                                           "format": "json"})
        if ret != 0:
            raise self.rados.Error("mon dump: %s" % err)
        hosts, ports = [], []
        for mon in json.loads(out)["mons"]:
            addr = (mon.get("addr") or mon.get("public_addr") or "")
            addr = addr.split("/", 1)[0]
            host, _, port = addr.rpartition(":")
            if host:
                hosts.append(host)
                ports.append(port)
        return hosts, ports

    def readonly_secret_uuid(self, fsid):
        return str(uuid.uuid5(_RO_SECRET_NAMESPACE,
                              "%s/%s" % (fsid, self.readonly_user)))

    def readonly_caps(self):
        return ["mon", "profile rbd",
                "osd", "profile rbd-read-only pool={0}, allow rw pool={0} "
                       "object_prefix rbd_header.".format(self.pool)]

    def ensure_readonly_identity(self):
        """The read-only cephx user exists with its caps and its keyring
        is written; returns its name."""
        if self._readonly_ready:
            return self.readonly_user
        entity = "client.%s" % self.readonly_user
        caps = self.readonly_caps()
        ret, out, err = self._mon_command({"prefix": "auth get-or-create",
                                           "entity": entity, "caps": caps})
        if ret == -errno.EINVAL:        # exists with other caps
            ret, out, err = self._mon_command(
                {"prefix": "auth caps", "entity": entity, "caps": caps})
            if ret == 0:
                ret, out, err = self._mon_command(
                    {"prefix": "auth get", "entity": entity})
        path = self.keyring_path(self.readonly_user)
        if ret != 0:
            if os.path.exists(path):
                LOG.warning("rbd backend: cannot manage %s (%s): using the "
                            "keyring %s as it is", entity, err, path)
                self._readonly_ready = True
                return self.readonly_user
            raise exception.ServiceUnavailable(
                reason="cannot create the read-only cephx user %s (%s) and "
                       "%s does not exist" % (entity, err, path))
        self._write_keyring(path, out)
        self._readonly_ready = True
        return self.readonly_user

    @staticmethod
    def _write_keyring(path, content):
        try:
            with open(path, "rb") as f:
                if f.read() == content:
                    return
        except FileNotFoundError:
            pass
        directory = os.path.dirname(path) or "."
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".keyring-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(content)
            os.chmod(tmp, 0o600)
            os.rename(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        LOG.info("rbd backend: wrote %s", path)

    def initialize_connection(self, volume, attachment_id, connector,
                              attach_mode):
        self.check_connector(connector)
        mode = "ro" if attach_mode == "ro" else "rw"
        with self._errors("connection of volume %s" % volume["id"]):
            hosts, ports = self.monitors()
            fsid = self._cluster().get_fsid()
            if mode == "ro":
                user = self.ensure_readonly_identity()
                auth_enabled = True
                secret_uuid = self.readonly_secret_uuid(fsid)
            else:
                user = self.user
                auth_enabled = bool(self.user)
                secret_uuid = self.secret_uuid or fsid
        return {
            "driver_volume_type": DRIVER_VOLUME_TYPE,
            "name": "%s/%s" % (self.pool, image_name(volume)),
            "hosts": hosts, "ports": ports,
            "cluster_name": self.cluster_name,
            "auth_enabled": auth_enabled, "auth_username": user,
            "secret_type": "ceph", "secret_uuid": secret_uuid,
            "volume_id": volume["id"], "discard": True,
            "access_mode": mode, "attachment_id": attachment_id,
            "encrypted": False, "qos_specs": None, "cacheable": False,
        }

    def terminate_connection(self, volume, attachment, connector):
        """Nothing is exported: QEMU closes the image on detach."""
