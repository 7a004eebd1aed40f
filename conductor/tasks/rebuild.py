"""Rebuild a server: its guest re-created from a new image on the same host,
its volumes left attached as they are."""
import logging

from volattach import objects
from volattach.conductor.tasks import base
from volattach.db.models import utcnow
from volattach.objects import instance as instance_obj
from volattach import exception

LOG = logging.getLogger(__name__)


class RebuildTask(base.TaskBase):
    """The rebuild action's workflow (Nova's rebuild on the same host)."""

    def rebuild_instance(self, context, instance):
        """The API saved the new image and fields with task_state
        ``rebuilding``; the compute destroys and spawns the guest with the
        server's volume connections, whose attachments stay as they are.
        A stopped server stays stopped, an active or errored one ends
        active.  A failure leaves the server in ERROR (the guest may be
        gone), as Nova does, with the volumes still attached.  A delete may
        interrupt a rebuild, as in Nova."""
        event = base.Event(context, instance.uuid, "compute_rebuild_instance",
                           instance.host)
        stopped = instance.vm_state == instance_obj.STOPPED
        bdms = None
        try:
            bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(
                context, instance.uuid)
            self.compute_rpcapi.rebuild_instance(context, instance, bdms,
                                                 power_on=not stopped)
        except Exception as error:
            LOG.warning("rebuild of %s failed: %s", instance.uuid, error)
            try:
                instance.vm_state = instance_obj.ERROR
                instance.task_state = None
                instance.save(expected_task_state=["rebuilding"])
            except Exception:
                LOG.exception("could not put %s in ERROR", instance.uuid)
            event.failure(error)
            return
        instance.vm_state = instance_obj.STOPPED if stopped else instance_obj.ACTIVE
        instance.power_state = (instance_obj.SHUTDOWN if stopped
                                else instance_obj.RUNNING)
        instance.launched_at = utcnow()
        instance.task_state = None
        try:
            instance.save(expected_task_state=["rebuilding"])
        except (exception.UnexpectedTaskState, exception.InstanceNotFound) as error:
            # A delete interrupted the rebuild.  Its terminate may have run
            # before the spawn above (the compute serializes both under the
            # instance lock): the guest just spawned must not outlive the
            # server.
            LOG.info("%s was deleted during its rebuild: destroying the "
                     "rebuilt guest", instance.uuid)
            try:
                self.compute_rpcapi.terminate_instance(context, instance, bdms)
            except Exception:
                LOG.exception("could not destroy the rebuilt guest of %s",
                              instance.uuid)
            event.failure(error)
            return
        event.success()
