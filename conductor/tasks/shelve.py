"""Shelve, offload and unshelve a server, moving its volumes' attachments."""
import logging

from volattach import objects
from volattach.conductor.tasks import base
from volattach.conductor import scheduler
from volattach.db.models import utcnow
from volattach.objects import instance as instance_obj
from volattach import exception

LOG = logging.getLogger(__name__)


class ShelveTask(base.ManagerTask):
    """Shelve (and offload), offload later, unshelve."""

    def shelve_instance(self, context, instance, offload):
        """Power the guest off and mark it shelved; offload at once when asked
        (volume-backed servers, shelved_offload_time = 0)."""
        event = base.Event(context, instance.uuid, "compute_shelve_instance", instance.host)
        try:
            self.compute_rpcapi.power_off_instance(context, instance)
            instance.vm_state = instance_obj.SHELVED
            instance.power_state = instance_obj.SHUTDOWN
            instance.shelved_at = utcnow()
            instance.task_state = "shelving_offloading" if offload else None
            instance.save(expected_task_state=["shelving"])
        except Exception as error:
            LOG.warning("shelve of %s failed: %s", instance.uuid, error)
            self._reset_task_state(instance, "shelving")
            event.failure(error)
            return
        event.success()
        if offload:
            self._offload(context, instance)

    def shelve_offload_instance(self, context, instance):
        self._offload(context, instance)

    def _offload(self, context, instance):
        """Remove the server from its host; each volume keeps a connector-less
        attachment (completed, so the volume still shows in-use)."""
        event = base.Event(context, instance.uuid, "compute_shelve_offload_instance",
                       instance.host)
        try:
            bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(context,
                                                                       instance.uuid)
            self.compute_rpcapi.terminate_instance(context, instance, bdms)
            for bdm in bdms:
                self._offload_volume(context, instance, bdm)
            instance.host = None
            instance.node = None
            instance.vm_state = instance_obj.SHELVED_OFFLOADED
            instance.power_state = instance_obj.SHUTDOWN
            instance.task_state = None
            instance.save(expected_task_state=["shelving_offloading"])
        except Exception as error:
            LOG.warning("offload of %s failed: %s", instance.uuid, error)
            self._reset_task_state(instance, "shelving_offloading")
            event.failure(error)
            return
        event.success()

    # A record moved again between two tries (a swap per try) is not one
    # a user can make: past this, the offload fails and can be retried.
    OFFLOAD_VOLUME_TRIES = 5

    def _offload_volume(self, context, instance, bdm):
        """Put a connector-less attachment (completed) in the record in place
        of its host's one.  The record is saved only while it holds the
        attachment read (compare-and-swap): a swap that moved it to another
        volume meanwhile gets that volume offloaded in turn; a detach that
        took it leaves nothing to do."""
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
                self._cleanup_attachment(context, new["id"])
                return
            if saved:
                self._cleanup_attachment(context, old)
                return
            LOG.info("offload of %s: the record of %s moved to volume %s, "
                     "attachment %s, meanwhile", instance.uuid, old,
                     bdm.volume_id, bdm.attachment_id)
            self._cleanup_attachment(context, new["id"])
        raise exception.InstanceInvalidState(
            method="shelve_offload", instance_uuid=instance.uuid,
            attr="attachment of volume %s" % bdm.volume_id, state=bdm.attachment_id)

    def unshelve_instance(self, context, instance):
        if instance.vm_state == instance_obj.SHELVED:
            self._power_action(context, instance, "compute_unshelve_instance",
                               self.compute_rpcapi.power_on_instance, "unshelving",
                               instance_obj.ACTIVE, instance_obj.RUNNING)
            return
        event = None
        try:
            host = scheduler.select_host(context, instance.availability_zone,
                                         base.min_version_for(context, instance))
            event = base.Event(context, instance.uuid, "compute_unshelve_instance", host)
            instance.host = host
            instance.node = host
            instance.save(expected_task_state=["unshelving"])
            bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(context,
                                                                       instance.uuid)
            bdms = self._assign_device_names(context, instance, bdms)
            self._connect_volumes(context, host, bdms)
            self.compute_rpcapi.build_and_run_instance(context, instance, bdms)
            self._complete_volumes(context, bdms)
            instance.vm_state = instance_obj.ACTIVE
            instance.power_state = instance_obj.RUNNING
            instance.task_state = None
            instance.save(expected_task_state=["unshelving"])
        except Exception as error:
            LOG.warning("unshelve of %s failed: %s", instance.uuid, error)
            try:
                instance.host = None
                instance.node = None
                instance.task_state = None
                instance.save(expected_task_state=["unshelving"])
            except Exception:
                LOG.exception("could not reset %s after a failed unshelve", instance.uuid)
            base.Event.failed(event, context, instance.uuid,
                              "compute_unshelve_instance", error)
            return
        event.success()

    def _assign_device_names(self, context, instance, bdms):
        """Ask the receiving compute to name new devices (compute RPC 1.1);
        an older compute cannot, so name them here as it would have."""
        if not any(b.is_volume and not b.device_name for b in bdms):
            return bdms
        if self.compute_rpcapi.can_send_version(instance.host, "1.1"):
            return self.compute_rpcapi.assign_device_names(context, instance, bdms)
        from volattach.compute import device_names
        mappings = [{"device_name": b.device_name, "boot_index": b.boot_index}
                    for b in bdms]
        device_names.assign(mappings)
        for bdm, mapping in zip(bdms, mappings):
            if bdm.device_name != mapping["device_name"]:
                bdm.device_name = mapping["device_name"]
                bdm.save()
        return bdms
