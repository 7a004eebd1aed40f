"""The ``rbd`` storage backend: volumes are images in a Ceph pool.

Images are ``volume-<id>`` (the volume's ``name_id`` after a migration) in
``[rbd] rbd_pool``; the service talks to the cluster through librados and
librbd (one connection per process, made on first use, as ``[rbd]
rbd_user`` or client.admin).  Multiattach volume types drop the image
features that let only one client write (exclusive-lock, object-map,
fast-diff, journaling), as Cinder does since Stein; a retype to or from
such a type drops them or restores the cluster's defaults (``retype``).

connection_info is Cinder's RBD driver's (``driver_volume_type`` ``rbd``,
flat as Cinder's attachment API returns it): ``name`` ``<pool>/<image>``,
``hosts`` and ``ports`` from ``mon dump``, ``cluster_name``,
``auth_enabled``, ``auth_username`` (read-write: ``[rbd] rbd_attach_user``,
else ``rbd_user``), ``secret_type`` ``ceph``, ``secret_uuid``
(``rbd_secret_uuid`` or the cluster's fsid), ``volume_id``, ``discard``,
and the volume manager's ``access_mode``.

A read-only attachment's connection names the volume's own cephx user,
``client.<rbd_readonly_user>-<volume id>``, made on the volume's first
read-only connection and removed after its last read-only disconnect
(the volume manager calls both with the volume's row locked, and passes
the other connected attachments to the disconnect) or with the volume.
Its key travels in the connection's ``keyring``, as Cinder's RBD driver
can send it; no keyring file is written.  Its caps (``readonly_caps``)
reach that image's objects only, with one write: its header, for the
watch librbd registers because QEMU always opens rbd images read-write
(measured on Ceph 16 with QEMU 7.2; README's Ceph RBD volumes section has
what the cluster refuses).  The write-cap on the header is the one thing
left: OSD caps have no watch-only grant.

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
                 bindings=None, attach_user=None):
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
        self.attach_user = attach_user or user
        self._lock = threading.Lock()
        self._identity_lock = threading.Lock()
        self._client = None
        if not self.attach_user or self.attach_user == "admin":
            LOG.warning("rbd backend %s: read-write attachments run as "
                        "client.%s; give them a user of their own "
                        "([rbd] rbd_attach_user, caps profile rbd)",
                        name, self.attach_user or "admin")

    # -- the cluster ----------------------------------------------------------

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

    def single_writer_features(self):
        """The features a multiattach retype drops and a retype back
        restores (journaling is never turned on by volattach)."""
        r = self.rbd
        return (r.RBD_FEATURE_EXCLUSIVE_LOCK | r.RBD_FEATURE_OBJECT_MAP
                | r.RBD_FEATURE_FAST_DIFF)

    def default_features(self):
        """The features the cluster gives a new image (its
        ``rbd_default_features``: a number or names)."""
        value = (self._cluster().conf_get("rbd_default_features")
                 or "").strip()
        if value.isdigit():
            return int(value)
        features = 0
        for feature in filter(None, (v.strip() for v in value.split(","))):
            features |= getattr(self.rbd, "RBD_FEATURE_%s" % feature.upper()
                                .replace("-", "_"), 0)
        return features

    def retype(self, volume, multiattach):
        """A volume that becomes multiattach loses the single-writer
        features; one that stops being so gets back those a new image of
        the cluster has (Cinder's RBD driver restores the ones it saved),
        its object map rebuilt."""
        name = image_name(volume)
        with self._errors("retype of image %s" % name), self._ioctx() as io:
            with self.rbd.Image(io, name) as image:
                features = image.features()
                if multiattach:
                    drop = features & self.multiattach_exclusions()
                    if drop:
                        image.update_features(drop, False)
                    return
                restore = (self.default_features()
                           & self.single_writer_features() & ~features)
                if restore:
                    image.update_features(restore, True)
                    if restore & self.rbd.RBD_FEATURE_OBJECT_MAP:
                        image.rebuild_object_map()
                LOG.info("rbd backend: image %s/%s features %#x -> %#x",
                         self.pool, name, features, image.features())

    def delete_volume(self, volume):
        """Remove the image (gone already: nothing to do).  An image still
        open somewhere (a watcher) is refused by Ceph; the error is logged
        with the image's name, the volume row is gone."""
        name = image_name(volume)
        try:
            self.remove_readonly_identity(volume)      # left by a crash
        except exception.ServiceUnavailable as e:
            LOG.error("rbd backend: %s", e)
        except (self.rados.Error, self.rbd.Error) as e:
            LOG.error("rbd backend: read-only user of volume %s left "
                      "behind: %s", volume["id"], e)
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

    def readonly_identity(self, volume):
        """The cephx user (without ``client.``) of the volume's read-only
        attachments: one per volume."""
        return "%s-%s" % (self.readonly_user, volume["id"])

    def readonly_secret_uuid(self, fsid, user):
        return str(uuid.uuid5(_RO_SECRET_NAMESPACE, "%s/%s" % (fsid, user)))

    def readonly_caps(self, name, image_id):
        """The least caps with which QEMU opens the image ``name`` (id
        ``image_id``) and reads it (measured on Ceph 16 with QEMU 7.2):
        read and class-read of its rbd_id, header, data and object map
        objects and of the pool's rbd_info (librbd reads the pool's image
        options at open), and write on its header only, for the watch
        librbd registers in a read-write open (a watch is an OSD write);
        on the monitors, the monitor and OSD maps only (no ``profile
        rbd``: its ``osd blocklist add`` would let a reader blocklist the
        writer)."""
        pool = self.pool
        grant = ("allow {0} class-read pool=%s object_prefix {1}" % pool)
        return ["mon", "allow service mon r, allow service osd r",
                "osd", ", ".join([
                    grant.format("r", "rbd_id.%s" % name),
                    grant.format("r", "rbd_info"),
                    grant.format("rw", "rbd_header.%s" % image_id),
                    grant.format("r", "rbd_data.%s." % image_id),
                    grant.format("r", "rbd_object_map.%s" % image_id)])]

    def _image_id(self, io, name):
        """The image's id; InvalidInput when the object prefixes of its
        identity's caps would also match another image's objects (an id
        that extends this one, a name that extends this one)."""
        with self.rbd.Image(io, name, read_only=True) as image:
            image_id = image.id()
        for other in self.rbd.RBD().list2(io):
            if other["name"] == name:
                continue
            if (other["id"].startswith(image_id)
                    or other["name"].startswith(name)):
                raise exception.InvalidInput(
                    reason="a read-only identity of image %s/%s would also "
                           "reach image %s: not attaching it read-only"
                    % (self.pool, name, other["name"]))
        return image_id

    def ensure_readonly_identity(self, volume):
        """The volume's read-only cephx user exists with the caps of its
        image (created on its first read-only connection, its caps
        corrected when they differ); returns (user, keyring text).  No
        keyring is written anywhere: the key travels in the connection
        (``keyring``, as Cinder's RBD driver can send it)."""
        user = self.readonly_identity(volume)
        entity = "client.%s" % user
        name = image_name(volume)
        with self._identity_lock, self._ioctx() as io:
            caps = self.readonly_caps(name, self._image_id(io, name))
            ret, out, err = self._mon_command(
                {"prefix": "auth get-or-create", "entity": entity,
                 "caps": caps})
            if ret == -errno.EINVAL:        # exists with other caps
                ret, out, err = self._mon_command(
                    {"prefix": "auth caps", "entity": entity, "caps": caps})
                if ret == 0:
                    ret, out, err = self._mon_command(
                        {"prefix": "auth get", "entity": entity})
        if ret != 0:
            raise exception.ServiceUnavailable(
                reason="cannot create the read-only cephx user %s of volume "
                       "%s: %s (the volume service's own user needs the "
                       "mon caps of README's Ceph RBD volumes section)"
                       % (entity, volume["id"], err))
        LOG.info("rbd backend: %s holds read-only access to %s/%s",
                 entity, self.pool, name)
        return user, out.decode()

    def remove_readonly_identity(self, volume):
        """Remove the volume's read-only cephx user (gone already:
        nothing to do).  The keys it gave out stop working at once."""
        entity = "client.%s" % self.readonly_identity(volume)
        with self._identity_lock:
            ret, _, err = self._mon_command({"prefix": "auth del",
                                             "entity": entity})
        if ret not in (0, -errno.ENOENT):
            raise exception.ServiceUnavailable(
                reason="cannot remove the read-only cephx user %s: %s"
                % (entity, err))
        if ret == 0:
            LOG.info("rbd backend: removed %s", entity)

    def initialize_connection(self, volume, attachment_id, connector,
                              attach_mode):
        self.check_connector(connector)
        mode = "ro" if attach_mode == "ro" else "rw"
        keyring = None
        with self._errors("connection of volume %s" % volume["id"]):
            hosts, ports = self.monitors()
            fsid = self._cluster().get_fsid()
            if mode == "ro":
                user, keyring = self.ensure_readonly_identity(volume)
                auth_enabled = True
                secret_uuid = self.readonly_secret_uuid(fsid, user)
            else:
                user = self.attach_user
                auth_enabled = bool(user)
                secret_uuid = self.secret_uuid or fsid
        info = {
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
        if keyring is not None:
            info["keyring"] = keyring
        return info

    # the volume manager passes the volume's other connected attachments
    needs_remaining = True

    def terminate_connection(self, volume, attachment, connector,
                             remaining=None):
        """QEMU closes the image on detach.  The last read-only
        attachment's disconnect removes the volume's read-only identity
        (the volume manager calls this with the volume row locked, so a
        concurrent connect of the same volume waits for it).  Without
        ``remaining`` (the legacy os-terminate_connection) the identity
        stays until the volume is deleted."""
        if remaining is None or attachment.get("attach_mode") != "ro":
            return
        if any(a.get("attach_mode") == "ro" for a in remaining):
            return
        try:
            with self._errors("removal of the read-only user of volume %s"
                              % volume["id"]):
                self.remove_readonly_identity(volume)
        except exception.ServiceUnavailable as e:
            # the detach itself is done: the user goes with the next last
            # disconnect or with the volume
            LOG.error("rbd backend: %s", e)
