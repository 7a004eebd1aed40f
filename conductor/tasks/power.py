"""Stop, start, pause and unpause: one host-local change of the guest's power."""
from volattach.conductor.tasks import base
from volattach.objects import instance as instance_obj


class PowerTask(base.TaskBase):
    """The four power actions (``TaskBase._power_action``)."""

    def stop_instance(self, context, instance):
        self._power_action(context, instance, "compute_stop_instance",
                           self.compute_rpcapi.power_off_instance, "powering-off",
                           instance_obj.STOPPED, instance_obj.SHUTDOWN)

    def start_instance(self, context, instance):
        self._power_action(context, instance, "compute_start_instance",
                           self.compute_rpcapi.power_on_instance, "powering-on",
                           instance_obj.ACTIVE, instance_obj.RUNNING)

    def pause_instance(self, context, instance):
        self._power_action(context, instance, "compute_pause_instance",
                           self.compute_rpcapi.pause_instance, "pausing",
                           instance_obj.PAUSED, instance_obj.PAUSED_POWER)

    def unpause_instance(self, context, instance):
        self._power_action(context, instance, "compute_unpause_instance",
                           self.compute_rpcapi.unpause_instance, "unpausing",
                           instance_obj.ACTIVE, instance_obj.RUNNING)
