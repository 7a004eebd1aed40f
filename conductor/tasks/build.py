"""Build servers: schedule, connect their volumes, spawn."""
import logging

from volattach import objects
from volattach.conductor import scheduler
from volattach.conductor.tasks import base
from volattach.db.models import utcnow
from volattach.objects import instance as instance_obj
from volattach import exception

LOG = logging.getLogger(__name__)


def place_group_members(context, instances):
    """The placements of servers of one request created into a server
    group: ``{uuid: host}``, or ``{uuid: NoValidHost}`` for all of them
    when the group's policy leaves too few hosts (Nova fails the whole
    request); ``{}`` for servers in no group (each is scheduled alone)."""
    if not instances:
        return {}
    first = instances[0]
    group = objects.InstanceGroup.get_by_instance_uuid(context, first.uuid)
    if group is None:
        return {}
    try:
        placed = scheduler.place_group_members(
            context, group, instances, first.availability_zone,
            base.min_version_for(context, first), first.image_ref)
    except exception.NoValidHost as error:
        return {i.uuid: error for i in instances}
    # a server left out was deleted (or changed) meanwhile: never
    # scheduled alone, outside its group's policy
    return {i.uuid: placed.get(i.uuid) or exception.InstanceNotFound(
        instance_id=i.uuid) for i in instances}


class BuildTask(base.TaskBase):
    """Build one server the API created (task_state scheduling): schedule
    it, connect its volumes, spawn it.  Nothing of a failed build is
    undone here: the server goes to ERROR with its fault (as Nova), and
    its delete releases the volumes; a server deleted or changed while
    building is left to that delete.  A member of a server group comes
    placed already (``place_group_members``)."""

    def __init__(self, context, instance, placement=None, **collaborators):
        """``placement``: the host ``place_group_members`` recorded for
        the server, or the error it met; None: schedule it here."""
        super().__init__(context, instance, **collaborators)
        self.event = None
        self.placement = placement

    def _execute(self):
        instance = self.instance
        if isinstance(self.placement, Exception):
            raise self.placement
        host = self.placement or base.schedule(self.context, instance)
        self.event = base.Event(self.context, instance.uuid,
                                "compute_build_and_run_instance", host)
        instance.host = host
        instance.node = host
        instance.task_state = "spawning"
        instance.save(expected_task_state=["scheduling"])
        bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(
            self.context, instance.uuid)
        self._connect_volumes(host, bdms)
        self.compute_rpcapi.build_and_run_instance(self.context, instance,
                                                   bdms)
        self._complete_volumes(bdms)
        instance.vm_state = instance_obj.ACTIVE
        instance.power_state = instance_obj.RUNNING
        instance.task_state = None
        instance.launched_at = utcnow()
        instance.save(expected_task_state=["spawning"])

    def _on_success(self):
        self.event.success()

    def rollback(self, error):
        super().rollback(error)
        if isinstance(error, exception.UnexpectedTaskState):
            # deleted or changed while building: the delete owns the cleanup
            LOG.info("build of %s interrupted: %s", self.instance.uuid, error)
        elif not isinstance(error, exception.InstanceNotFound):
            LOG.warning("build of %s failed: %s", self.instance.uuid, error)
            self._put_in_error(error)
        base.Event.failed(self.event, self.context, self.instance.uuid,
                          "compute_build_and_run_instance", error)

    def _put_in_error(self, error):
        instance = self.instance
        try:
            instance.vm_state = instance_obj.ERROR
            instance.task_state = None
            instance.fault = {
                "code": 500,
                "message": (error.format_message()
                            if isinstance(error, exception.VolattachException)
                            else str(error)) or error.__class__.__name__,
                "created": utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")}
            instance.save()
        except Exception:
            LOG.exception("could not put %s in ERROR", instance.uuid)
