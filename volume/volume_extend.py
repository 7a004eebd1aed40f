"""``os-extend``: the backend grows the volume, then the row says so.

An available volume, or from 3.42 an in-use one (Cinder's
``extend_attached_volume``), moves to ``extending`` in one transaction
(compare-and-swap on its status, so that an attach, a detach or a delete
that comes meanwhile is refused by status), the backend grows its storage
outside any transaction, and a second transaction writes the new size and
the status its attachments imply (``available`` or ``in-use``; an
attachment deleted meanwhile counts).  A backend that fails leaves the size
as it was and the status back from ``extending`` (Cinder 29 leaves
``error_extending``: here the caller gets the error at once, so there is
nothing for an admin to reset).

An in-use volume's backend must be able to grow it under a running guest
(``online_extend``): rbd and iscsi can, the fake backend has no storage
(it records the size only), the file backend cannot (QEMU's NBD client
fixes the size when it connects) and is refused with a 400 that says so,
as a Cinder backend without ``online_extend_support``.

Once the size is written, each server with an attached attachment gets a
``volume-extended`` event (``compute_events``), posted from a thread after
the 202 as Cinder's volume manager does after its API's: the compute API
may call this service back (it reads the new connection info).  The
size is written first: a compute that dies before its event reads the new
size at its next plug.
"""
import threading

from oslo_log import log as logging

from volattach import exception
from volattach.volume import states
from volattach.volume.db import api as db

LOG = logging.getLogger(__name__)

EXTENDING = "extending"
# migration_status values of a volume that is not being migrated
MIGRATION_IDLE = (None, "success", "error")


def _scope(ctx):
    return None if ctx.is_admin else ctx.project_id


def size_refused(current, new_size):
    return ("New size for extend must be greater than current size. "
            "(current: %s, extended: %s)." % (current, new_size))


def status_refused(volume_id, expected, status):
    # Cinder formats the expected value as the dict it passes to its
    # conditional update
    return ("Volume %s status must be '%s' to extend, currently %s."
            % (volume_id, str({"status": expected}), status))


class VolumeExtend:
    def __init__(self, manager, events):
        self.manager = manager
        self.db = manager.db
        self.events = events

    def extend(self, ctx, volume_id, new_size, attached_allowed=False):
        """Grow the volume to ``new_size`` GiB; ``attached_allowed``: the
        request is 3.42 or later, so an in-use volume may be extended.
        Returns the thread posting the events (None when there are
        none)."""
        def begin(conn):
            vol = db.volume_get(conn, volume_id, _scope(ctx),
                                for_update=True)
            if new_size <= vol["size"]:
                raise exception.InvalidInput(
                    reason=size_refused(vol["size"], new_size))
            if vol.get("migration_status") not in MIGRATION_IDLE:
                # the data moves to another volume that keeps the old size
                raise exception.InvalidVolume(
                    reason="Volume %s is being migrated (migration_status "
                           "%s): extend it once the migration is done."
                           % (volume_id, vol["migration_status"]))
            attached = attached_allowed and vol["status"] == states.IN_USE
            expected = states.IN_USE if attached else states.AVAILABLE
            if vol["status"] != expected:
                raise exception.InvalidVolume(
                    reason=status_refused(volume_id, expected, vol["status"]))
            if attached:
                refused = self.manager.backend.online_extend_refused(vol)
                if refused:
                    raise exception.InvalidVolume(
                        reason="Volume %s is in-use and %s." % (volume_id,
                                                                refused))
            if not db.volume_update(conn, volume_id, {"status": EXTENDING},
                                    [expected]):
                raise exception.InvalidVolume(
                    reason=status_refused(volume_id, expected,
                                          vol["status"]))
            return vol, attached

        vol, attached = self.db.write(begin)
        try:
            self.manager.backend.extend_volume(vol, new_size,
                                               attached=attached)
        except Exception as exc:
            self._finish(volume_id, None)
            LOG.warning("Extend of volume %s to %s GiB failed in its "
                        "backend: %s", volume_id, new_size, exc)
            if isinstance(exc, exception.VolattachException):
                raise
            raise exception.ServiceUnavailable(
                reason="the backend could not extend volume %s: %s"
                % (volume_id, exc))
        servers = self._finish(volume_id, new_size)
        LOG.info("Volume %s extended from %s to %s GiB", volume_id,
                 vol["size"], new_size)
        if not servers:
            return None
        thread = threading.Thread(
            target=self._notify, args=(volume_id, servers),
            name="volume-extended-%s" % volume_id, daemon=True)
        thread.start()
        return thread

    def _finish(self, volume_id, new_size):
        """Leave ``extending``: the new size (None: unchanged) and the
        status the attachments imply; the servers attached."""
        def finish(conn):
            attachments = db.attachment_list(conn, volume_id=volume_id)
            values = {"status": states.status_from_attachments(
                a["attach_status"] for a in attachments)}
            if new_size is not None:
                values["size"] = new_size
            db.volume_update(conn, volume_id, values, [EXTENDING])
            return sorted({a["instance_uuid"] for a in attachments
                           if a["instance_uuid"]
                           and a["attach_status"] == states.ATT_ATTACHED})
        return self.db.write(finish)

    def recover(self):
        """At the service's start: a volume of this service's backends left
        ``extending`` by a process that died mid-extend gets the status its
        attachments imply back, its size unchanged (the storage may have
        grown: extending it again to the size wanted grows nothing more
        and writes the size).  Returns their ids."""
        mine = {self.manager.backend_host(name)
                for name in self.manager.backends.names}

        def recover(conn):
            stuck = [v for v in db.volume_list(conn)
                     if v["status"] == EXTENDING and (v.get("host") or "")
                     .split("#", 1)[0] in mine]
            for vol in stuck:
                statuses = [a["attach_status"] for a in
                            db.attachment_list(conn, volume_id=vol["id"])]
                db.volume_update(conn, vol["id"], {
                    "status": states.status_from_attachments(statuses)},
                    [EXTENDING])
            return [v["id"] for v in stuck]
        recovered = self.db.write(recover)
        for volume_id in recovered:
            LOG.warning("Volume %s was left extending by a stopped volume "
                        "service: its status follows its attachments "
                        "again, its size is unchanged; extend it again",
                        volume_id)
        return recovered

    def _notify(self, volume_id, servers):
        try:
            self.events.volume_extended(volume_id, servers)
        except Exception:
            LOG.exception("volume-extended of volume %s not delivered",
                          volume_id)
