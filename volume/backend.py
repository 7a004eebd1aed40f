"""The fake iSCSI-like storage backend of the volume service.

It "creates" volumes synchronously and builds connection_info for a
connector without any real storage.  Like Cinder's iSCSI drivers it needs
the connector's ``initiator``, and it also needs ``host`` (the compute host
the connection is made from): a connector without either is a clear 400
(``InvalidInput``), never a 500.

Targets: with ``[volume] shared_targets = True`` every volume attached to one
host is exported through ONE target for that host (one iSCSI session per
host, one LUN per volume), identified by a stable ``shared_target_id``;
disconnecting the host's session then affects every attachment of that host,
which is what ``shared_connections_by_attachment`` reports.  With False each
attachment gets its own target and ``shared_target_id`` is null.

connection_info is flat (driver data merged with ``driver_volume_type``, as
Cinder's attachment API returns it).  ``access_mode`` follows the
attachment's ``attach_mode`` (``ro`` for a read-only attach or a read-only
volume), so a read-only attach is read-only on the host too.
"""
import logging
import uuid

from oslo_config import cfg

from volattach import exception

LOG = logging.getLogger(__name__)

DRIVER_VOLUME_TYPE = "iscsi"
TARGET_PORTAL_PORT = 3260
IQN_PREFIX = "iqn.2010-10.org.volattach"
_TARGET_NAMESPACE = uuid.UUID("6c1d9b0e-8f1a-4f43-9a77-5b7a6c0ffee1")


def check_connector_keys(connector, keys=("host",)):
    """``connector`` if it is an object with a non-blank string at each of
    ``keys``, else InvalidInput (Cinder's message), for every backend."""
    if not isinstance(connector, dict):
        raise exception.InvalidInput(reason="Connector must be an object.")
    for key in keys:
        value = connector.get(key)
        if not isinstance(value, str) or not value.strip():
            raise exception.InvalidInput(
                reason="Connector doesn't have required information: "
                       "%s" % key)
    return connector


class FakeISCSIBackend:

    def __init__(self, name, service_host, portal_address, shared_targets):
        self.name = name
        self.service_host = service_host
        self.portal = "%s:%d" % (portal_address, TARGET_PORTAL_PORT)
        self.shared_targets = bool(shared_targets)

    def create_volume(self, volume):
        """Allocate the volume (nothing to do) and return its host
        string in Cinder's ``host@backend#pool`` form."""
        return "%s@%s#%s" % (self.service_host, self.name, self.name)

    def delete_volume(self, volume):
        pass

    # no storage: an extend only records the size (attached or not)
    online_extend = True

    def extend_volume(self, volume, new_size, attached=False):
        """Nothing to grow: the fake backend has no storage; the volume
        row's size is all there is."""

    @staticmethod
    def check_connector(connector):
        """The connector if it can be used, else InvalidInput."""
        return check_connector_keys(connector, ("initiator", "host"))

    def shared_target_id(self, service_uuid, connector_host):
        return str(uuid.uuid5(_TARGET_NAMESPACE,
                              "%s:%s" % (service_uuid, connector_host)))

    def initialize_connection(self, volume, attachment_id, connector,
                              attach_mode):
        """connection_info of ``attachment_id`` for ``connector``."""
        self.check_connector(connector)
        if volume["shared_targets"]:
            target_id = self.shared_target_id(volume["service_uuid"],
                                              connector["host"])
            iqn = "%s:%s:host-%s" % (IQN_PREFIX, self.name, target_id)
            # One LUN per volume behind the host's shared target.
            lun = uuid.UUID(volume["id"]).int % 16383 + 1
        else:
            target_id = None
            iqn = "%s:%s:volume-%s:%s" % (IQN_PREFIX, self.name,
                                          volume["id"], attachment_id)
            lun = 0
        return {
            "access_mode": "ro" if attach_mode == "ro" else "rw",
            "qos_specs": None,
            "encrypted": False,
            "cacheable": False,
            "driver_volume_type": DRIVER_VOLUME_TYPE,
            "attachment_id": attachment_id,
            "enforce_multipath": bool(connector.get("enforce_multipath",
                                                    False)),
            "target_discovered": False,
            "target_portal": self.portal,
            "target_iqn": iqn,
            "target_lun": lun,
            "volume_id": volume["id"],
            "shared_target_id": target_id,
        }

    def terminate_connection(self, volume, attachment, connector):
        """Nothing to tear down in the fake backend."""


