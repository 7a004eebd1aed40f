"""Cinder's attach actions from before 3.27, on the same tables as the
attachments API.

``os-reserve`` moves an available volume (an in-use one if multiattach) to
``attaching`` and records a *legacy* attachment, ``attaching``, without a
server; ``os-attach`` completes that reservation (or attaches directly, as
Cinder allows) with the server or host, mountpoint and mode; ``os-detach``
removes one attached attachment; ``os-unreserve`` drops the pending
reservations; ``os-force_detach`` (admin) removes one attachment whatever
its status, with its backend connection, and leaves the others.
``os-initialize_connection`` and ``os-terminate_connection`` only build
and tear down the backend connection for the given connector.

Both APIs see each other's attachments: the volume's status is derived from
all of them, and a volume reserved one way cannot be reserved the other way
(``db.volume_reserve`` refuses while an os-reserve is pending; os-reserve
needs an available or in-use volume, which a pending new-API reservation is
not).
"""
import uuid

from oslo_log import log as logging

from volattach import exception
from volattach.volume import policy as volume_policy
from volattach.volume import states
from volattach.volume.db import api as db

LOG = logging.getLogger(__name__)

FORCE_DETACH_POLICY = "volume_extension:volume_admin_actions:force_detach"


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

    def force_detach(self, ctx, volume_id, attachment_id=None,
                     connector=None):
        """os-force_detach (admin): remove ONE attachment of the volume,
        in whatever status (a connection whose host died), tearing down
        its backend connection; the others stay, and the volume's status
        follows them.  The attachment is ``attachment_id``, else the one
        made from ``connector``'s host, else the volume's only one (none:
        nothing to do, as Cinder).  An attachment that is not the volume's
        is Cinder's 400 (its API's message)."""
        volume_policy.authorize(ctx, FORCE_DETACH_POLICY)

        def refused(kind, message):
            return exception.InvalidInput(
                message="Error force detaching volume - %s: %s"
                % (kind, message))

        def settle(conn, volume):
            # the status the attachments left imply, also from a status an
            # admin set (error: the usual step before a force-detach), as
            # Cinder's detach finishes; an extend in flight keeps its own
            if volume["status"] == "extending":
                return
            statuses = [a["attach_status"] for a in
                        db.attachment_list(conn, volume_id=volume_id)]
            db.volume_update(conn, volume_id, {
                "status": states.status_from_attachments(statuses)})

        def force(conn):
            volume = db.volume_get(conn, volume_id, for_update=True)
            attachments = db.attachment_list(conn, volume_id=volume_id)
            if attachment_id:
                chosen = [a for a in attachments if a["id"] == attachment_id]
                if not chosen:
                    raise refused(
                        "VolumeAttachmentNotFound",
                        "Volume attachment could not be found with filter: "
                        "attachment_id = %s." % attachment_id)
            elif isinstance(connector, dict) and connector.get("host"):
                chosen = [a for a in attachments
                          if a.get("attached_host") == connector["host"]]
                if not chosen:
                    raise refused(
                        "VolumeAttachmentNotFound",
                        "Volume attachment could not be found with filter: "
                        "attached_host = %s." % connector["host"])
            else:
                chosen = attachments
            if len(chosen) > 1:
                raise refused(
                    "InvalidVolume",
                    "Invalid volume: Detach volume failed: More than one "
                    "attachment, but no attachment_id provided.")
            if not chosen:
                settle(conn, volume)
                return None
            target = chosen[0]
            if target["attach_status"] in states.CONNECTED:
                stored = db.attachment_specs_get(conn, target["id"])
                remaining = [a for a in attachments
                             if a["id"] != target["id"]
                             and a["attach_status"] in states.CONNECTED]
                try:
                    self.backend.terminate_connection(
                        volume, target, stored or connector or {},
                        remaining=remaining)
                except Exception as exc:    # the host is gone: go on
                    LOG.warning("force-detach of attachment %s of volume "
                                "%s: its backend connection could not be "
                                "torn down: %s", target["id"], volume_id,
                                exc)
            db.attachment_delete(conn, target["id"])
            settle(conn, volume)
            return target

        gone = self.db.write(force)
        if gone is not None:
            LOG.info("force-detach: attachment %s (server %s, host %s) of "
                     "volume %s removed", gone["id"], gone["instance_uuid"],
                     gone.get("attached_host"), volume_id)
