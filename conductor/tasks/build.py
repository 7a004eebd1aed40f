"""Build servers: schedule, connect their volumes, spawn."""
import logging

from volattach import objects
from volattach.conductor.tasks import base
from volattach.conductor import scheduler
from volattach.db.models import utcnow
from volattach.objects import instance as instance_obj
from volattach import exception

LOG = logging.getLogger(__name__)


class BuildTask(base.ManagerTask):
    """Build the servers the API created (task_state scheduling)."""

    def build_instances(self, context, instances):
        for instance in instances:
            self._build_one(context, instance)

    def _build_one(self, context, instance):
        event = None
        try:
            host = scheduler.select_host(context, instance.availability_zone,
                                         base.min_version_for(context, instance))
            event = base.Event(context, instance.uuid, "compute_build_and_run_instance",
                           host)
            instance.host = host
            instance.node = host
            instance.task_state = "spawning"
            instance.save(expected_task_state=["scheduling"])
            bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(
                context, instance.uuid)
            self._connect_volumes(context, host, bdms)
            self.compute_rpcapi.build_and_run_instance(context, instance, bdms)
            self._complete_volumes(context, bdms)
            instance.vm_state = instance_obj.ACTIVE
            instance.power_state = instance_obj.RUNNING
            instance.task_state = None
            instance.launched_at = utcnow()
            instance.save(expected_task_state=["spawning"])
        except exception.UnexpectedTaskState as error:
            # deleted or changed while building: the delete owns the cleanup
            LOG.info("build of %s interrupted: %s", instance.uuid, error)
            base.Event.failed(event, context, instance.uuid,
                          "compute_build_and_run_instance", error)
            return
        except exception.InstanceNotFound as error:
            base.Event.failed(event, context, instance.uuid,
                          "compute_build_and_run_instance", error)
            return
        except Exception as error:
            LOG.warning("build of %s failed: %s", instance.uuid, error)
            try:
                instance.vm_state = instance_obj.ERROR
                instance.task_state = None
                instance.fault = {"code": 500 if not isinstance(
                    error, exception.NoValidHost) else 500,
                    "message": (error.format_message()
                                if isinstance(error, exception.VolattachException)
                                else str(error)) or error.__class__.__name__,
                    "created": utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")}
                instance.save()
            except Exception:
                LOG.exception("could not put %s in ERROR", instance.uuid)
            base.Event.failed(event, context, instance.uuid,
                          "compute_build_and_run_instance", error)
            return
        event.success()
