"""What the conductor's workflows share: the instance-action event around a
step, the compute version a server's volumes need, and ``TaskBase``, the
volume and compute clients with the steps several workflows take (connect
and complete a server's volumes, delete an attachment during a rollback,
one host-local state change, put a task state back)."""
import logging
import socket

from volattach import objects
from volattach import exception

LOG = logging.getLogger(__name__)


class Event:
    """Records one instance-action event around a workflow step, on the
    host where it runs: the server's compute, or this conductor's host when
    the server is on none (os-instance-actions shows it from 2.62)."""

    def __init__(self, context, instance_uuid, name, host=None):
        self.event = objects.InstanceActionEvent.event_start(
            context, instance_uuid, name, host=host or socket.gethostname())

    def success(self):
        self.event.finish()

    def failure(self, error):
        self.event.finish(error=error)

    @classmethod
    def failed(cls, event, context, instance_uuid, name, error):
        """Fail ``event``, or, when the step failed before it had a host to
        start its event on (scheduling), an event ``name`` on this host."""
        (event or cls(context, instance_uuid, name)).failure(error)


def min_version_for(context, instance):
    """The compute service version a host needs for ``instance``'s volumes:
    read-only ones need computes that honour attach_mode."""
    from volattach.objects import service as service_obj
    bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(context, instance.uuid)
    if any(b.is_volume and b.attach_mode == "ro" for b in bdms):
        return service_obj.READ_ONLY_ATTACH_SERVICE_VERSION
    return None


class TaskBase:
    """A workflow of ``ComputeTaskManager`` (``manager``): it uses the
    manager's compute RPC client, volume client and connector cache."""

    def __init__(self, manager):
        self.manager = manager

    @property
    def compute_rpcapi(self):
        return self.manager.compute_rpcapi

    @property
    def volume_api(self):
        return self.manager.volume_api

    def _connector(self, context, host, device_name=None, attach_mode=None):
        return self.manager._connector(context, host, device_name, attach_mode)

    def _connect_volumes(self, context, host, bdms):
        """attachment_update of every reserved volume BDM with ``host``'s
        connector (build and unshelve); saves the connection_info."""
        for bdm in bdms:
            if bdm.is_volume and bdm.attachment_id:
                connector = self._connector(context, host, bdm.device_name,
                                            bdm.attach_mode)
                attachment = self.volume_api.attachment_update(
                    context, bdm.attachment_id, connector,
                    mountpoint=bdm.device_name)
                bdm.set_connection_info(attachment["connection_info"])
                bdm.save()

    def _complete_volumes(self, context, bdms):
        for bdm in bdms:
            if bdm.is_volume and bdm.attachment_id:
                self.volume_api.attachment_complete(context, bdm.attachment_id)

    @staticmethod
    def _check_server_kept(context, instance, method):
        """Raise unless the server still exists and is not being deleted
        (read again: a delete may have started since the API's checks)."""
        fresh = objects.Instance.get_by_uuid(context, instance.uuid)
        if fresh.task_state == "deleting":
            raise exception.InstanceInvalidState(
                method=method, instance_uuid=instance.uuid,
                attr="task_state", state=fresh.task_state)

    def _cleanup_attachment(self, context, attachment_id):
        try:
            self.volume_api.attachment_delete(context, attachment_id)
        except exception.VolumeAttachmentNotFound:
            pass
        except Exception:
            LOG.exception("could not delete attachment %s during rollback",
                          attachment_id)
    def _power_action(self, context, instance, event_name, compute_call,
                      task_state, vm_state, power_state):
        """Run one host-local state change and land the new states, or put
        the server back as it was (task_state None) on failure."""
        event = Event(context, instance.uuid, event_name, instance.host)
        try:
            compute_call(context, instance)
            instance.vm_state = vm_state
            instance.power_state = power_state
            instance.task_state = None
            instance.save(expected_task_state=[task_state])
        except Exception as error:
            LOG.warning("%s of %s failed: %s", event_name, instance.uuid, error)
            self._reset_task_state(instance, task_state)
            event.failure(error)
            return
        event.success()

    @staticmethod
    def _reset_task_state(instance, task_state):
        try:
            instance.task_state = None
            instance.save(expected_task_state=[task_state])
        except Exception:
            LOG.exception("could not reset the task state of %s", instance.uuid)
