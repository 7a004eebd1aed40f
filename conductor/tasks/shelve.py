"""Shelve, offload and unshelve a server, moving its volumes' attachments
(one task each: ``ShelveTask``, ``ShelveOffloadTask``, ``UnshelveTask``)."""
import logging

from volattach import objects
from volattach.conductor.tasks import base
from volattach.db.models import utcnow
from volattach.objects import instance as instance_obj
from volattach import exception

LOG = logging.getLogger(__name__)


class ShelveTask(base.TaskBase):
    """Power the guest off and mark the server shelved; offload it at once
    when asked (volume-backed servers, shelved_offload_time = 0).  A
    failure puts the task state back (the guest stays as the compute left
    it)."""

    EVENTS = ("compute_shelve_instance",)

    def __init__(self, context, instance, offload, **collaborators):
        super().__init__(context, instance, **collaborators)
        self.offload = offload
        self.collaborators = collaborators
        self.event = None

    def _execute(self):
        instance = self.instance
        self.event = base.Event(self.context, instance.uuid,
                                "compute_shelve_instance", instance.host)
        self._did("put the task state back", self._reset_task_state,
                  "shelving")
        self.compute_rpcapi.power_off_instance(self.context, instance)
        instance.vm_state = instance_obj.SHELVED
        instance.power_state = instance_obj.SHUTDOWN
        instance.shelved_at = utcnow()
        instance.task_state = "shelving_offloading" if self.offload else None
        instance.save(expected_task_state=["shelving"])

    def _on_success(self):
        self.event.success()
        if self.offload:
            base.execute_cast(ShelveOffloadTask(self.context, self.instance,
                                                **self.collaborators))

    def rollback(self, error):
        LOG.warning("shelve of %s failed: %s", self.instance.uuid, error)
        super().rollback(error)
        if self.event is not None:
            self.event.failure(error)


class ShelveOffloadTask(base.TaskBase):
    """Remove the server from its host; each volume keeps a connector-less
    attachment (completed, so the volume still shows in-use).  A failure
    puts the task state back."""

    EVENTS = ("compute_shelve_offload_instance",)

    def __init__(self, context, instance, **collaborators):
        super().__init__(context, instance, **collaborators)
        self.event = None

    def _execute(self):
        instance = self.instance
        self.event = base.Event(self.context, instance.uuid,
                                "compute_shelve_offload_instance",
                                instance.host)
        self._did("put the task state back", self._reset_task_state,
                  "shelving_offloading")
        bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(
            self.context, instance.uuid)
        self.compute_rpcapi.terminate_instance(self.context, instance, bdms)
        for bdm in bdms:
            self._offload_volume(bdm)
        instance.host = None
        instance.node = None
        instance.vm_state = instance_obj.SHELVED_OFFLOADED
        instance.power_state = instance_obj.SHUTDOWN
        instance.task_state = None
        instance.save(expected_task_state=["shelving_offloading"])

    def _on_success(self):
        self.event.success()

    def rollback(self, error):
        LOG.warning("offload of %s failed: %s", self.instance.uuid, error)
        super().rollback(error)
        if self.event is not None:
            self.event.failure(error)

    # A record moved again between two tries (a swap per try) is not one
    # a user can make: past this, the offload fails and can be retried.
    OFFLOAD_VOLUME_TRIES = 5

    def _offload_volume(self, bdm):
        """Put a connector-less attachment (completed) in the record in place
        of its host's one.  The record is saved only while it holds the
        attachment read (compare-and-swap): a swap that moved it to another
        volume meanwhile gets that volume offloaded in turn; a detach that
        took it leaves nothing to do."""
        context, instance = self.context, self.instance
        for _ in range(self.OFFLOAD_VOLUME_TRIES):
            if not (bdm.is_volume and bdm.attachment_id):
                return
            new = self.volume_api.attachment_create(
                context, bdm.volume_id, instance.uuid,
                mode="ro" if bdm.attach_mode == "ro" else None)
            self.volume_api.attachment_complete(context, new["id"])
            old = bdm.attachment_id
            bdm.attachment_id = new["id"]
            bdm.connection_info = None
            try:
                saved = bdm.save_if_attachment(old)
            except exception.BDMNotFound:
                # a detach that was already under way took the record
                # (and the old attachment): the new one is nobody's
                LOG.info("offload of %s: volume %s was detached meanwhile",
                         instance.uuid, bdm.volume_id)
                self._delete_logged(new["id"])
                return
            if saved:
                self._delete_logged(old)
                return
            LOG.info("offload of %s: the record of %s moved to volume %s, "
                     "attachment %s, meanwhile", instance.uuid, old,
                     bdm.volume_id, bdm.attachment_id)
            self._delete_logged(new["id"])
        raise exception.InstanceInvalidState(
            method="shelve_offload", instance_uuid=instance.uuid,
            attr="attachment of volume %s" % bdm.volume_id, state=bdm.attachment_id)

    def _delete_logged(self, attachment_id):
        try:
            self._delete_attachment(attachment_id)
        except Exception:
            LOG.exception("could not delete attachment %s during the offload "
                          "of %s", attachment_id, self.instance.uuid)


