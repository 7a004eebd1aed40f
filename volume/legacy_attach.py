"""Cinder's attach actions from before 3.27, on the same tables as the
attachments API.

``os-reserve`` moves an available volume (an in-use one if multiattach) to
``attaching`` and records a *legacy* attachment, ``attaching``, without a
server; ``os-attach`` completes that reservation (or attaches directly, as
Cinder allows) with the server or host, mountpoint and mode; ``os-detach``
removes one attached attachment; ``os-unreserve`` drops the pending
reservations.  ``os-initialize_connection`` and ``os-terminate_connection``
only build and tear down the backend connection for the given connector.

Both APIs see each other's attachments: the volume's status is derived from
all of them, and a volume reserved one way cannot be reserved the other way
(``db.volume_reserve`` refuses while an os-reserve is pending; os-reserve
needs an available or in-use volume, which a pending new-API reservation is
not).
"""
import uuid

from volattach import exception
from volattach.volume import states
from volattach.volume.db import api as db


def _scope(ctx):
    return None if ctx.is_admin else ctx.project_id


class LegacyAttach:
    """The old attach actions; ``manager`` gives the database and backend."""

    def __init__(self, manager):
        self.db = manager.db
        self.backend = manager.backend

    def reserve(self, ctx, volume_id):
        def reserve(conn):
            if not db.legacy_reserve(conn, volume_id, _scope(ctx)):
                vol = db.volume_get(conn, volume_id, _scope(ctx))
                raise exception.InvalidVolume(
                    reason="Volume status must be %s to reserve, but the "
                           "status is %s." % (
                               "available or in-use" if vol["multiattach"]
                               else "available", vol["status"]))
            vol = db.volume_get(conn, volume_id)
            db.attachment_create(conn, {
                "volume_id": volume_id, "project_id": vol["project_id"],
                "attach_status": states.ATT_ATTACHING, "legacy": True})
        self.db.write(reserve)

    def unreserve(self, ctx, volume_id):
        """Drop the pending os-reserve reservations; nothing to do when the
        volume is not attaching (as Cinder)."""
        def unreserve(conn):
            vol = db.volume_get(conn, volume_id, _scope(ctx),
                                for_update=True)
            if vol["status"] != states.ATTACHING:
                return
            for att in db.legacy_pending(conn, volume_id):
                db.attachment_delete(conn, att["id"])
            db.volume_sync_status(conn, volume_id)
        self.db.write(unreserve)

    def initialize_connection(self, ctx, volume_id, connector):
        """The connection info for ``connector`` (no state changes):
        ``{"driver_volume_type": ..., "data": {...}}``."""
        self.backend.check_connector(connector)

        def connect(conn):
            vol = db.volume_get(conn, volume_id, _scope(ctx))
            pending = db.legacy_pending(conn, volume_id)
            attachment_id = pending[0]["id"] if pending else str(uuid.uuid4())
            mode = states.attach_mode_for(vol["readonly"], None,
                                          connector.get("mode"))
            data = self.backend.initialize_connection(
                vol, attachment_id, connector, mode)
            # the old API's shape: the driver type beside its data
            return {"driver_volume_type": data.pop("driver_volume_type"),
                    "data": data}
        return self.db.read(connect)

    def terminate_connection(self, ctx, volume_id, connector):
        self.backend.check_connector(connector)

        def terminate(conn):
            vol = db.volume_get(conn, volume_id, _scope(ctx))
            self.backend.terminate_connection(
                vol, {"id": None, "attached_host": connector.get("host")},
                connector)
        self.db.read(terminate)

    def attach(self, ctx, volume_id, instance_uuid=None, host_name=None,
               mountpoint=None, mode="rw"):
        """Mark the volume attached to the server (or host)."""
        def attach(conn):
            vol = db.volume_get(conn, volume_id, _scope(ctx),
                                for_update=True)
            if vol["readonly"] and mode != "ro":
                raise exception.InvalidVolume(
                    message="Invalid attaching mode '%s' for volume %s."
                    % (mode, volume_id))
            values = {"attach_status": states.ATT_ATTACHED,
                      "attach_mode": mode, "instance_uuid": instance_uuid,
                      "attached_host": host_name, "mountpoint": mountpoint,
                      "attach_time": db.utcnow()}
            pending = db.legacy_pending(conn, volume_id)
            if pending:
                db.attachment_update(conn, pending[0]["id"], values)
            elif db.legacy_reserve(conn, volume_id):
                db.attachment_create(conn, dict(
                    values, volume_id=volume_id,
                    project_id=vol["project_id"], legacy=True))
            else:
                raise exception.InvalidVolume(
                    reason="Volume %s status must be available or attaching "
                           "to attach, but the status is %s."
                           % (volume_id, vol["status"]))
            db.volume_set_attach_status(conn, volume_id, states.IN_USE)
        self.db.write(attach)

    def detach(self, ctx, volume_id, attachment_id=None):
        """Remove one attached attachment (``attachment_id``, or the only
        one); the volume's status follows the ones that remain."""
        def detach(conn):
            db.volume_get(conn, volume_id, _scope(ctx), for_update=True)
            attached = db.attached_of_volume(conn, volume_id)
            if attachment_id:
                chosen = [a for a in attached if a["id"] == attachment_id]
                if not chosen:
                    raise exception.VolumeAttachmentNotFound(
                        "Volume attachment could not be found with filter: "
                        "attachment_id = %s." % attachment_id)
            elif len(attached) > 1:
                raise exception.InvalidVolume(
                    reason="Detach volume failed: More than one attachment, "
                           "but no attachment_id provided.")
            elif not attached:
                raise exception.InvalidVolume(
                    reason="Volume %s is not attached." % volume_id)
            else:
                chosen = attached
            db.attachment_delete(conn, chosen[0]["id"])
            db.volume_sync_status(conn, volume_id)
        self.db.write(detach)
