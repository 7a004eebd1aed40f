"""Delete a server: destroy the guest, release its volumes, remove it."""
import logging

from volattach import objects
from volattach.conductor.tasks import base
from volattach import exception

LOG = logging.getLogger(__name__)

# How many times a record may change under its release (an attach saves
# its attachment once, an offload swaps it once; more is a fault).
RELEASE_TRIES = 5


class DeleteTask(base.TaskBase):
    """The delete of a server on a host (the API deletes a server on no
    up host itself, with ``release_instance_volumes``): destroy the guest,
    release every volume, then the server.  Nothing is undone: each step
    goes forward whatever the one before it did (a guest its compute could
    not destroy is deleted locally; an attachment that could not be
    deleted is left to the reconcile pass)."""

    def __init__(self, context, instance, **collaborators):
        super().__init__(context, instance, **collaborators)
        self.event = None

    def _execute(self):
        context, instance = self.context, self.instance
        self.event = base.Event(context, instance.uuid,
                                "compute_terminate_instance", instance.host)
        bdms = base.retry_transient(
            objects.BlockDeviceMappingList.get_by_instance_uuid,
            context, instance.uuid)
        if instance.host:
            try:
                self.compute_rpcapi.terminate_instance(context, instance, bdms)
            except Exception as error:
                LOG.warning("terminate of %s on %s failed (%s); deleting "
                            "locally", instance.uuid, instance.host, error)
        release_instance_volumes(context, self.volume_api, bdms)
        try:
            base.retry_transient(instance.destroy)
        except exception.InstanceNotFound:
            pass
        release_instance_volumes(context, self.volume_api,
                                 created_since(context, instance, bdms))

    def _on_success(self):
        self.event.success()

    def rollback(self, error):
        LOG.warning("delete of %s failed: %s", self.instance.uuid, error)
        super().rollback(error)
        if self.event is not None:
            self.event.failure(error)


def release_instance_volumes(context, volume_api, bdms):
    """Delete every attachment of the BDMs (volumes on delete_on_termination)
    and destroy the BDMs.  Shared by the conductor and the API's local delete.
    Each step waits out a restart of the database or the volume service
    (``base.retry_transient``: deletes and destroys are idempotent).  A
    record whose attachment could not be deleted is destroyed anyway (the
    server goes; the reconcile pass finds the attachment)."""
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
                base.retry_transient(volume_api.delete_volume, context, doomed)
            except Exception:
                LOG.exception("could not delete volume %s", doomed)


def _destroy(bdm):
    try:
        base.retry_transient(bdm.destroy)
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
                base.retry_transient(volume_api.attachment_delete, context,
                                     holding)
            except exception.VolumeAttachmentNotFound:
                pass
            deleted.add(holding)
        if base.retry_transient(bdm.destroy_if_attachment, holding):
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
    return [b for b in base.retry_transient(
        objects.BlockDeviceMappingList.get_by_instance_uuid,
        context, instance.uuid) if b.uuid not in known]
