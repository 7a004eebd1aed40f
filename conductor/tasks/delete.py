"""Delete a server: destroy the guest, release its volumes, remove it."""
import logging

from volattach import objects
from volattach.conductor.tasks import base
from volattach import exception
from volattach import volume_release

LOG = logging.getLogger(__name__)


class DeleteTask(base.TaskBase):
    """The delete of a server on a host (the API deletes a server on no
    up host itself, with ``volattach.volume_release``): destroy the
    guest, release every volume, then the server.  Nothing is undone: each step
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
        volume_release.release_instance_volumes(context, self.volume_api,
                                                bdms)
        try:
            base.retry_transient(instance.destroy)
        except exception.InstanceNotFound:
            pass
        volume_release.release_instance_volumes(
            context, self.volume_api,
            volume_release.created_since(context, instance, bdms))

    def _on_success(self):
        self.event.success()

    def rollback(self, error):
        LOG.warning("delete of %s failed: %s", self.instance.uuid, error)
        super().rollback(error)
        if self.event is not None:
            self.event.failure(error)
