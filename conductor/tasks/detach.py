"""Detach a volume from a server."""
import logging

import oslo_messaging as messaging

from volattach import objects
from volattach.conductor.tasks import base
from volattach.objects.notification import notify_volume
from volattach import exception
from volattach import volume_release

LOG = logging.getLogger(__name__)

# task states of workflows that replace the server's attachments
MOVING_TASK_STATES = ("migrating", "shelving", "shelving_offloading")


class DetachVolumeTask(base.TaskBase):
    """Unplug on the compute, delete the attachment, destroy the record.

    The API made the volume ``detaching`` before the cast: that is this
    task's first step, whose undo rolls it back to in-use, so whatever
    fails before the unplug (the event's start included) leaves the volume
    attached.  Once unplugged the volume cannot go back: a failure of the
    release that follows is recorded, and the reconcile pass finds what it
    left.  Every database step waits out a database restart
    (``base.retry_transient``), every volume-service call a restart of the
    volume service (the Cinder client's own retries)."""

    def __init__(self, context, instance, volume_id, **collaborators):
        super().__init__(context, instance, **collaborators)
        self.volume_id = volume_id
        self.event = None
        self.bdm = None

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
            self._unplug(fresh)
        self._commit_steps()
        # an offload may swap the record's attachment meanwhile: the
        # release deletes whichever it holds before the record goes
        volume_release.release_volume_record(
            self.context, self.volume_api, self.bdm, volume_id=self.volume_id)

    def _on_success(self):
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

    def _unplug(self, instance):
        """The compute's detach, asked once more when the first call got no
        answer (a broker restart can lose it after the compute unplugged):
        rolled back to in-use, the volume would stay attached in the
        records and gone from the guest.  A second detach is safe: the
        drivers' detach of a device they do not have is a no-op, and it
        waits on the server's lock for a first one still running."""
        try:
            self.compute_rpcapi.detach_volume(self.context, instance, self.bdm)
        except messaging.MessagingTimeout as error:
            LOG.warning("detach of volume %s from %s got no answer (%s); "
                        "asking the compute again", self.volume_id,
                        self.instance.uuid, error)
            self.compute_rpcapi.detach_volume(self.context, instance, self.bdm)
