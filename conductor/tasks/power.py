"""Stop, start, pause, unpause, suspend, resume and reboot: one host-local
change of the guest's power (``PowerActionTask``, one run per action)."""
import logging

from volattach.conductor.tasks import base
from volattach.objects import instance as instance_obj

LOG = logging.getLogger(__name__)

# action: (instance-action event, compute RPC method, task state during
# the action, vm_state and power_state after it)
ACTIONS = {
    "stop": ("compute_stop_instance", "power_off_instance", "powering-off",
             instance_obj.STOPPED, instance_obj.SHUTDOWN),
    "start": ("compute_start_instance", "power_on_instance", "powering-on",
              instance_obj.ACTIVE, instance_obj.RUNNING),
    "pause": ("compute_pause_instance", "pause_instance", "pausing",
              instance_obj.PAUSED, instance_obj.PAUSED_POWER),
    "unpause": ("compute_unpause_instance", "unpause_instance", "unpausing",
                instance_obj.ACTIVE, instance_obj.RUNNING),
    "suspend": ("compute_suspend_instance", "suspend_instance", "suspending",
                instance_obj.SUSPENDED, instance_obj.SUSPENDED_POWER),
    "resume": ("compute_resume_instance", "resume_instance", "resuming",
               instance_obj.ACTIVE, instance_obj.RUNNING),
    # SOFT or HARD; a hard reboot also starts a stopped, paused or
    # suspended guest, so the server ends active either way (as Nova)
    "reboot": ("compute_reboot_instance", "reboot_instance", None,
               instance_obj.ACTIVE, instance_obj.RUNNING),
}
REBOOT_TASK_STATES = {"SOFT": "rebooting", "HARD": "rebooting_hard"}


class PowerActionTask(base.TaskBase):
    """One power action (``ACTIONS``): the compute's call, then the new
    states; a failure puts the task state back (None) and records the
    failed event."""

    def __init__(self, context, instance, action, reboot_type=None,
                 **collaborators):
        super().__init__(context, instance, **collaborators)
        (self.event_name, self.method, self.task_state, self.vm_state,
         self.power_state) = ACTIONS[action]
        self.reboot_args = ()
        self.reboot_type = reboot_type
        if action == "reboot":
            self.task_state = REBOOT_TASK_STATES[reboot_type]
            self.reboot_args = (reboot_type,)
        self.event = None

    def _execute(self):
        instance = self.instance
        self.event = base.Event(self.context, instance.uuid, self.event_name,
                                instance.host)
        self._did("put the task state back", self._reset_task_state,
                  self.task_state)
        kwargs = {}
        if self.reboot_type == "HARD" or self.method == "power_on_instance":
            kwargs = self._fresh_volumes_for_new_boot()
        getattr(self.compute_rpcapi, self.method)(self.context, instance,
                                                  *self.reboot_args, **kwargs)
        instance.vm_state = self.vm_state
        instance.power_state = self.power_state
        instance.task_state = None
        base.retry_transient(instance.save,
                             expected_task_state=[self.task_state])

    def _on_success(self):
        self.event.success()

    def rollback(self, error):
        LOG.warning("%s of %s failed: %s", self.event_name,
                    self.instance.uuid, error)
        super().rollback(error)
        if self.event is not None:
            self.event.failure(error)
