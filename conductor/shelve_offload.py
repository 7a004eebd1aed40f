"""Offload shelved servers once ``[compute] shelved_offload_time`` has passed.

Shelving offloads at once when that option is 0 (and always for a
volume-backed server); with a positive value the server stays on its host,
powered off, until this periodic pass in the conductor finds it shelved for
longer than that and runs the same offload workflow.  -1 never offloads.
Claiming a server is a compare-and-swap on its task state, so two conductors
never offload the same server twice.
"""
import logging
import threading
import uuid

from volattach import objects
from volattach.db.models import utcnow
from volattach.objects import instance as instance_obj
from volattach import context as volattach_context
from volattach import exception
from volattach.conf import CONF

LOG = logging.getLogger(__name__)


def offload_expired(context, task_manager, now=None):
    """Offload every shelved server past its time; returns their uuids."""
    delay = CONF.compute.shelved_offload_time
    if delay <= 0:
        return []
    now = now or utcnow()
    offloaded = []
    for instance in objects.InstanceList.get_by_filters(
            context, {"vm_state": instance_obj.SHELVED}):
        if instance.task_state is not None or instance.shelved_at is None:
            continue
        shelved_at = instance.shelved_at.replace(tzinfo=None)
        if (now - shelved_at).total_seconds() < delay:
            continue
        instance.task_state = "shelving_offloading"
        try:
            instance.save(expected_task_state=[None],
                          expected_vm_state=[instance_obj.SHELVED])
        except (exception.UnexpectedTaskState, exception.UnexpectedVMState,
                exception.InstanceNotFound):
            continue
        objects.InstanceAction.action_start(context, instance.uuid, "shelveOffload")
        LOG.info("offloading %s, shelved since %s", instance.uuid, shelved_at)
        task_manager.shelve_offload_instance(context, instance)
        offloaded.append(instance.uuid)
    return offloaded


class PeriodicShelvedOffloader:
    """A daemon thread running ``offload_expired`` (every ``shelved_offload_time``
    seconds, at most every minute) while that option is positive."""

    def __init__(self, task_manager):
        self.task_manager = task_manager
        self._stop = threading.Event()
        self._thread = None

    def start(self):
        delay = CONF.compute.shelved_offload_time
        if delay <= 0:
            return
        interval = max(1, min(60, delay))
        self._thread = threading.Thread(target=self._loop, args=(interval,),
                                        daemon=True, name="shelved-offload")
        self._thread.start()

    def _loop(self, interval):
        while not self._stop.wait(interval):
            context = volattach_context.get_admin_context(
                request_id="req-" + str(uuid.uuid4()))
            try:
                offload_expired(context, self.task_manager)
            except Exception:
                LOG.exception("shelved offload pass failed")

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
