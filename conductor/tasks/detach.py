"""Detach a volume from a server."""
import logging

from volattach import objects
from volattach.conductor.tasks import base
from volattach.objects.notification import notify_volume
from volattach import exception

LOG = logging.getLogger(__name__)

# task states of workflows that replace the server's attachments
MOVING_TASK_STATES = ("migrating", "shelving", "shelving_offloading")
# How many times the record may change under the detach's release (an
# offload swaps a record's attachment once; more is a fault to report).
RELEASE_TRIES = 5


class DetachVolumeTask(base.TaskBase):
    """Unplug, delete the attachment, destroy the record."""

    def detach_volume(self, context, instance, volume_id):
        """Unplug on the compute, delete the attachment, destroy the BDM.

        The API made the volume ``detaching`` before the cast: whatever
        fails before the unplug (the event's start included) rolls it back
        to in-use.  Every step but the compute's unplug waits out a restart
        of the database or the volume service (``base.retry_transient``)."""
        event = bdm = None
        try:
            event = base.Event(context, instance.uuid, "compute_detach_volume",
                               instance.host)
            notify_volume(context, "volume_detach", "start", instance, volume_id)
            # a live migration or an offload that started since the API's
            # checks moves this record: refuse, as the API does once it
            # sees their task state
            fresh = base.retry_transient(objects.Instance.get_by_uuid,
                                         context, instance.uuid)
            if fresh.task_state in MOVING_TASK_STATES:
                raise exception.InstanceInvalidState(
                    method="detach_volume", instance_uuid=instance.uuid,
                    attr="task_state", state=fresh.task_state)
            bdm = base.retry_transient(
                objects.BlockDeviceMapping.get_by_volume_and_instance,
                context, volume_id, instance.uuid)
            if fresh.host:
                self.compute_rpcapi.detach_volume(context, fresh, bdm)
        except Exception as error:
            LOG.warning("detach of volume %s from %s failed: %s",
                        volume_id, instance.uuid, error)
            try:
                base.retry_transient(self.volume_api.roll_detaching,
                                     context, volume_id)
            except Exception:
                LOG.exception("roll_detaching failed")
            if event is not None:       # None: the database was away
                try:
                    event.failure(error)
                except Exception:
                    LOG.exception("could not record the failed detach of %s",
                                  volume_id)
            notify_volume(context, "volume_detach", "error", instance, volume_id,
                          [bdm], error=error)
            return
        try:
            self._release(context, instance, volume_id, bdm)
        except Exception as error:
            LOG.exception("detach of volume %s: cleanup failed", volume_id)
            event.failure(error)
            notify_volume(context, "volume_detach", "error", instance, volume_id,
                          [bdm], error=error)
            return
        event.success()
        notify_volume(context, "volume_detach", "end", instance, volume_id, [bdm])

    def _release(self, context, instance, volume_id, bdm):
        """Delete the attachment the record holds, then the record, unless
        it holds another attachment by then: an offload that started once
        the detach had passed its check swaps the record's attachment for a
        connector-less one, then deletes the old one.  That one is deleted
        too and the record destroyed with it (compare-and-swap: no offload
        can swap in between)."""
        deleted = set()
        holding = bdm.attachment_id
        for _ in range(RELEASE_TRIES):
            if holding and holding not in deleted:
                try:
                    base.retry_transient(self.volume_api.attachment_delete,
                                         context, holding)
                except exception.VolumeAttachmentNotFound:
                    pass
                deleted.add(holding)
            if base.retry_transient(bdm.destroy_if_attachment, holding):
                return
            try:
                current = base.retry_transient(
                    objects.BlockDeviceMapping.get_by_volume_and_instance,
                    context, volume_id, instance.uuid)
            except exception.VolumeBDMNotFound:
                return
            LOG.info("detach of volume %s from %s: its attachment became %s "
                     "meanwhile; deleting that one too", volume_id,
                     instance.uuid, current.attachment_id)
            holding = current.attachment_id
        raise exception.VolattachException(
            "the record of volume %s kept changing during its detach" % volume_id)