class UnshelveTask(base.TaskBase):
    """Unshelve: a shelved server is powered on where it is, its volumes
    plugged from fresh connections as a start does; a
    shelved-offloaded one is scheduled, its volumes connected to the new
    host and its guest built there.  A failure puts the server back as it
    was (on no host for an offloaded one; task state None)."""

    EVENTS = ("compute_unshelve_instance",)

    def __init__(self, context, instance, **collaborators):
        super().__init__(context, instance, **collaborators)
        self.event = None

    def _execute(self):
        if self.instance.vm_state == instance_obj.SHELVED:
            self._power_on()
        else:
            self._build_elsewhere()

    def _power_on(self):
        instance = self.instance
        self.event = base.Event(self.context, instance.uuid,
                                "compute_unshelve_instance", instance.host)
        self._did("put the task state back", self._reset_task_state,
                  "unshelving")
        self.compute_rpcapi.power_on_instance(
            self.context, instance, **self._fresh_volumes_for_new_boot())
        instance.vm_state = instance_obj.ACTIVE
        instance.power_state = instance_obj.RUNNING
        instance.task_state = None
        base.retry_transient(instance.save, expected_task_state=["unshelving"])

    def _build_elsewhere(self):
        instance = self.instance
        host = base.schedule(self.context, instance, "unshelving")
        # a group member's host is already written (under the group's lock)
        self._did("put the server back on no host", self._unhost)
        self.event = base.Event(self.context, instance.uuid,
                                "compute_unshelve_instance", host)
        instance.host = host
        instance.node = host
        instance.save(expected_task_state=["unshelving"])
        bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(
            self.context, instance.uuid)
        bdms = self._assign_device_names(bdms)
        self._connect_volumes(host, bdms)
        self.compute_rpcapi.build_and_run_instance(self.context, instance,
                                                   bdms)
        self._complete_volumes(bdms)
        instance.vm_state = instance_obj.ACTIVE
        instance.power_state = instance_obj.RUNNING
        instance.task_state = None
        instance.save(expected_task_state=["unshelving"])

    def _unhost(self):
        self.instance.host = None
        self.instance.node = None
        self.instance.task_state = None
        self.instance.save(expected_task_state=["unshelving"])

    def _on_success(self):
        self.event.success()

    def rollback(self, error):
        LOG.warning("unshelve of %s failed: %s", self.instance.uuid, error)
        super().rollback(error)
        base.Event.failed(self.event, self.context, self.instance.uuid,
                          "compute_unshelve_instance", error)

    def _assign_device_names(self, bdms):
        """Ask the receiving compute to name new devices (compute RPC 1.1);
        an older compute cannot, so name them here as it would have."""
        if not any(b.is_volume and not b.device_name for b in bdms):
            return bdms
        if self.compute_rpcapi.can_send_version(self.instance.host, "1.1"):
            return self.compute_rpcapi.assign_device_names(
                self.context, self.instance, bdms)
        from volattach import device_naming
        mappings = [{"device_name": b.device_name, "boot_index": b.boot_index}
                    for b in bdms]
        device_naming.assign(mappings)
        for bdm, mapping in zip(bdms, mappings):
            if bdm.device_name != mapping["device_name"]:
                bdm.device_name = mapping["device_name"]
                bdm.save()
        return bdms
