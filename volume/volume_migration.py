"""Retype and migration of volumes, and the swap loop with the compute API.

An available volume is retyped or moved in place (the fake backend has no
data to copy); a retype that changes multiattach updates the storage
first (the rbd backend drops or restores the image's single-writer
features, as Cinder's RBD driver does), and an attached volume's
multiattach cannot change (Cinder's refusal).  An attached volume retyped with ``migration_policy:
on-demand``, or migrated, goes through the loop that Cinder drives with
Nova:

1. a target volume is created (``migration_status`` ``target:<source>``,
   the new type and host) and the source's ``migration_status`` becomes
   ``migrating``;
2. the compute API is asked to swap the server from the source to the
   target (``compute_client``; the compute side accepts a swap only while
   the source has a ``migration_status``);
3. when its swap is done, the compute side calls
   ``os-migrate_volume_completion``: the source keeps its id and takes over
   the target's type, host and (swapped-in) attachment; the target row is
   deleted; ``save_volume_id`` is the source's id, the volume the server's
   record must now name.

The compute API is called after the 202, from a thread (it calls this
service back while it swaps).  A refused or failed swap deletes the target
and leaves the source with ``migration_status`` ``error``.
"""
import threading

from oslo_log import log as logging

from volattach import exception
from volattach.volume import policy as volume_policy
from volattach.volume import states
from volattach.volume.db import api as db

LOG = logging.getLogger(__name__)

MIGRATING = "migrating"
TARGET_PREFIX = "target:"
# migration_status values that do not block a new retype or migration.
IDLE = (None, "success", "error")

RETYPE_REFUSED = (
    "Retype needs volume to be in available or in-use state, not be part of "
    "an active migration or a consistency group, requested type has to be "
    "different that the one from the volume, and for in-use volumes "
    "front-end qos specs cannot change.")


def _require_admin(ctx, action):
    volume_policy.authorize(ctx, action)


def _scope(ctx):
    return None if ctx.is_admin else ctx.project_id


