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
import uuid

from volattach import exception

DRIVER_VOLUME_TYPE = "iscsi"
TARGET_PORTAL_PORT = 3260
IQN_PREFIX = "iqn.2010-10.org.volattach"
_TARGET_NAMESPACE = uuid.UUID("6c1d9b0e-8f1a-4f43-9a77-5b7a6c0ffee1")


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

    @staticmethod
    def check_connector(connector):
        """The connector if it can be used, else InvalidInput."""
        if not isinstance(connector, dict):
            raise exception.InvalidInput(
                reason="Connector must be an object.")
        for key in ("initiator", "host"):
            value = connector.get(key)
            if not isinstance(value, str) or not value.strip():
                raise exception.InvalidInput(
                    reason="Connector doesn't have required information: "
                           "%s" % key)
        return connector

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
            connect_timeout=conf.rbd.rados_connect_timeout)
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
