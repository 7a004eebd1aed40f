"""Detach a volume from a server."""
import logging

from volattach import objects
from volattach.conductor.tasks import base
from volattach.objects.notification import notify_volume
from volattach import exception

LOG = logging.getLogger(__name__)


class DetachVolumeTask(base.TaskBase):
    """Unplug, delete the attachment, destroy the record."""

    def detach_volume(self, context, instance, volume_id):
        """Unplug on the compute, delete the attachment, destroy the BDM."""
        event = base.Event(context, instance.uuid, "compute_detach_volume", instance.host)
        notify_volume(context, "volume_detach", "start", instance, volume_id)
        bdm = None
        try:
            # a live migration that started since the API's checks moves
            # this record: refuse, as the API does once it sees it
            fresh = objects.Instance.get_by_uuid(context, instance.uuid)
            if fresh.task_state == "migrating":
                raise exception.InstanceInvalidState(
                    method="detach_volume", instance_uuid=instance.uuid,
                    attr="task_state", state=fresh.task_state)
            bdm = objects.BlockDeviceMapping.get_by_volume_and_instance(
                context, volume_id, instance.uuid)
            if fresh.host:
                self.compute_rpcapi.detach_volume(context, fresh, bdm)
        except Exception as error:
            LOG.warning("detach of volume %s from %s failed: %s",
                        volume_id, instance.uuid, error)
            try:
                self.volume_api.roll_detaching(context, volume_id)
            except Exception:
                LOG.exception("roll_detaching failed")
            event.failure(error)
            notify_volume(context, "volume_detach", "error", instance, volume_id,
                          [bdm], error=error)
            return
        try:
            if bdm.attachment_id:
                try:
                    self.volume_api.attachment_delete(context, bdm.attachment_id)
                except exception.VolumeAttachmentNotFound:
                    pass
            bdm.destroy()
        except Exception as error:
            LOG.exception("detach of volume %s: cleanup failed", volume_id)
            event.failure(error)
            notify_volume(context, "volume_detach", "error", instance, volume_id,
                          [bdm], error=error)
            return
        event.success()
        notify_volume(context, "volume_detach", "end", instance, volume_id, [bdm])