class VolumeMigration:
    def __init__(self, manager, compute):
        self.db = manager.db
        self.manager = manager
        self.compute = compute

    def _delete_data(self, volume):
        """Remove a volume's data from the backend (a target row that
        goes, or the data a completed migration left behind)."""
        try:
            self.manager.backend.delete_volume(volume)
        except Exception:
            LOG.exception("could not delete the data of volume %s", volume["id"])

    # -- entry points -------------------------------------------------------

    def retype(self, ctx, volume_id, new_type, policy="never"):
        def check(conn):
            vol = db.volume_get(conn, volume_id, _scope(ctx),
                                for_update=True)
            vtype = db.type_get(conn, new_type)
            if db.encryption_get(conn, vtype["id"]) is not None:
                # no volume here is encrypted (Cinder's answer when the
                # encryption of the two types differs)
                raise exception.InvalidInput(
                    reason="Retype cannot change encryption requirements.")
            if (vol["status"] not in (states.AVAILABLE, states.IN_USE)
                    or vol["migration_status"] not in IDLE
                    or vtype["id"] == vol["volume_type_id"]):
                raise exception.InvalidInput(reason=RETYPE_REFUSED)
            multiattach = states.is_multiattach_spec(
                vtype["extra_specs"].get("multiattach"))
            # the new type's backend (another one: the data must move)
            host = self.manager.host_for_retype(vol, vtype, policy)
            if vol["status"] == states.IN_USE:
                if multiattach != bool(vol["multiattach"]):
                    raise exception.InvalidInput(
                        reason="Retype cannot change the multiattach "
                               "property of an in-use volume.")
                if policy == "on-demand":
                    return self._start(conn, vol, vtype["id"], host)
            elif (multiattach != bool(vol["multiattach"])
                    and host == vol["host"]):
                # an available volume on its backend: the storage follows
                # (rbd's image features), the row only if that worked
                self.manager.backend.retype(vol, multiattach)
            db.volume_update(conn, volume_id, {
                "volume_type_id": vtype["id"], "multiattach": multiattach,
                "host": host})
            return None
        self._swap(self.db.write(check))

    def migrate(self, ctx, volume_id, host):
        _require_admin(ctx, "volume_extension:volume_admin_actions:"
                            "migrate_volume")

        def check(conn):
            vol = db.volume_get(conn, volume_id, for_update=True)
            if vol["status"] not in (states.AVAILABLE, states.IN_USE):
                raise exception.InvalidVolume(
                    reason="Volume status must be available or in-use, but "
                           "the current status is: %s." % vol["status"])
            if vol["migration_status"] not in IDLE:
                raise exception.InvalidVolume(
                    reason="Volume %s is already part of an active "
                           "migration." % volume_id)
            if vol["status"] == states.IN_USE:
                return self._start(conn, vol, vol["volume_type_id"], host)
            db.volume_update(conn, volume_id, {"host": host,
                                               "migration_status": "success"})
            return None
        self._swap(self.db.write(check))

    def complete(self, ctx, volume_id, new_volume_id, error=False):
        """os-migrate_volume_completion: returns the id to keep."""
        _require_admin(ctx, "volume_extension:volume_admin_actions:"
                            "migrate_volume_completion")

        def complete(conn):
            source = db.volume_get(conn, volume_id, for_update=True)
            target = db.volume_get(conn, new_volume_id, for_update=True)
            if source["migration_status"] in IDLE:
                raise exception.InvalidVolume(
                    reason="Source volume not mid-migration.")
            if target["migration_status"] != TARGET_PREFIX + volume_id:
                raise exception.InvalidVolume(
                    reason="Destination volume not mid-migration.")
            if error:
                db.volume_destroy(conn, new_volume_id)
                db.volume_update(conn, volume_id,
                                 {"migration_status": "error"})
            else:
                db.volume_finish_migration(conn, volume_id, new_volume_id)
            db.volume_sync_status(conn, volume_id)
            # the data no volume names any more: the target's after a
            # failure, the source's old data after a success
            return target if error else source
        unused = self.db.write(complete)
        self._delete_data(unused)
        return volume_id

    # -- the swap loop ------------------------------------------------------

    def _start(self, conn, vol, type_id, host):
        """Create the target and mark the source migrating (in the
        caller's transaction); returns what ``_swap`` needs."""
        attached = db.attached_of_volume(conn, vol["id"])
        servers = [a for a in attached if a["instance_uuid"]]
        if len(attached) != 1 or not servers:
            raise exception.InvalidVolume(
                reason="An attached volume is migrated by the compute "
                       "service's swap: it needs exactly one attachment to "
                       "a server, and volume %s has %d."
                       % (vol["id"], len(attached)))
        target = db.volume_create(conn, {
            "project_id": vol["project_id"], "user_id": vol["user_id"],
            "name": vol["name"], "description": vol["description"],
            "size": vol["size"], "status": states.AVAILABLE,
            "migration_status": TARGET_PREFIX + vol["id"],
            "availability_zone": vol["availability_zone"],
            "volume_type_id": type_id, "multiattach": vol["multiattach"],
            "readonly": vol["readonly"], "readonly_set": vol["readonly_set"],
            "shared_targets": vol["shared_targets"],
            "bootable": vol["bootable"], "service_uuid": vol["service_uuid"],
            "host": host, "metadata": vol["metadata"]})
        db.volume_update(conn, vol["id"], {"migration_status": MIGRATING})
        return servers[0]["instance_uuid"], vol["id"], target["id"]

    def _swap(self, started):
        """Ask for the swap from a thread of its own, as Cinder's volume
        manager does after the API's 202: the compute API calls this
        service back while it handles the swap, and a single-threaded
        worker must be free to answer."""
        if started is None:
            return
        thread = threading.Thread(target=self._ask_swap, args=started,
                                  name="swap-%s" % started[1], daemon=True)
        thread.start()
        return thread

    def _ask_swap(self, server_id, source_id, target_id):
        target = self.db.read(lambda conn: db.volume_get(conn, target_id))
        try:
            # the target's data, which the compute's swap copies onto
            self.manager.backend.create_volume(target)
            self.compute.swap_volume(server_id, source_id, target_id)
        except Exception as exc:
            LOG.warning("Migration of volume %s to %s failed: %s",
                        source_id, target_id, exc)

            def undo(conn):
                db.volume_destroy(conn, target_id)
                db.volume_update(conn, source_id,
                                 {"migration_status": "error"})
            self.db.write(undo)
            self._delete_data(target)