def advertised_host(conf, listen):
    """The address computes reach ``listen`` at: ``[DEFAULT] my_ip`` for
    a wildcard address (0.0.0.0, ::), else ``listen`` itself."""
    from volattach.volume.backends import file as file_backend
    return conf.my_ip if file_backend.is_wildcard(listen) else listen


def load_backend(conf, service_host):
    """The backend ``[volume] backend`` names."""
    if conf.volume.backend == "rbd":
        from volattach.volume.backends import rbd as rbd_backend
        return rbd_backend.RBDBackend(
            name=conf.volume.backend_name, service_host=service_host,
            pool=conf.rbd.rbd_pool, ceph_conf=conf.rbd.rbd_ceph_conf,
            cluster_name=conf.rbd.rbd_cluster_name, user=conf.rbd.rbd_user,
            secret_uuid=conf.rbd.rbd_secret_uuid,
            readonly_user=conf.rbd.rbd_readonly_user,
            attach_user=conf.rbd.rbd_attach_user,
            connect_timeout=conf.rbd.rados_connect_timeout)
    if conf.volume.backend == "iscsi":
        from volattach.volume.backends import tgt
        return tgt.ISCSIBackend(
            name=conf.volume.backend_name, service_host=service_host,
            volumes_dir=conf.volume.volumes_dir,
            portal_host=conf.iscsi.target_ip_address,
            portal_port=conf.iscsi.target_port,
            target_prefix=conf.iscsi.target_prefix)
    if conf.volume.backend == "file":
        from volattach.volume.backends import file as file_backend
        return file_backend.FileBackend(
            name=conf.volume.backend_name, service_host=service_host,
            volumes_dir=conf.volume.volumes_dir,
            export_host=conf.volume.export_host,
            export_port=conf.volume.export_port,
            tls_dir=conf.volume.nbd_tls_dir if conf.volume.nbd_tls else None,
            tls_allowed_clients=conf.volume.nbd_tls_allowed_clients,
            connect_host=advertised_host(conf, conf.volume.export_host))
    return FakeISCSIBackend(
        name=conf.volume.backend_name, service_host=service_host,
        portal_address=advertised_host(conf, conf.volume.listen),
        shared_targets=conf.volume.shared_targets)


# -- several backends in one service (Cinder's enabled_backends) -------------

# [volume] options a file backend's section may set (as in [volume]).
FILE_SECTION_OPTS = ("volumes_dir", "export_host", "export_port", "nbd_tls",
                     "nbd_tls_dir", "nbd_tls_allowed_clients",
                     "allow_insecure_nbd")
FAKE_SECTION_OPTS = ("shared_targets",)


class BackendConfigError(exception.VolattachException):
    """``[volume] enabled_backends`` names a backend that cannot be made;
    the message names the section."""
    msg_fmt = "%(reason)s"


class NoValidBackend(exception.VolattachException):
    """No enabled backend matches a volume type (Cinder's scheduler:
    "No valid backend was found")."""
    msg_fmt = "No valid backend was found. %(reason)s"


def backend_section_opts(conf):
    """The options a backend's own section may hold: the section keys of
    ``volattach.conf`` plus the driver options of each kind."""
    from volattach import conf as conf_mod
    by_name = {o.name: o for o in conf_mod.volume_opts}
    return (list(conf_mod.backend_section_opts)
            + [by_name[n] for n in FILE_SECTION_OPTS + FAKE_SECTION_OPTS]
            + list(conf_mod.rbd_opts) + list(conf_mod.iscsi_opts))


