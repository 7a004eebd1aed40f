"""Detach a volume from a server; and the compute's confirmed unplug that
the reconcile pass uses to finish a detach left pending.

A compute that gives no answer (its service down per the servicegroup, or
``UNPLUG_ATTEMPTS`` calls of its detach without an answer) does not lose
the user's detach: the volume stays ``detaching``, its block-device record
and attachment stay, the instance action's ``compute_detach_volume`` event
says the detach is pending on an unreachable compute (``DetachPending``,
logged once at WARNING), and the reconcile pass (``conductor/reconcile.py``)
finishes it once the compute confirms the unplug.  Rolling it back would
be wrong both ways: the compute may have unplugged before its answer was
lost (the records would say attached, the guest would not have the disk),
and the user asked for the detach.  A compute that answers with an error
(a refusal: a device busy, a driver failure) rolls the detach back to
in-use, as before."""
import logging

import oslo_messaging as messaging

from volattach import objects
from volattach.conductor.tasks import base
from volattach.objects.notification import notify_volume
from volattach import exception
from volattach import servicegroup
from volattach import volume_release

LOG = logging.getLogger(__name__)

# task states of workflows that replace the server's attachments
MOVING_TASK_STATES = ("migrating", "shelving", "shelving_offloading")
# calls of the compute's detach before the compute counts as unreachable
UNPLUG_ATTEMPTS = 2
# what a call without an answer raises (volattach.rpc's RPCTimeout and
# RPCUndeliverable are these too)
NO_ANSWER = (messaging.MessagingTimeout, messaging.MessageDeliveryFailure)
# the text that starts a pending detach's event details (the reconcile
# pass looks for it, followed by the volume id)
PENDING_MARK = "detach pending of volume "


class ComputeUnreachable(exception.VolattachException):
    msg_fmt = "compute %(host)s does not answer: %(reason)s"


class DetachPending(exception.VolattachException):
    """What the event of a detach left to the reconcile pass says."""

    msg_fmt = (PENDING_MARK + "%(volume_id)s: %(reason)s; the reconcile "
               "pass finishes it once the compute answers")


def compute_is_down(context, host):
    """Whether ``host``'s compute service is down per the servicegroup (a
    host without a service row is asked all the same: its calls tell)."""
    service = base.retry_transient(objects.Service.get_by_host_and_binary,
                                   context, host, "volattach-compute")
    return service is not None and not servicegroup.is_up(service)


def unplug(context, compute_rpcapi, instance, bdm, attempts=UNPLUG_ATTEMPTS):
    """The compute's detach of ``bdm``, confirmed: returns once the compute
    answered.  Raises ``ComputeUnreachable`` when the compute's service is
    down, or when ``attempts`` calls got no answer; a refusal of the
    compute as it is.

    A call with no answer is asked again: a broker restart can lose the
    answer after the compute unplugged.  Asking again is safe: the
    drivers' detach of a device they do not have is a no-op, and it waits
    on the server's lock for a first one still running on the compute."""
    if compute_is_down(context, instance.host):
        raise ComputeUnreachable(host=instance.host,
                                 reason="its service is down")
    for attempt in range(1, attempts + 1):
        try:
            compute_rpcapi.detach_volume(context, instance, bdm)
            return
        except NO_ANSWER as error:
            last = error
            LOG.info("detach of volume %s from %s: no answer from %s "
                     "(attempt %d of %d): %s", bdm.volume_id, instance.uuid,
                     instance.host, attempt, attempts, error)
    raise ComputeUnreachable(
        host=instance.host, reason="no answer to %d detach calls (%s)"
        % (attempts, type(last).__name__))


class DetachVolumeTask(base.TaskBase):
    """Unplug on the compute, delete the attachment, destroy the record.

    The API made the volume ``detaching`` before the cast: that is this
    task's first step, whose undo rolls it back to in-use, so whatever
    fails before the unplug (the event's start included) leaves the volume
    attached.  A compute that does not answer leaves the detach pending
    (module docstring): nothing is rolled back, the event says so, the
    reconcile pass finishes it.  Once unplugged the volume cannot go back:
    a failure of the release that follows is recorded, and the reconcile
    pass finds what it left.  Every database step waits out a database
    restart (``base.retry_transient``), every volume-service call a restart
    of the volume service (the Cinder client's own retries)."""

    EVENTS = ("compute_detach_volume",)

    def __init__(self, context, instance, volume_id, **collaborators):
        super().__init__(context, instance, **collaborators)
        self.volume_id = volume_id
        self.event = None
        self.bdm = None
        self.pending = None

    def _execute(self):
        self._did("roll volume %s back to in-use" % self.volume_id,
                  self.volume_api.roll_detaching, self.context,
                  self.volume_id)
        self.event = base.Event(self.context, self.instance.uuid,
                                "compute_detach_volume", self.instance.host)
        notify_volume(self.context, "volume_detach", "start", self.instance,
                      self.volume_id)
        # a live migration or an offload that started since the API's
        # checks moves this record: refuse, as the API does once it sees
        # their task state
        fresh = base.retry_transient(objects.Instance.get_by_uuid,
                                     self.context, self.instance.uuid)
        if fresh.task_state in MOVING_TASK_STATES:
            raise exception.InstanceInvalidState(
                method="detach_volume", instance_uuid=self.instance.uuid,
                attr="task_state", state=fresh.task_state)
        self.bdm = base.retry_transient(
            objects.BlockDeviceMapping.get_by_volume_and_instance,
            self.context, self.volume_id, self.instance.uuid)
        if fresh.host:
            try:
                unplug(self.context, self.compute_rpcapi, fresh, self.bdm)
            except ComputeUnreachable as error:
                # neither undone nor done: left to the reconcile pass
                self._commit_steps()
                self.pending = DetachPending(volume_id=self.volume_id,
                                             reason=str(error))
                return
        self._commit_steps()
        # an offload may swap the record's attachment meanwhile: the
        # release deletes whichever it holds before the record goes
        volume_release.release_volume_record(
            self.context, self.volume_api, self.bdm, volume_id=self.volume_id)

    def _on_success(self):
        if self.pending is not None:
            LOG.warning("detach of volume %s from %s: %s", self.volume_id,
                        self.instance.uuid, self.pending)
            self.event.failure(self.pending)
            notify_volume(self.context, "volume_detach", "error",
                          self.instance, self.volume_id, [self.bdm],
                          error=self.pending)
            return
        self.event.success()
        notify_volume(self.context, "volume_detach", "end", self.instance,
                      self.volume_id, [self.bdm])

    def rollback(self, error):
        LOG.warning("detach of volume %s from %s failed: %s",
                    self.volume_id, self.instance.uuid, error)
        super().rollback(error)
        if self.event is not None:       # None: the database was away
            try:
                self.event.failure(error)
            except Exception:
                LOG.exception("could not record the failed detach of %s",
                              self.volume_id)
        notify_volume(self.context, "volume_detach", "error", self.instance,
                      self.volume_id, [self.bdm], error=error)
