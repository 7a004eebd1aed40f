"""Delete a server: destroy the guest, release its volumes, remove it."""
import logging

from volattach import objects
from volattach.conductor.tasks import base
from volattach import exception

LOG = logging.getLogger(__name__)


class DeleteTask(base.TaskBase):
    """The delete of a server on a host (the API deletes a server on no
    up host itself, with ``release_instance_volumes``)."""

    def delete_instance(self, context, instance):
        """Destroy the guest, release every volume, then the server."""
        event = base.Event(context, instance.uuid, "compute_terminate_instance", instance.host)
        bdms = base.retry_transient(
            objects.BlockDeviceMappingList.get_by_instance_uuid,
            context, instance.uuid)
        if instance.host:
            try:
                self.compute_rpcapi.terminate_instance(context, instance, bdms)
            except Exception as error:
                LOG.warning("terminate of %s on %s failed (%s); deleting locally",
                            instance.uuid, instance.host, error)
        release_instance_volumes(context, self.volume_api, bdms)
        try:
            base.retry_transient(instance.destroy)
        except exception.InstanceNotFound:
            pass
        release_instance_volumes(context, self.volume_api,
                                 created_since(context, instance, bdms))
        event.success()


def release_instance_volumes(context, volume_api, bdms):
    """Delete every attachment of the BDMs (volumes on delete_on_termination)
    and destroy the BDMs.  Shared by the conductor and the API's local delete.
    Each step waits out a restart of the database or the volume service
    (``base.retry_transient``: deletes and destroys are idempotent)."""
    for bdm in bdms:
        if bdm.is_volume and bdm.attachment_id:
            try:
                base.retry_transient(volume_api.attachment_delete, context,
                                     bdm.attachment_id)
            except exception.VolumeAttachmentNotFound:
                pass
            except Exception:
                LOG.exception("could not delete attachment %s", bdm.attachment_id)
        if bdm.is_volume and bdm.delete_on_termination and bdm.volume_id:
            try:
                base.retry_transient(volume_api.delete_volume, context,
                                     bdm.volume_id)
            except Exception:
                LOG.exception("could not delete volume %s", bdm.volume_id)
        try:
            base.retry_transient(bdm.destroy)
        except Exception:
            LOG.exception("could not destroy BDM %s", bdm.uuid)


def created_since(context, instance, bdms):
    """The server's records that ``bdms`` (read earlier) does not hold: an
    attach that was under way when the delete read them.  Read after the
    server is gone, when no new attach can start (an attach checks the
    server again once its record has its attachment)."""
    known = {b.uuid for b in bdms}
    return [b for b in base.retry_transient(
        objects.BlockDeviceMappingList.get_by_instance_uuid,
        context, instance.uuid) if b.uuid not in known]
