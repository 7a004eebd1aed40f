"""Swap a server's volume for another (the new attachment reserved by the API)."""
import logging

from volattach import exception
from volattach import objects
from volattach.conductor.tasks import base
from volattach.objects.notification import notify_volume

LOG = logging.getLogger(__name__)


class SwapVolumeTask(base.TaskBase):
    """Move the record of ``old_volume_id`` onto the new volume's
    attachment (reserved by the API, which also made the old volume
    ``detaching``).

    Until the record moves, a failure deletes the new attachment, rolls the
    old volume back to in-use and tells a volume-service migration that
    the swap failed: the old volume stays attached as it was.  Once the
    record moved, a failure (the server deleted meanwhile) deletes both
    attachments and tells the migration.  Every database step waits out a
    database restart (``base.retry_transient``), every volume-service call
    a restart of the volume service (the Cinder client's own retries)."""

    EVENTS = ("compute_swap_volume",)

    def __init__(self, context, instance, old_volume_id, new_volume_id,
                 new_attachment_id, **collaborators):
        super().__init__(context, instance, **collaborators)
        self.old_volume_id = old_volume_id
        self.new_volume_id = new_volume_id
        self.new_attachment_id = new_attachment_id
        self.event = None
        self.bdm = None

    def _execute(self):
        # the API's steps: the new attachment, the old volume detaching
        self._did("tell the volume service the swap failed",
                  self._complete_volume_migration, None, error=True)
        self._did("roll volume %s back to in-use" % self.old_volume_id,
                  self.volume_api.roll_detaching, self.context,
                  self.old_volume_id)
        self._did("delete the new attachment %s" % self.new_attachment_id,
                  self._delete_attachment, self.new_attachment_id)
        self.event = base.Event(self.context, self.instance.uuid,
                                "compute_swap_volume", self.instance.host)
        notify_volume(self.context, "volume_swap", "start", self.instance,
                      self.old_volume_id, new_volume_id=self.new_volume_id)
        bdm = self.bdm = base.retry_transient(
            objects.BlockDeviceMapping.get_by_volume_and_instance,
            self.context, self.old_volume_id, self.instance.uuid)
        old_attachment_id = bdm.attachment_id
        new_connection_info = None
        if self.instance.host:
            attachment = self.volume_api.attachment_update(
                self.context, self.new_attachment_id,
                self._connector(self.instance.host, bdm.device_name,
                                bdm.attach_mode),
                mountpoint=bdm.device_name)
            base.check_compute_takes_key(self.context, self.instance.host,
                                         attachment.get("connection_info"))
            # the NEW volume's multiattach flag (<shareable/> or not)
            new_connection_info = self._connection_info(self.new_volume_id,
                                                         attachment)
            self.compute_rpcapi.swap_volume(self.context, self.instance, bdm,
                                            new_connection_info)
        self.volume_api.attachment_complete(self.context,
                                            self.new_attachment_id)
        bdm.volume_id = self.new_volume_id
        bdm.attachment_id = self.new_attachment_id
        bdm.set_connection_info(new_connection_info)
        if not self._save_over(bdm, old_attachment_id):
            # An offload that began after the API's checks moved the
            # record to a connector-less attachment of the old volume (and
            # removed the guest): the old volume stays.
            LOG.warning("swap of %s to %s on %s: the record moved to "
                        "attachment %s meanwhile", self.old_volume_id,
                        self.new_volume_id, self.instance.uuid,
                        bdm.attachment_id)
            raise exception.InstanceInvalidState(
                method="swap_volume", instance_uuid=self.instance.uuid,
                attr="attachment of volume %s" % self.old_volume_id,
                state=bdm.attachment_id)
        # The record moved: the old volume cannot be given back any more;
        # a failure from here releases both.
        self._commit_steps()
        self._did("tell the volume service the swap failed",
                  self._complete_volume_migration, None, error=True)
        self._did("delete the old attachment %s" % old_attachment_id,
                  self._delete_attachment, old_attachment_id)
        self._did("delete the new attachment %s" % self.new_attachment_id,
                  self._delete_attachment, self.new_attachment_id)
        # A delete that read the server's records before this save
        # releases the old attachment only: give the new volume back.
        self._check_server_kept("swap_volume")
        self._commit_steps()
        try:
            self._delete_attachment(old_attachment_id)
        except Exception:
            LOG.exception("could not delete attachment %s of the swapped "
                          "volume %s", old_attachment_id, self.old_volume_id)
        self._complete_volume_migration(bdm)

    def _on_success(self):
        self.event.success()
        notify_volume(self.context, "volume_swap", "end", self.instance,
                      self.old_volume_id, [self.bdm],
                      new_volume_id=self.new_volume_id)

    def rollback(self, error):
        LOG.warning("swap of %s to %s on %s failed: %s", self.old_volume_id,
                    self.new_volume_id, self.instance.uuid, error)
        super().rollback(error)
        if self.event is None:          # the database was away
            return
        self.event.failure(error)
        notify_volume(self.context, "volume_swap", "error", self.instance,
                      self.old_volume_id, [self.bdm],
                      new_volume_id=self.new_volume_id, error=error)

    def _save_over(self, bdm, old_attachment_id):
        """Save the record only while it holds the attachment the swap read
        (compare-and-swap); a retry after a lost reply finds its own write."""
        return (base.retry_transient(bdm.save_if_attachment, old_attachment_id)
                or bdm.attachment_id == self.new_attachment_id)

    def _complete_volume_migration(self, bdm, error=False):
        """A swap the volume service asked for (a retype or migration of the
        old volume, which then has a migration_status): tell it the swap is
        done (or failed: ``error``), and name in the record the volume id it
        keeps (Nova's migrate_volume_completion and save_volume_id)."""
        try:
            if not self.volume_api.get(
                    self.context, self.old_volume_id).get("migration_status"):
                return
            saved = self.volume_api.migrate_volume_completion(
                self.context, self.old_volume_id, self.new_volume_id,
                error=error)
        except Exception:
            LOG.exception("migration completion of %s to %s failed",
                          self.old_volume_id, self.new_volume_id)
            return
        if bdm is not None and saved != bdm.volume_id:
            bdm.volume_id = saved
            base.retry_transient(bdm.save)
