"""Detach a volume from a server."""
import logging

import oslo_messaging as messaging

from volattach import objects
from volattach.conductor.tasks import base
from volattach.conductor.tasks import delete as delete_task
from volattach.objects.notification import notify_volume
from volattach import exception

LOG = logging.getLogger(__name__)

# task states of workflows that replace the server's attachments
MOVING_TASK_STATES = ("migrating", "shelving", "shelving_offloading")


class DetachVolumeTask(base.ManagerTask):
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
                self._unplug(context, fresh, bdm)
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
            # an offload may swap the record's attachment meanwhile: the
            # release deletes whichever it holds before the record goes
            delete_task.release_volume_record(context, self.volume_api, bdm,
                                              volume_id=volume_id)
        except Exception as error:
            LOG.exception("detach of volume %s: cleanup failed", volume_id)
            event.failure(error)
            notify_volume(context, "volume_detach", "error", instance, volume_id,
                          [bdm], error=error)
            return
        event.success()
        notify_volume(context, "volume_detach", "end", instance, volume_id, [bdm])

    def _unplug(self, context, instance, bdm):
        """The compute's detach, asked once more when the first call got no
        answer (a broker restart can lose it after the compute unplugged):
        rolled back to in-use, the volume would stay attached in the
        records and gone from the guest.  A second detach is safe: the
        drivers' detach of a device they do not have is a no-op, and it
        waits on the server's lock for a first one still running."""
        try:
            self.compute_rpcapi.detach_volume(context, instance, bdm)
        except messaging.MessagingTimeout as error:
            LOG.warning("detach of volume %s from %s got no answer (%s); "
                        "asking the compute again", bdm.volume_id,
                        instance.uuid, error)
            self.compute_rpcapi.detach_volume(context, instance, bdm)
