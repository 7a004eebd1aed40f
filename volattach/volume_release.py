"""Releasing a server's volume records: delete each record's attachment,
then the record (and a volume marked delete_on_termination), without
leaving an attachment on a volume no record points at.  Shared by the
conductor's delete and detach tasks and the API's delete of a server on
no up host (and the rollback of a create).  Each step waits out a
restart of the database (``transient.retry_transient``: deletes and
destroys are idempotent)."""
import logging

from volattach import exception
from volattach import objects
from volattach.transient import retry_transient

LOG = logging.getLogger(__name__)

# How many times a record may change under its release (an attach saves
# its attachment once, an offload swaps it once; more is a fault).
RELEASE_TRIES = 5


def release_instance_volumes(context, volume_api, bdms):
    """Delete every attachment of the BDMs (volumes on delete_on_termination)
    and destroy the BDMs.  A record whose attachment could not be deleted
    is destroyed anyway (the server goes; the reconcile pass finds the
    attachment)."""
    for bdm in bdms:
        if not bdm.is_volume:
            _destroy(bdm)
            continue
        # as read (a detach's copy says never), not as the release may
        # find the record later
        doomed = bdm.volume_id if bdm.delete_on_termination else None
        try:
            release_volume_record(context, volume_api, bdm)
        except Exception:
            LOG.exception("could not release the attachment of volume %s",
                          bdm.volume_id)
            _destroy(bdm)
        if doomed:
            try:
                retry_transient(volume_api.delete_volume, context, doomed)
            except Exception:
                LOG.exception("could not delete volume %s", doomed)


def _destroy(bdm):
    try:
        retry_transient(bdm.destroy)
    except Exception:
        LOG.exception("could not destroy BDM %s", bdm.uuid)


def release_volume_record(context, volume_api, bdm, volume_id=None):
    """Delete the attachment a volume's record holds, then the record,
    unless it holds another attachment by then; that one is deleted too
    and the record destroyed with it (``destroy_if_attachment``: a
    compare-and-swap, nothing can change the record in between).

    ``bdm`` may be older than the record: an attach saves its attachment
    into the record after a delete read it, an offload swaps it for a
    connector-less one after a detach read it.  Destroying the record as
    read would leave that attachment on a volume no record points at.
    ``volume_id`` (a detach): stop once the record is another volume's
    (a swap moved it onto its new volume, which stays attached)."""
    deleted = set()
    for _ in range(RELEASE_TRIES):
        holding = bdm.attachment_id
        if volume_id is not None and bdm.volume_id != volume_id:
            LOG.info("the record of volume %s on %s is volume %s's now; "
                     "leaving it", volume_id, bdm.instance_uuid, bdm.volume_id)
            return
        if holding and holding not in deleted:
            try:
                retry_transient(volume_api.attachment_delete, context,
                                     holding)
            except exception.VolumeAttachmentNotFound:
                pass
            deleted.add(holding)
        if retry_transient(bdm.destroy_if_attachment, holding):
            return
        LOG.info("the record of volume %s on %s holds attachment %s now",
                 bdm.volume_id, bdm.instance_uuid, bdm.attachment_id)
    raise exception.VolattachException(
        "the record of volume %s kept changing during its release"
        % bdm.volume_id)


def created_since(context, instance, bdms):
    """The server's records that ``bdms`` (read earlier) does not hold: an
    attach that was under way when the delete read them.  Read after the
    server is gone, when no new attach can start (an attach checks the
    server again once its record has its attachment)."""
    known = {b.uuid for b in bdms}
    return [b for b in retry_transient(
        objects.BlockDeviceMappingList.get_by_instance_uuid,
        context, instance.uuid) if b.uuid not in known]
