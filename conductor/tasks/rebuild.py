"""Rebuild a server: its guest re-created from a new image on the same host,
its volumes left attached as they are; from compute API 2.93 a
volume-backed server's root volume is re-imaged by the volume service
(os-reimage) between its host's attachment and a new one."""
import logging

from volattach import objects
from volattach.conductor import instance_events
from volattach.conductor.tasks import base
from volattach.conf import CONF
from volattach.db.models import utcnow
from volattach.objects import instance as instance_obj
from volattach import exception

LOG = logging.getLogger(__name__)
# the size an image counts for in Nova's reimage_timeout_per_gb: there is
# no image service to tell it (the images here are a kernel and an
# initramfs, under 1 GiB, which Nova rounds up to 1)
IMAGE_GIB = 1


class RebuildTask(base.TaskBase):
    """The rebuild action's workflow (Nova's rebuild on the same host).

    The API saved the new image and fields with task_state ``rebuilding``;
    the compute destroys and spawns the guest with the server's volume
    connections, whose attachments stay as they are.  A stopped server
    stays stopped, an active or errored one ends active.  A failure
    leaves the server in ERROR (the guest may be gone), as Nova does, with
    the volumes still attached.  A delete may interrupt a rebuild, as in
    Nova: the guest spawned for a server deleted meanwhile is destroyed.
    ``reimage_image_id``: the root volume gets that image first
    (``_reimage_and_spawn``)."""

    def __init__(self, context, instance, reimage_image_id=None,
                 **collaborators):
        super().__init__(context, instance, **collaborators)
        self.reimage_image_id = reimage_image_id
        self.event = None

    def _execute(self):
        instance = self.instance
        self.event = base.Event(self.context, instance.uuid,
                                "compute_rebuild_instance", instance.host)
        stopped = instance.vm_state == instance_obj.STOPPED
        self._did("put the server in ERROR", self._put_in_error)
        bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(
            self.context, instance.uuid)
        if self.reimage_image_id is None:
            self.compute_rpcapi.rebuild_instance(self.context, instance, bdms,
                                                 power_on=not stopped)
        else:
            self._reimage_and_spawn(bdms, power_on=not stopped)
        # the guest is rebuilt: the server is not put in ERROR any more
        self._commit_steps()
        instance.vm_state = (instance_obj.STOPPED if stopped
                             else instance_obj.ACTIVE)
        instance.power_state = (instance_obj.SHUTDOWN if stopped
                                else instance_obj.RUNNING)
        instance.launched_at = utcnow()
        instance.task_state = None
        try:
            instance.save(expected_task_state=["rebuilding"])
        except (exception.UnexpectedTaskState, exception.InstanceNotFound):
            # A delete interrupted the rebuild.  Its terminate may have run
            # before the spawn above (the compute serializes both under the
            # instance lock): the guest just spawned must not outlive the
            # server.
            LOG.info("%s was deleted during its rebuild: destroying the "
                     "rebuilt guest", instance.uuid)
            self._did("destroy the rebuilt guest",
                      self.compute_rpcapi.terminate_instance, self.context,
                      instance, bdms)
            raise

    def _on_success(self):
        self.event.success()

    def rollback(self, error):
        LOG.warning("rebuild of %s failed: %s", self.instance.uuid, error)
        super().rollback(error)
        self.event.failure(error)

    def _put_in_error(self):
        self.instance.vm_state = instance_obj.ERROR
        self.instance.task_state = None
        self.instance.save(expected_task_state=["rebuilding"])

    def _reimage_and_spawn(self, bdms, power_on):
        """Nova's rebuild of a volume-backed server (2.93): the guest goes
        and the host lets go of its volumes; the root volume's host
        attachment gives way to a connector-less one (the volume is then
        ``reserved``), the volume service re-images it (os-reimage with
        reimage_reserved), the host connects it again with a new
        attachment and the guest is spawned with every volume.  A failure
        after the swap of attachments leaves the record on the new one
        (reserved, as for a shelved-offloaded server), never on a deleted
        one."""
        context, instance = self.context, self.instance
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
            self._delete_logged(new["id"])
            raise exception.InstanceInvalidState(
                method="rebuild", instance_uuid=instance.uuid,
                attr="attachment of the root volume %s" % root.volume_id,
                state=old)
        self._delete_logged(old)
        self._reimage(root.volume_id)
        self._connect_volumes(instance.host, [root])
        self.compute_rpcapi.build_and_run_instance(context, instance, bdms)
        self._complete_volumes([root])
        if not power_on:
            self.compute_rpcapi.power_off_instance(context, instance)

    def _reimage(self, volume_id):
        """os-reimage, then wait for the volume service's volume-reimaged
        event (registered before the call, so that an event that comes
        back at once is not missed), as Nova's compute does: up to
        ``reimage_timeout_per_gb`` seconds per GiB of the image
        (EventWaitTimeout), a failed event raising EventFailed."""
        waiter = instance_events.EVENTS.prepare(
            self.instance.uuid, "volume-reimaged", volume_id)
        try:
            self.volume_api.reimage(self.context, volume_id,
                                    self.reimage_image_id,
                                    reimage_reserved=True)
            waiter.wait(CONF.reimage_timeout_per_gb * IMAGE_GIB)
        finally:
            instance_events.EVENTS.forget(waiter)

    def _delete_logged(self, attachment_id):
        try:
            self._delete_attachment(attachment_id)
        except Exception:
            LOG.exception("could not delete attachment %s during the "
                          "rebuild of %s", attachment_id, self.instance.uuid)
