"""Operations of the volume service: policy, the fake backend and the
attachment workflow, each operation one database transaction.

Handlers call these methods with a RequestContext and get plain dicts back;
errors are domain exceptions (``volattach.exception``), mapped to HTTP only
in ``volume.faults``.  Scope: a non-admin caller only sees its project's
volumes and attachments (others are "not found"); an admin sees all.

A call that fails (bad connector, refused reservation, missing volume)
changes nothing: the connector is checked before the transaction and the
connection is built inside it, so an error rolls the reservation back.

Reads of the volume and attachment views are one statement each
(``Database.read_single``); an attachment change first reads and locks the
attachment with its volume (``db.attachment_lock``), then writes only what
changes, and answers from the values it wrote (no read back).
"""
import threading

from oslo_log import log as logging

from volattach import exception
from volattach.volume import backend as backend_mod
from volattach.volume import compute_client
from volattach.volume import compute_events
from volattach.volume import legacy_attach
from volattach.volume import policy as volume_policy
from volattach.volume import states
from volattach.volume import volume_extend
from volattach.volume import volume_migration
from volattach.volume.db import api as db
from volattach.volume.db import engine as db_engine

LOG = logging.getLogger(__name__)

# Cinder's cap on sizes (its DB_MAX_INT).
DB_MAX_INT = 0x7FFFFFFF

# What GET /limits reports as the project's quotas: volattach-volume
# enforces none (-1 is Cinder's "unlimited").
UNLIMITED = -1

# The names GET /os-services shows; clients filter on Cinder's binary name.
BINARY = "cinder-volume"
TOPIC = "cinder-volume"
AVAILABILITY_ZONE = "nova"

MULTIATTACH_REMOVED = (
    "multiattach parameter has been removed. The default behavior is to use "
    "multiattach enabled volume types. Contact your administrator to create "
    "a multiattach enabled volume type and use it to create multiattach "
    "volumes.")


def _require_admin(ctx, action):
    volume_policy.authorize(ctx, action)


def _scope(ctx, all_tenants=True):
    """Project filter for queries: None (everything) for admins."""
    if ctx.is_admin and all_tenants:
        return None
    return ctx.project_id


