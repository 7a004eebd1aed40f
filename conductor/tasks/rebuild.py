"""Rebuild a server: its guest re-created from a new image on the same host,
its volumes left attached as they are; from compute API 2.93 a
volume-backed server's root volume is re-imaged by the volume service
(os-reimage) between its host's attachment and a new one."""
import logging

from volattach import objects
from volattach.conductor.tasks import base
from volattach.db.models import utcnow
from volattach.objects import instance as instance_obj
from volattach import exception

LOG = logging.getLogger(__name__)
# seconds the root volume may take to be re-imaged (os-reimage)
REIMAGE_TIMEOUT = 300.0


class RebuildTask(base.ManagerTask):
    """The rebuild action's workflow (Nova's rebuild on the same host)."""

    def rebuild_instance(self, context, instance, reimage_image_id=None):
        """The API saved the new image and fields with task_state
        ``rebuilding``; the compute destroys and spawns the guest with the
        server's volume connections, whose attachments stay as they are.
        A stopped server stays stopped, an active or errored one ends
        active.  A failure leaves the server in ERROR (the guest may be
        gone), as Nova does, with the volumes still attached.  A delete may
        interrupt a rebuild, as in Nova.  ``reimage_image_id``: the root
        volume gets that image first (``_reimage_and_spawn``)."""
        event = base.Event(context, instance.uuid, "compute_rebuild_instance",
                           instance.host)
        stopped = instance.vm_state == instance_obj.STOPPED
        bdms = None
        try:
            bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(
                context, instance.uuid)
            if reimage_image_id is None:
                self.compute_rpcapi.rebuild_instance(context, instance, bdms,
                                                     power_on=not stopped)
            else:
                self._reimage_and_spawn(context, instance, bdms,
                                        reimage_image_id, power_on=not stopped)
        except Exception as error:
            LOG.warning("rebuild of %s failed: %s", instance.uuid, error)
            try:
                instance.vm_state = instance_obj.ERROR
                instance.task_state = None
                instance.save(expected_task_state=["rebuilding"])
            except Exception:
                LOG.exception("could not put %s in ERROR", instance.uuid)
            event.failure(error)
            return
        instance.vm_state = instance_obj.STOPPED if stopped else instance_obj.ACTIVE
        instance.power_state = (instance_obj.SHUTDOWN if stopped
                                else instance_obj.RUNNING)
        instance.launched_at = utcnow()
        instance.task_state = None
        try:
            instance.save(expected_task_state=["rebuilding"])
        except (exception.UnexpectedTaskState, exception.InstanceNotFound) as error:
            # A delete interrupted the rebuild.  Its terminate may have run
            # before the spawn above (the compute serializes both under the
            # instance lock): the guest just spawned must not outlive the
            # server.
            LOG.info("%s was deleted during its rebuild: destroying the "
                     "rebuilt guest", instance.uuid)
            try:
                self.compute_rpcapi.terminate_instance(context, instance, bdms)
            except Exception:
                LOG.exception("could not destroy the rebuilt guest of %s",
                              instance.uuid)
            event.failure(error)
            return
        event.success()

    def _reimage_and_spawn(self, context, instance, bdms, image_id, power_on):
        """Nova's rebuild of a volume-backed server (2.93): the guest goes
        and the host lets go of its volumes; the root volume's host
        attachment gives way to a connector-less one (the volume is then
        ``reserved``), the volume service re-images it (os-reimage with
        reimage_reserved), the host connects it again with a new
        attachment and the guest is spawned with every volume.  A failure
        after the swap of attachments leaves the record on the new one
        (reserved, as for a shelved-offloaded server), never on a deleted
        one."""
        root = next(b for b in bdms if b.is_root and b.is_volume)
        self.compute_rpcapi.terminate_instance(context, instance, bdms)
        new = self.volume_api.attachment_create(
            context, root.volume_id, instance.uuid,
            mode="ro" if root.attach_mode == "ro" else None)
        old = root.attachment_id
        root.attachment_id = new["id"]
        root.connection_info = None
        try:
            saved = root.save_if_attachment(old)
        except exception.BDMNotFound:
            saved = False
        if not saved:
            self._cleanup_attachment(context, new["id"])
            raise exception.InstanceInvalidState(
                method="rebuild", instance_uuid=instance.uuid,
                attr="attachment of the root volume %s" % root.volume_id,
                state=old)
        self._cleanup_attachment(context, old)
        self.volume_api.reimage(context, root.volume_id, image_id,
                                reimage_reserved=True)
        # the fake backend answers once done; a real Cinder downloads first
        self.volume_api.wait_for_volume_status(
            context, root.volume_id, "reserved",
            timeout=REIMAGE_TIMEOUT)
        self._connect_volumes(context, instance.host, [root])
        self.compute_rpcapi.build_and_run_instance(context, instance, bdms)
        self._complete_volumes(context, [root])
        if not power_on:
            self.compute_rpcapi.power_off_instance(context, instance)