def _make(kind, section, name, service_host, conf):
    """One backend of ``kind`` from the options of ``section``."""
    sconf = conf[section]
    if kind == "rbd":
        from volattach.volume.backends import rbd as rbd_backend
        return rbd_backend.RBDBackend(
            name=name, service_host=service_host, pool=sconf.rbd_pool,
            ceph_conf=sconf.rbd_ceph_conf,
            cluster_name=sconf.rbd_cluster_name, user=sconf.rbd_user,
            secret_uuid=sconf.rbd_secret_uuid,
            readonly_user=sconf.rbd_readonly_user,
            attach_user=sconf.rbd_attach_user,
            connect_timeout=sconf.rados_connect_timeout)
    if kind == "iscsi":
        from volattach.volume.backends import tgt
        return tgt.ISCSIBackend(
            name=name, service_host=service_host,
            volumes_dir=sconf.volumes_dir,
            portal_host=sconf.target_ip_address,
            portal_port=sconf.target_port, target_prefix=sconf.target_prefix)
    if kind == "file":
        from volattach.volume.backends import file as file_backend
        from volattach.wsgi import insecure
        if not (sconf.nbd_tls or sconf.allow_insecure_nbd
                or insecure.is_loopback(sconf.export_host)):
            raise file_backend.InsecureNBD(
                "volattach-volume refuses to export the volumes of [%s] "
                "over NBD on %s, which is not a loopback address, without "
                "TLS: set nbd_tls or allow_insecure_nbd in [%s]."
                % (section, sconf.export_host, section))
        return file_backend.FileBackend(
            name=name, service_host=service_host,
            volumes_dir=sconf.volumes_dir, export_host=sconf.export_host,
            export_port=sconf.export_port,
            tls_dir=sconf.nbd_tls_dir if sconf.nbd_tls else None,
            tls_allowed_clients=sconf.nbd_tls_allowed_clients,
            connect_host=advertised_host(conf, sconf.export_host))
    return FakeISCSIBackend(
        name=name, service_host=service_host,
        portal_address=advertised_host(conf, conf.volume.listen),
        shared_targets=sconf.shared_targets)


def load_backends(conf, service_host):
    """``Backends`` of the service: those of ``[volume] enabled_backends``
    (each from its own section), or the one ``[volume] backend`` names."""
    names = conf.volume.enabled_backends
    if not names:
        single = load_backend(conf, service_host)
        return Backends([(conf.volume.backend_name, conf.volume.backend,
                          single)])
    if len(set(names)) != len(names):
        raise BackendConfigError(
            reason="[volume] enabled_backends names a backend twice: %s"
            % ", ".join(names))
    sections = set(conf.list_all_sections())
    entries = []
    seen = {}
    for section in names:
        if section not in sections:
            raise BackendConfigError(
                reason="[volume] enabled_backends names %r, but the "
                       "configuration has no [%s] section" % (section,
                                                              section))
        conf.register_opts(backend_section_opts(conf), group=section)
        try:
            kind = conf[section].volume_backend
        except cfg.ConfigFileValueError as e:
            raise BackendConfigError(
                reason="[%s] volume_backend: %s" % (section, e))
        if kind is None:
            raise BackendConfigError(
                reason="[%s] has no volume_backend (fake, file, rbd or iscsi)"
                % section)
        name = conf[section].volume_backend_name or section
        if name in seen:
            raise BackendConfigError(
                reason="[%s] and [%s] have the same volume_backend_name %r"
                       % (seen[name], section, name))
        seen[name] = section
        entries.append((name, kind, _make(kind, section, name,
                                          service_host, conf)))
    return Backends(entries)


def backend_name_of_host(host):
    """``backend`` of Cinder's ``host@backend#pool`` (None without @)."""
    if not host or "@" not in host:
        return None
    return host.split("@", 1)[1].split("#", 1)[0]