class VolumeManager:

    def __init__(self, conf, database=None):
        self.conf = conf
        self.db = database or db_engine.Database(
            conf.volume.connection)
        self.host = conf.volume.host
        self.backends = backend_mod.load_backends(conf, self.host)
        # per-volume calls go to the backend the volume lives on
        self.backend = backend_mod.BackendRouter(self.backends)
        self._services = {}
        self._service_lock = threading.Lock()
        self.legacy = legacy_attach.LegacyAttach(self)
        compute = compute_client.ComputeClient(conf)
        self.migration = volume_migration.VolumeMigration(self, compute)
        self.extend = volume_extend.VolumeExtend(
            self, compute_events.ComputeEvents(conf, compute))

    def restore_backend(self):
        """Let a backend with exports rebuild them from the connected
        attachments (the file backend: after a restart)."""
        def connected(conn):
            rows = []
            for a in db.attachment_list(conn):
                if a["attach_status"] in states.CONNECTED:
                    vol = db.volume_get(conn, a["volume_id"])
                    rows.append(dict(a, name_id=vol.get("name_id"),
                                     host=vol.get("host")))
            return rows
        self.backend.restore(self.db.read(connected))

    def backend_host(self, name=None):
        """``<host>@<backend>`` of a backend (the default one)."""
        return "%s@%s" % (self.host, name or self.backends.default_name)

    # -- service registration -------------------------------------------------

    def register(self, name=None):
        """Create (or find) the service row of a backend (the default
        one: Cinder has one cinder-volume service per backend,
        ``host@backend``); cached per process.  Registers every enabled
        backend's row the first time."""
        with self._service_lock:
            if not self._services:
                for each in self.backends.names:
                    self._services[each] = self.db.write(
                        db.service_get_or_create, self.backend_host(each),
                        BINARY, TOPIC, AVAILABILITY_ZONE)
        return self._services[name or self.backends.default_name]

    @property
    def service_uuid(self):
        return self.register()["uuid"]

    def heartbeat(self):
        self.register()
        for service in self._services.values():
            self.db.write(db.service_heartbeat, service["id"])

    def service_list(self, ctx, host=None, binary=None):
        _require_admin(ctx, "volume_extension:services:index")
        return self.db.read(db.service_list, host=host, binary=binary)

    # -- volume types ---------------------------------------------------------

    def type_create(self, ctx, name, description=None, is_public=True,
                    extra_specs=None):
        _require_admin(ctx, "volume_extension:types_manage")
        return self.db.write(db.type_create, name, description, is_public,
                             extra_specs or {})

    def type_get(self, ctx, type_id):
        # a private type is the admins' (404 for others, as in Cinder)
        return self.db.read(db.type_get, type_id,
                            include_private=ctx.is_admin)

    def type_list(self, ctx):
        return self.db.read(db.type_list, include_private=ctx.is_admin)

    def type_update(self, ctx, type_id, name=None, description=None,
                    is_public=None):
        _require_admin(ctx, "volume_extension:types_manage")
        return self.db.write(db.type_update, type_id, name=name,
                             description=description, is_public=is_public)

    def type_delete(self, ctx, type_id):
        _require_admin(ctx, "volume_extension:types_manage")
        self.db.write(db.type_delete, type_id)

    def type_specs_set(self, ctx, type_id, specs):
        _require_admin(ctx, "volume_extension:types_extra_specs:create")
        return self.db.write(db.type_specs_set, type_id, specs)

    def type_spec_delete(self, ctx, type_id, key):
        _require_admin(ctx, "volume_extension:types_extra_specs:delete")
        self.db.write(db.type_spec_delete, type_id, key)

    # -- encryption specs of volume types (admin) -------------------------

    def type_encryption_get(self, ctx, type_id):
        """The type's encryption specs, or None."""
        _require_admin(ctx, "volume_extension:volume_type_encryption:get")
        return self.db.read(db.encryption_get, type_id)

    def type_encryption_create(self, ctx, type_id, values):
        _require_admin(ctx, "volume_extension:volume_type_encryption:create")
        return self.db.write(db.encryption_create, type_id, values)

    def type_encryption_update(self, ctx, type_id, values):
        _require_admin(ctx, "volume_extension:volume_type_encryption:update")
        return self.db.write(db.encryption_update, type_id, values)

    def type_encryption_delete(self, ctx, type_id):
        _require_admin(ctx, "volume_extension:volume_type_encryption:delete")
        self.db.write(db.encryption_delete, type_id)

    # -- volumes --------------------------------------------------------------

    def volume_create(self, ctx, size, name=None, description=None,
                      volume_type=None, availability_zone=None,
                      metadata=None, multiattach=False, image_ref=None):
        """Create a volume; returns it as accepted (status ``creating``).

        The fake backend creates synchronously: before this returns, the
        volume is ``available`` in the database (a GET right after the 202
        sees it available), while the 202 body, like Cinder's, shows the
        state in which the request was accepted.
        """
        if multiattach:
            raise exception.InvalidInput(message=MULTIATTACH_REMOVED)
        if image_ref:
            # no image service: a configured image id, and no data copied
            # (the backend kind is checked again once the type chose one)
            if self.conf.volume.backend != "fake" and not (
                    self.conf.volume.enabled_backends):
                raise exception.InvalidInput(
                    reason="Creating a volume from an image is not supported "
                           "by the %s backend." % self.conf.volume.backend)
            if image_ref not in self.conf.volume.images:
                raise exception.InvalidInput(
                    message="Invalid image identifier or unable to access "
                            "requested image.")
        if availability_zone not in (None, AVAILABILITY_ZONE):
            raise exception.InvalidInput(
                reason="Availability zone '%s' is invalid." %
                availability_zone)

        def create(conn):
            vtype = db.type_get(conn, volume_type or db.DEFAULT_TYPE_NAME,
                                include_private=ctx.is_admin)
            if db.encryption_get(conn, vtype["id"]) is not None:
                # Cinder needs a key manager for these; there is none here,
                # and a volume that says it is not encrypted would mislead
                raise exception.InvalidInput(
                    reason="Volume type %s has encryption specs: encrypted "
                           "volumes need a key manager, which this volume "
                           "service does not have." % vtype["id"])
            try:
                chosen = self.backends.name_for_type(vtype["extra_specs"])
            except backend_mod.NoValidBackend as e:
                # Cinder's scheduler: the volume is made, then errors
                LOG.warning("Volume of type %s: %s", vtype["id"], e)
                chosen = None
            if (image_ref and chosen is not None
                    and self.backends.kinds[chosen] != "fake"):
                raise exception.InvalidInput(
                    reason="Creating a volume from an image is not supported "
                           "by the %s backend." % self.backends.kinds[chosen])
            backend = self.backends.by_name.get(chosen)
            return chosen, db.volume_create(conn, {
                "project_id": ctx.project_id, "user_id": ctx.user_id,
                "name": name, "description": description, "size": size,
                "status": states.CREATING,
                "availability_zone": AVAILABILITY_ZONE,
                "volume_type_id": vtype["id"],
                "multiattach": states.is_multiattach_spec(
                    vtype["extra_specs"].get("multiattach")),
                "readonly": False,
                "shared_targets": bool(backend and backend.shared_targets),
                "bootable": bool(image_ref), "image_id": image_ref or None,
                "metadata": metadata or {},
            })

        chosen, accepted = self.db.write(create)
        if chosen is None:
            # no valid backend: error, no host, no service (as Cinder)
            values = {"status": states.ERROR}
        else:
            service_uuid = self.register(chosen)["uuid"]
            try:
                host = self.backends.by_name[chosen].create_volume(accepted)
                values = {"status": states.AVAILABLE, "host": host,
                          "service_uuid": service_uuid}
            except Exception:
                LOG.exception("Backend failed to create volume %s",
                              accepted["id"])
                values = {"status": states.ERROR,
                          "service_uuid": service_uuid}
        self.db.write(db.volume_update, accepted["id"], values,
                      expected_statuses=[states.CREATING])
        accepted["attachments"] = []
        return accepted

    def volume_get(self, ctx, volume_id):
        """The volume with its attached attachments."""
        return self.db.read_single(db.volume_get_with_attachments,
                                   volume_id, _scope(ctx))

    def volume_list(self, ctx, all_tenants=False, filters=None):
        """Volumes, newest first; ``filters``: {column: wanted value}
        (``metadata``: the keys and values it must have)."""
        vols = self.db.read_single(db.volume_list, _scope(ctx, all_tenants))
        filters = dict(filters or {})
        metadata = filters.pop("metadata", None) or {}
        return [v for v in vols
                if all(str(v.get(k)) == str(want)
                       for k, want in filters.items())
                and all(v["metadata"].get(k) == want
                        for k, want in metadata.items())]

    def volume_summary(self, ctx, all_tenants=False):
        return self.db.read(db.volume_summary, _scope(ctx, all_tenants))

    def limits(self, ctx):
        count, total, _ = self.db.read(db.volume_summary, ctx.project_id)
        return {"maxTotalVolumes": UNLIMITED,
                "maxTotalSnapshots": UNLIMITED,
                "maxTotalVolumeGigabytes": UNLIMITED,
                "maxTotalBackups": UNLIMITED,
                "maxTotalBackupGigabytes": UNLIMITED,
                "totalVolumesUsed": count, "totalGigabytesUsed": total,
                "totalSnapshotsUsed": 0, "totalBackupsUsed": 0,
                "totalBackupGigabytesUsed": 0}

    def volume_update(self, ctx, volume_id, values):
        """Name, description and (replaced) metadata of the volume."""
        def update(conn):
            vol = db.volume_get(conn, volume_id, _scope(ctx))
            if vol["status"] == "maintenance":
                raise exception.InvalidVolume(
                    reason="Volume status must not be maintenance.")
            db.volume_update(conn, volume_id, values)
        self.db.write(update)
        return self.volume_get(ctx, volume_id)

    def volume_extend(self, ctx, volume_id, new_size,
                      attached_allowed=False):
        """os-extend (``volume_extend``); the thread posting the
        volume-extended events, or None."""
        return self.extend.extend(ctx, volume_id, new_size,
                                  attached_allowed=attached_allowed)

    def volume_reimage(self, ctx, volume_id, image_id, reimage_reserved=False):
        """os-reimage (3.68): the volume's data becomes the image's.  The
        volume is available or errored, or reserved with
        ``reimage_reserved`` (a server's root volume between its old and
        its new attachment: Nova's rebuild from 2.93), and attached to no
        more than one server (409).  As for a volume made from an image,
        only the fake backend can, and no data is copied: the volume
        records the image (``volume_image_metadata``) and is bootable.
        Returns the servers its attachments name when it was reserved (to
        be told ``volume-reimaged``: ``volume.reimaged_event``)."""
        if self.conf.volume.backend != "fake" or (
                self.conf.volume.enabled_backends):
            raise exception.InvalidInput(
                reason="Re-imaging a volume is not supported by the %s "
                       "backend." % self.conf.volume.backend)
        if image_id not in self.conf.volume.images:
            raise exception.InvalidInput(
                message="Invalid image identifier or unable to access "
                        "requested image.")
        expected = [states.AVAILABLE, states.ERROR]
        if reimage_reserved:
            expected.append(states.RESERVED)

        def reimage(conn):
            vol = db.volume_get(conn, volume_id, _scope(ctx),
                                for_update=True)
            if len(db.attachment_list(conn, volume_id=volume_id)) > 1:
                raise exception.Conflict(
                    message="Cannot re-image a volume which is attached to "
                            "more than one server.")
            if not db.volume_update(conn, volume_id,
                                    {"image_id": image_id, "bootable": True},
                                    expected):
                raise exception.InvalidVolume(
                    reason="Volume %s status must be %s, but current status "
                           "is %s." % (volume_id, " or ".join(expected),
                                       vol["status"]))
            if vol["status"] != states.RESERVED:
                return []
            return [a["instance_uuid"] for a in
                    db.attachment_list(conn, volume_id=volume_id)
                    if a.get("instance_uuid")]
        return self.db.write(reimage)

    def volume_set_bootable(self, ctx, volume_id, bootable):
        def update(conn):
            db.volume_get(conn, volume_id, _scope(ctx))
            db.volume_update(conn, volume_id, {"bootable": bootable})
        self.db.write(update)

    def volume_delete(self, ctx, volume_id):
        def delete(conn):
            vol = db.volume_get(conn, volume_id, _scope(ctx))  # 404 if missing
            if db.volume_delete(conn, volume_id, _scope(ctx)):
                return vol
            raise exception.InvalidVolume(reason=states.DELETE_REFUSED)
        self.backend.delete_volume(self.db.write(delete))

    def volume_set_readonly(self, ctx, volume_id, readonly):
        def update(conn):
            if db.volume_update(conn, volume_id,
                                {"readonly": readonly, "readonly_set": True},
                                [states.AVAILABLE], _scope(ctx)):
                return
            vol = db.volume_get(conn, volume_id, _scope(ctx))
            raise exception.InvalidVolume(
                reason="Volume %s status must be available to update "
                       "readonly flag, but current status is: %s."
                       % (volume_id, vol["status"]))
        self.db.write(update)

    def volume_begin_detaching(self, ctx, volume_id):
        def begin(conn):
            if db.volume_update(conn, volume_id,
                                {"status": states.DETACHING},
                                [states.IN_USE], _scope(ctx)):
                return
            db.volume_get(conn, volume_id, _scope(ctx))
            raise exception.InvalidVolume(
                reason="Unable to detach volume. Volume status must be "
                       "'in-use' and attach_status must be 'attached' to "
                       "detach.")
        self.db.write(begin)

    def volume_roll_detaching(self, ctx, volume_id):
        """detaching -> in-use; a no-op in any other status (as Cinder)."""
        def roll(conn):
            if not db.volume_update(conn, volume_id,
                                    {"status": states.IN_USE},
                                    [states.DETACHING], _scope(ctx)):
                db.volume_get(conn, volume_id, _scope(ctx))
        self.db.write(roll)

    def volume_reset_status(self, ctx, volume_id, status=None,
                            migration_status=None):
        _require_admin(ctx, "volume_extension:volume_admin_actions:"
                            "reset_status")
        values = {}
        if status is not None:
            values["status"] = status
        if migration_status is not None:
            values["migration_status"] = (None if migration_status == "none"
                                          else migration_status)

        def reset(conn):
            db.volume_get(conn, volume_id)
            if values:
                db.volume_update(conn, volume_id, values)
        self.db.write(reset)

    # -- attachments ----------------------------------------------------------

    def _connect(self, conn, volume, attachment, connector):
        """Build the connection inside the caller's transaction; returns
        the connected attachment."""
        mode = states.attach_mode_for(volume["readonly"],
                                      attachment["attach_mode"],
                                      connector.get("mode"))
        info = self.backend.initialize_connection(
            volume, attachment["id"], connector, mode)
        # Only a connect stores a connector, and it moves the attachment
        # out of reserved for good: a reserved one has none yet.
        db.attachment_specs_set(
            conn, attachment["id"], connector,
            known_empty=attachment["attach_status"] == states.ATT_RESERVED)
        mountpoint = connector.get("mountpoint")
        # a key in the connection (rbd's read-only users) goes to the
        # caller only, never into the database
        keyring = info.pop("keyring", None)
        written = db.attachment_update(conn, attachment["id"], {
            "attach_status": (states.ATT_ATTACHED
                              if attachment["attach_status"]
                              == states.ATT_ATTACHED
                              else states.ATT_ATTACHING),
            "attach_mode": mode,
            "attached_host": connector["host"],
            "mountpoint": str(mountpoint) if mountpoint else None,
            "connection_info": info,
            "attach_time": db.utcnow(),
        })
        if keyring is not None:
            written["connection_info"] = dict(written["connection_info"],
                                              keyring=keyring)
        return dict(attachment, **written)

    def attachment_create(self, ctx, volume_id, instance_uuid=None,
                          connector=None, mode=None):
        """Reserve the volume (and connect it when a connector is given)."""
        if connector:
            self.backend.check_connector(connector)
        scope = _scope(ctx)

        def create(conn):
            volume = db.volume_reserve(conn, volume_id, scope)
            reserved = volume is not None
            if not reserved:
                volume = db.volume_get(conn, volume_id, scope,
                                       for_update=True)
                if not (instance_uuid
                        and volume["status"]
                        in states.SAME_INSTANCE_RESERVABLE
                        and db.attachment_exists(conn, volume_id,
                                                 instance_uuid)):
                    if db.legacy_pending(conn, volume_id):
                        raise exception.InvalidVolume(
                            reason="Volume %s is reserved by os-reserve: "
                                   "os-attach or os-unreserve it first."
                                   % volume_id)
                    raise exception.InvalidVolume(
                        reason=states.reserve_refused(
                            volume_id, volume["status"],
                            volume["multiattach"]))
            attachment = db.attachment_create(conn, {
                "volume_id": volume_id, "project_id": volume["project_id"],
                "instance_uuid": instance_uuid,
                "attach_status": states.ATT_RESERVED, "attach_mode": mode,
            })
            if connector:
                attachment = self._connect(conn, volume, attachment,
                                           connector)
            # Cinder: a reservation moves an available (or in-use
            # multiattach) volume to reserved; one made beside attachments
            # still reserved or attaching leaves the status to them.
            if connector:
                db.volume_set_attach_status(conn, volume_id,
                                            states.ATTACHING)
            elif reserved and volume["status"] in states.RESERVE_TRANSITIONS:
                db.volume_set_attach_status(conn, volume_id, states.RESERVED)
            else:
                db.volume_sync_status(conn, volume_id)
            return attachment

        return self.db.write(create)

    def attachment_update(self, ctx, attachment_id, connector):
        """Connect a reserved attachment to the host of ``connector``."""
        try:
            self.backend.check_connector(connector)
        except exception.Invalid:
            self.attachment_get(ctx, attachment_id)   # unknown: 404 first
            raise

        def update(conn):
            attachment, volume = db.attachment_lock(conn, attachment_id,
                                                    _scope(ctx))
            if attachment["attach_status"] not in states.CONNECTABLE:
                raise exception.InvalidVolume(
                    reason="Attachment %s is %s and cannot be updated."
                    % (attachment_id, attachment["attach_status"]))
            connected = self._connect(conn, volume, attachment, connector)
            # An attached attachment stays attached (the volume is in-use
            # because of it); any other is now attaching.
            db.volume_set_attach_status(conn, volume["id"], (
                states.IN_USE
                if attachment["attach_status"] == states.ATT_ATTACHED
                else states.ATTACHING))
            # unlike real Cinder, answer with the connected attachment and
            # its shared connections: no GET needed after the PUT
            connected["shared_connections_by_attachment"] = (
                db.attachment_shared_with(conn, connected, volume))
            return connected

        return self.db.write(update)

    def attachment_complete(self, ctx, attachment_id):
        """Mark the attachment attached (the volume becomes in-use)."""
        def complete(conn):
            attachment, volume = db.attachment_lock(conn, attachment_id,
                                                    _scope(ctx))
            if attachment["attach_status"] not in states.COMPLETABLE:
                raise exception.InvalidVolume(
                    reason="Attachment %s is %s and cannot be completed."
                    % (attachment_id, attachment["attach_status"]))
            db.attachment_update(conn, attachment_id, {
                "attach_status": states.ATT_ATTACHED,
                "attach_time": attachment["attach_time"] or db.utcnow(),
            })
            # One attached attachment makes the volume in-use, whatever
            # the others are (states.status_from_attachments).
            db.volume_set_attach_status(conn, volume["id"], states.IN_USE)

        self.db.write(complete)

    def attachment_delete(self, ctx, attachment_id):
        """Delete the attachment; returns the volume's remaining ones."""
        def delete(conn):
            attachment, volume = db.attachment_lock(conn, attachment_id,
                                                    _scope(ctx))
            if attachment["attach_status"] in states.CONNECTED:
                connector = db.attachment_specs_get(conn, attachment_id)
                extra = {}
                if getattr(self.backend, "needs_remaining", False):
                    extra["remaining"] = [
                        a for a in db.attachment_list(
                            conn, volume_id=volume["id"])
                        if a["id"] != attachment_id
                        and a["attach_status"] in states.CONNECTED]
                self.backend.terminate_connection(volume, attachment,
                                                  connector, **extra)
            db.attachment_delete(conn, attachment_id)
            remaining = db.attachment_list(conn, volume_id=volume["id"])
            db.volume_set_attach_status(
                conn, volume["id"], states.status_from_attachments(
                    a["attach_status"] for a in remaining))
            return remaining

        return self.db.write(delete)

    def attachment_get(self, ctx, attachment_id):
        """The attachment, with ``shared_connections_by_attachment``."""
        return self.db.read_single(db.attachment_get_with_shared,
                                   attachment_id, _scope(ctx))

    def attachment_list(self, ctx, volume_id=None, instance_id=None,
                        detail=False, all_tenants=False):
        """Attachments (``detail``: each with
        ``shared_connections_by_attachment``)."""
        return self.db.read_single(
            db.attachment_list, _scope(ctx, all_tenants),
            volume_id=volume_id, instance_id=instance_id, with_shared=detail)

    def attachment_connector(self, ctx, attachment_id):
        """The stored connector of an attachment (from attachment_specs)."""
        def get(conn):
            db.attachment_get(conn, attachment_id, _scope(ctx))
            return db.attachment_specs_get(conn, attachment_id)
        return self.db.read(get)

    # -- backend routing of retypes -------------------------------------------

    def host_for_retype(self, volume, vtype, policy="never"):
        """The host of a retyped volume: its own when the new type stays
        on its backend, else ``host@backend#backend`` of the backend the
        type chooses.  InvalidInput (Cinder's retype that fails) when no
        enabled backend matches, when moving needs ``migration_policy:
        on-demand``, or when an available volume has data to move (only
        an attached one moves, by the compute's block copy)."""
        try:
            name = self.backends.name_for_type(vtype["extra_specs"])
        except backend_mod.NoValidBackend as e:
            raise exception.InvalidInput(reason=str(e))
        source = self.backends.name_of_volume(volume)
        if name == source:
            return volume["host"]
        if policy != "on-demand":
            raise exception.InvalidInput(
                reason="Retype of volume %s to backend %s needs a "
                       "migration, and the migration policy is '%s'."
                       % (volume["id"], name, policy))
        if (volume["status"] != states.IN_USE
                and self.backends.kinds[source] != "fake"):
            raise exception.InvalidInput(
                reason="Retype of available volume %s from backend %s to "
                       "%s: moving detached data between backends is not "
                       "supported; attach it (the compute copies it) or "
                       "migrate it." % (volume["id"], source, name))
        return "%s#%s" % (self.backend_host(name), name)
