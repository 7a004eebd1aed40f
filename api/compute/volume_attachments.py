"""Volume attachments of a server: list, show, attach, detach, update
(delete_on_termination) and swap."""
import logging
import uuid as uuidlib

from volattach import objects
from volattach.api.compute import base
from volattach.objects import block_device as block_device_obj
from volattach.objects import instance as instance_obj
from volattach.objects import instance_action
from volattach import exception
from volattach import volume_release

LOG = logging.getLogger(__name__)

# os-begin_detaching refused while the volume went detaching -> in-use
# under another detach: asked again at most this many times in all
BEGIN_DETACHING_ATTEMPTS = 3


class VolumeAttachmentsAPI(base.FacadeBase):

    def list_volume_attachments(self, context, server_id):
        """``(project_id, rows)`` for GET os-volume_attachments: the server's
        project (for the policy check) and its volume mappings as read-only
        rows in id order (``objects.block_device.volume_attachment_rows``),
        the same mappings as ``get_volume_attachments`` without building
        objects.  404 as ``get`` for a missing or another project's server."""
        try:
            project_id, rows = block_device_obj.volume_attachment_rows(server_id)
        except exception.InstanceNotFound:
            raise exception.InstanceNotFound(instance_id=server_id)
        if not context.is_admin and project_id != context.project_id:
            raise exception.InstanceNotFound(instance_id=server_id)
        return project_id, rows

    def get_volume_attachments(self, context, instance, bdms=None):
        return [b for b in self._bdms(context, instance, bdms) if b.is_volume]

    def get_volume_attachment(self, context, instance, volume_id, bdms=None):
        if bdms is not None:
            # what the query below answers: the first mapping (id order)
            # of this volume on this server
            bdm = next((b for b in bdms if b.volume_id == volume_id), None)
        else:
            try:
                bdm = objects.BlockDeviceMapping.get_by_volume_and_instance(
                    context, volume_id, instance.uuid)
            except exception.VolumeBDMNotFound:
                bdm = None
        if bdm is None or not bdm.is_volume:
            raise exception.VolumeBDMNotFound(volume_id=volume_id)
        return bdm

    def attach_volume(self, context, instance, volume_id, device=None, tag=None,
                      delete_on_termination=False, supports_multiattach=False,
                      wait=True, allow_shelved=True,
                      attach_mode=block_device_obj.DEFAULT_ATTACH_MODE, bdms=None):
        """Attach a volume; returns the device name when ``wait`` (below
        2.101), None when the workflow is cast (2.101+).  ``allow_shelved``
        is False below microversion 2.20.  ``attach_mode`` ``ro`` (2.105)
        needs a compute that honours it (409 otherwise).  ``bdms``: the
        server's mappings as ``get_with_bdms`` read them (else read here)."""
        if attach_mode not in block_device_obj.ATTACH_MODES:
            raise exception.InvalidInput(reason="attach_mode must be ro or rw")
        self._check_locked(context, instance)
        self._check_state(instance, "attach_volume", self._volume_vm_states(allow_shelved))
        volume = self.volume_api.get(context, volume_id)
        if volume.get("multiattach") and not supports_multiattach:
            raise exception.MultiattachNotSupportedOldMicroversion()
        offloaded = instance.vm_state == instance_obj.SHELVED_OFFLOADED
        if offloaded and tag:
            raise exception.VolumeTaggedAttachToShelvedNotSupported()
        if offloaded and volume.get("multiattach"):
            raise exception.MultiattachToShelvedNotSupported()
        for bdm in self._bdms(context, instance, bdms):
            if bdm.volume_id == volume_id:
                raise exception.InvalidVolume(reason="volume %s already attached" % volume_id)
        self._check_volume_attachable(volume)
        if offloaded:
            return self._attach_volume_offloaded(context, instance, volume_id,
                                                 delete_on_termination, attach_mode)
        if not self._host_is_up(context, instance.host):
            raise exception.ServiceUnavailableConflict(host=instance.host)
        if attach_mode == "ro":
            self._check_read_only_compute(context, instance.host)
        self._check_conductor("attach_volume_read_only" if attach_mode == "ro"
                              else "attach_volume")
        objects.InstanceAction.action_start(context, instance.uuid,
                                            instance_action.ATTACH_VOLUME)
        return self.compute_task_api.attach_volume(
            context, instance, volume_id, device=device, tag=tag,
            delete_on_termination=delete_on_termination, do_cast=not wait,
            attach_mode=attach_mode,
            # the flag read above goes with the message (conductor RPC
            # 1.8): the conductor need not read the volume again for it
            multiattach=volume.get("multiattach"))

    def _attach_volume_offloaded(self, context, instance, volume_id,
                                 delete_on_termination,
                                 attach_mode=block_device_obj.DEFAULT_ATTACH_MODE):
        """Attach to a server on no host, here in the API: a BDM without a
        device name and a completed connector-less attachment.  The compute
        that receives the server at unshelve names the device and connects."""
        objects.InstanceAction.action_start(context, instance.uuid,
                                            instance_action.ATTACH_VOLUME)
        bdm = objects.BlockDeviceMapping(
            context, uuid=str(uuidlib.uuid4()), instance_uuid=instance.uuid,
            source_type="volume", destination_type="volume", volume_id=volume_id,
            device_name=None, boot_index=None,
            delete_on_termination=bool(delete_on_termination), attach_mode=attach_mode)
        bdm.create()
        attachment_id = None
        try:
            attachment_id = self.volume_api.attachment_create(
                context, volume_id, instance.uuid,
                mode="ro" if attach_mode == "ro" else None)["id"]
            bdm.attachment_id = attachment_id
            bdm.save()
            self.volume_api.attachment_complete(context, attachment_id)
        except Exception:
            if attachment_id:
                try:
                    self.volume_api.attachment_delete(context, attachment_id)
                except Exception:
                    LOG.exception("rollback of attachment %s failed", attachment_id)
            bdm.destroy()
            raise
        return None

    def detach_volume(self, context, instance, volume_id, allow_shelved=True, bdms=None):
        self._check_locked(context, instance)
        self._check_state(instance, "detach_volume", self._volume_vm_states(allow_shelved))
        bdm = self.get_volume_attachment(context, instance, volume_id, bdms=bdms)
        if bdm.is_root:
            raise exception.CannotDetachRootVolume()
        if instance.vm_state == instance_obj.SHELVED_OFFLOADED:
            objects.InstanceAction.action_start(context, instance.uuid,
                                                instance_action.DETACH_VOLUME)
            volume_release.release_instance_volumes(
                context, self.volume_api, [_keep_volume(bdm)])
            return
        if not bdm.attachment_id or not bdm.connection_info:
            raise exception.Conflict(reason="the attachment of volume %s is still in "
                                            "progress" % volume_id)
        if instance.host and not self._host_is_up(context, instance.host):
            raise exception.ServiceUnavailableConflict(host=instance.host)
        self._check_conductor("detach_volume")
        # recorded first: the database may fail here, and nothing has
        # changed yet (after begin_detaching it would leave the volume
        # detaching, and undoing that needs the volume service's database)
        objects.InstanceAction.action_start(context, instance.uuid,
                                            instance_action.DETACH_VOLUME)
        began = self._begin_detaching(context, volume_id, bdm.attachment_id)
        try:
            self.compute_task_api.detach_volume(context, instance, volume_id)
        except Exception:
            if began:
                self.volume_api.roll_detaching(context, volume_id)
            raise

    def _begin_detaching(self, context, volume_id, attachment_id):
        """os-begin_detaching for a detach; False when it was skipped.

        Cinder lets one detach at a time make a volume ``detaching``: while
        a detach of another attachment of the same multiattach volume holds
        it, Cinder answers 400 (measured on Cinder 29), where Nova fails.
        That detach touches none of this attachment, so this one goes on
        without the state (and must not roll back the other's); each
        attachment delete sets the volume's status from the attachments
        left.  A volume back to in-use meanwhile (the other detach ended)
        is asked again, ``BEGIN_DETACHING_ATTEMPTS`` times at most."""
        for attempt in range(BEGIN_DETACHING_ATTEMPTS):
            try:
                self.volume_api.begin_detaching(context, volume_id)
                return True
            except exception.InvalidVolume:
                volume = self.volume_api.get(context, volume_id)
                others = [a for a in volume.get("attachments") or []
                          if a.get("attachment_id") != attachment_id]
                if (volume.get("multiattach") and others
                        and volume.get("status") == "detaching"):
                    LOG.info("volume %s is detaching from another server: "
                             "detaching attachment %s without "
                             "os-begin_detaching", volume_id, attachment_id)
                    return False
                if (volume.get("status") != "in-use"
                        or attempt + 1 == BEGIN_DETACHING_ATTEMPTS):
                    raise

    def update_volume_attachment(self, context, instance, volume_id, delete_on_termination):
        self._check_locked(context, instance)
        bdm = self.get_volume_attachment(context, instance, volume_id)
        bdm.delete_on_termination = bool(delete_on_termination)
        bdm.save()

    def swap_volume(self, context, instance, old_volume_id, new_volume_id):
        """Swap (PUT with another volumeId; admin or service role, checked by
        the API's policy): the new volume takes over the old one's device,
        tag and delete_on_termination; the old attachment is deleted."""
        self._check_locked(context, instance)
        self._check_state(instance, "swap_volume", base.SWAP_VM_STATES)
        bdm = self.get_volume_attachment(context, instance, old_volume_id)
        if not bdm.attachment_id:
            raise exception.Conflict(reason="the attachment of volume %s is still in "
                                            "progress" % old_volume_id)
        old_volume = self.volume_api.get(context, old_volume_id)
        # OSSN-0094: only the volume service may drive a swap, as the last
        # step of a retype or migration it started on the source volume.
        if not old_volume.get("migration_status"):
            raise exception.SwapOutsideMigration(volume_id=old_volume_id)
        new_volume = self.volume_api.get(context, new_volume_id)
        if old_volume.get("multiattach") and len(old_volume.get("attachments") or []) > 1:
            raise exception.InvalidVolume(reason="Swapping multi-attach volumes with "
                                                 "more than one read/write attachment "
                                                 "is not supported.")
        if new_volume.get("status") != "available":
            raise exception.InvalidVolume(reason="new volume %s status must be "
                                                 "available, but is %s" % (
                                                     new_volume_id, new_volume.get("status")))
        if instance.host and not self._host_is_up(context, instance.host):
            raise exception.ServiceUnavailableConflict(host=instance.host)
        self._check_conductor("swap_volume")
        # recorded before anything changes, as the detach's
        objects.InstanceAction.action_start(context, instance.uuid,
                                            instance_action.SWAP_VOLUME)
        self.volume_api.begin_detaching(context, old_volume_id)
        try:
            # the new volume keeps the old one's attach mode
            new_attachment_id = self.volume_api.attachment_create(
                context, new_volume_id, instance.uuid,
                mode="ro" if bdm.attach_mode == "ro" else None)["id"]
        except Exception:
            self.volume_api.roll_detaching(context, old_volume_id)
            raise
        try:
            self.compute_task_api.swap_volume(context, instance, old_volume_id,
                                              new_volume_id, new_attachment_id)
        except Exception:
            self.volume_api.attachment_delete(context, new_attachment_id)
            self.volume_api.roll_detaching(context, old_volume_id)
            raise


def _keep_volume(bdm):
    """A BDM for release_instance_volumes that never deletes the volume
    (detach keeps it, whatever delete_on_termination says)."""
    bdm.delete_on_termination = False
    return bdm