class Backends:
    """The enabled backends of one volume service, by volume_backend_name;
    the first is the default one (a type naming none)."""

    def __init__(self, entries):
        self.names = [name for name, _, _ in entries]
        self.kinds = {name: kind for name, kind, _ in entries}
        self.by_name = {name: b for name, _, b in entries}
        self.default_name = self.names[0]

    def __iter__(self):
        return iter(self.by_name.items())

    def name_for_type(self, extra_specs):
        """The backend a type's ``volume_backend_name`` spec chooses (the
        default one without it); NoValidBackend when none is enabled."""
        wanted = (extra_specs or {}).get("volume_backend_name")
        if wanted is None:
            return self.default_name
        if wanted not in self.by_name:
            raise NoValidBackend(
                reason="No enabled backend has volume_backend_name %r "
                       "(enabled: %s)." % (wanted, ", ".join(self.names)))
        return wanted

    def name_of_volume(self, volume):
        """The backend a volume lives on, from its host (the default one
        for a volume that names none, or one no longer enabled: the
        single-backend service's volumes of another backend_name)."""
        name = backend_name_of_host(volume.get("host"))
        return name if name in self.by_name else self.default_name

    def of_volume(self, volume):
        return self.by_name[self.name_of_volume(volume)]


class BackendRouter:
    """``manager.backend``: each per-volume call goes to the backend the
    volume lives on (its ``host``); connector checks are each backend's
    own, made again when the connection is built.  Each per-volume call
    is logged at DEBUG (``backend <name> <call> <volume id>``)."""

    def __init__(self, backends):
        self.backends = backends

    def _of(self, volume, call):
        name = self.backends.name_of_volume(volume)
        if LOG.isEnabledFor(logging.DEBUG):
            LOG.debug("backend %s %s %s", name, call, volume.get("id"))
        return self.backends.by_name[name]

    @property
    def default(self):
        return self.backends.by_name[self.backends.default_name]

    @property
    def needs_remaining(self):
        return any(getattr(b, "needs_remaining", False)
                   for _, b in self.backends)

    def create_volume(self, volume):
        return self._of(volume, "create_volume").create_volume(volume)

    def delete_volume(self, volume):
        return self._of(volume, "delete_volume").delete_volume(volume)

    def extend_volume(self, volume, new_size, attached=False):
        return self.backends.of_volume(volume).extend_volume(
            volume, new_size, attached=attached)

    def online_extend_refused(self, volume):
        """Why the volume's backend cannot grow it while it is attached
        (None when it can)."""
        backend = self.backends.of_volume(volume)
        if getattr(backend, "online_extend", False):
            return None
        return getattr(backend, "ONLINE_EXTEND_REFUSED",
                       "its backend cannot extend an attached volume")

    def retype(self, volume, multiattach):
        """The backend updates what the volume's type decides on its
        storage (rbd: the image features of multiattach); the others have
        nothing to do."""
        retype = getattr(self.backends.of_volume(volume), "retype", None)
        if retype is not None:
            retype(volume, multiattach)

    def check_connector(self, connector):
        if len(self.backends.by_name) == 1:
            return self.default.check_connector(connector)
        # the least every backend needs; the volume's backend checks the
        # rest in initialize_connection (inside the transaction)
        return check_connector_keys(connector)

    def initialize_connection(self, volume, attachment_id, connector,
                              attach_mode):
        backend = self._of(volume, "initialize_connection")
        backend.check_connector(connector)
        return backend.initialize_connection(volume, attachment_id,
                                             connector, attach_mode)

    def terminate_connection(self, volume, attachment, connector, **extra):
        backend = self._of(volume, "terminate_connection")
        if not getattr(backend, "needs_remaining", False):
            extra.pop("remaining", None)
        return backend.terminate_connection(volume, attachment, connector,
                                            **extra)

    def restore(self, attachments):
        """Each backend with exports rebuilds its own attachments'."""
        for name, backend in self.backends:
            restore = getattr(backend, "restore", None)
            if restore is not None:
                restore([a for a in attachments
                         if self.backends.name_of_volume(a) == name])
