"""Stop, start, pause, unpause, suspend, resume and reboot: one host-local
change of the guest's power."""
from volattach.conductor.tasks import base
from volattach.objects import instance as instance_obj


class PowerTask(base.ManagerTask):
    """The power actions (``TaskBase._power_action``)."""

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

    def suspend_instance(self, context, instance):
        self._power_action(context, instance, "compute_suspend_instance",
                           self.compute_rpcapi.suspend_instance, "suspending",
                           instance_obj.SUSPENDED, instance_obj.SUSPENDED_POWER)

    def resume_instance(self, context, instance):
        self._power_action(context, instance, "compute_resume_instance",
                           self.compute_rpcapi.resume_instance, "resuming",
                           instance_obj.ACTIVE, instance_obj.RUNNING)

    def reboot_instance(self, context, instance, reboot_type):
        """SOFT or HARD; a hard reboot also starts a stopped, paused or
        suspended guest, so the server ends active either way (as Nova)."""
        def reboot(ctx, inst):
            self.compute_rpcapi.reboot_instance(ctx, inst, reboot_type)
        self._power_action(context, instance, "compute_reboot_instance",
                           reboot, REBOOT_TASK_STATES[reboot_type],
                           instance_obj.ACTIVE, instance_obj.RUNNING)


REBOOT_TASK_STATES = {"SOFT": "rebooting", "HARD": "rebooting_hard"}
