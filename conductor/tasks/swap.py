"""Swap a server's volume for another (the new attachment reserved by the API)."""
import logging

from volattach import exception
from volattach import objects
from volattach.conductor.tasks import base
from volattach.objects.notification import notify_volume

LOG = logging.getLogger(__name__)


class SwapVolumeTask(base.ManagerTask):
    """Move a volume record onto the new volume's attachment.  Every step
    but the compute's swap waits out a restart of the database or the
    volume service (``base.retry_transient``)."""

    def swap_volume(self, context, instance, old_volume_id, new_volume_id,
                    new_attachment_id):
        """Move the BDM of ``old_volume_id`` onto the new volume's attachment
        (reserved by the API).  Any failure deletes the new attachment and
        leaves the old volume attached as it was."""
        event = base.Event(context, instance.uuid, "compute_swap_volume", instance.host)
        notify_volume(context, "volume_swap", "start", instance, old_volume_id,
                      new_volume_id=new_volume_id)
        bdm = None
        try:
            bdm = base.retry_transient(
                objects.BlockDeviceMapping.get_by_volume_and_instance,
                context, old_volume_id, instance.uuid)
            old_attachment_id = bdm.attachment_id
            new_connection_info = None
            if instance.host:
                connector = self._connector(context, instance.host, bdm.device_name,
                                            bdm.attach_mode)
                attachment = base.retry_transient(
                    self.volume_api.attachment_update,
                    context, new_attachment_id, connector, mountpoint=bdm.device_name)
                new_connection_info = attachment["connection_info"]
                self.compute_rpcapi.swap_volume(context, instance, bdm,
                                                new_connection_info)
            base.retry_transient(self.volume_api.attachment_complete,
                                 context, new_attachment_id)
        except Exception as error:
            LOG.warning("swap of %s to %s on %s failed: %s", old_volume_id,
                        new_volume_id, instance.uuid, error)
            self._fail(context, instance, event, bdm, old_volume_id,
                       new_volume_id, new_attachment_id, error)
            return
        try:
            bdm.volume_id = new_volume_id
            bdm.attachment_id = new_attachment_id
            bdm.set_connection_info(new_connection_info)
            if not self._save_over(bdm, old_attachment_id, new_attachment_id):
                # An offload that began after the API's checks moved the
                # record to a connector-less attachment of the old volume
                # (and removed the guest): the old volume stays.
                error = exception.InstanceInvalidState(
                    method="swap_volume", instance_uuid=instance.uuid,
                    attr="attachment of volume %s" % old_volume_id,
                    state=bdm.attachment_id)
                LOG.warning("swap of %s to %s on %s: the record moved to "
                            "attachment %s meanwhile", old_volume_id,
                            new_volume_id, instance.uuid, bdm.attachment_id)
                self._fail(context, instance, event, bdm, old_volume_id,
                           new_volume_id, new_attachment_id, error)
                return
            # A delete that read the server's records before this save
            # releases the old attachment only: give the new volume back.
            self._check_server_kept(context, instance, "swap_volume")
        except Exception as error:
            LOG.warning("server %s went away during the swap of %s to %s: %s",
                        instance.uuid, old_volume_id, new_volume_id, error)
            self._cleanup_attachment(context, new_attachment_id)
            self._cleanup_attachment(context, old_attachment_id)
            self._complete_volume_migration(context, None, old_volume_id,
                                            new_volume_id, error=True)
            event.failure(error)
            notify_volume(context, "volume_swap", "error", instance,
                          old_volume_id, [bdm], new_volume_id=new_volume_id,
                          error=error)
            return
        self._cleanup_attachment(context, old_attachment_id)
        self._complete_volume_migration(context, bdm, old_volume_id, new_volume_id)
        event.success()
        notify_volume(context, "volume_swap", "end", instance, old_volume_id, [bdm],
                      new_volume_id=new_volume_id)

    @staticmethod
    def _save_over(bdm, old_attachment_id, new_attachment_id):
        """Save the record only while it holds the attachment the swap read
        (compare-and-swap); a retry after a lost reply finds its own write."""
        return (base.retry_transient(bdm.save_if_attachment, old_attachment_id)
                or bdm.attachment_id == new_attachment_id)

    def _fail(self, context, instance, event, bdm, old_volume_id,
              new_volume_id, new_attachment_id, error):
        """Undo a swap that did not move the record: the new attachment goes,
        the old volume is in-use again, a volume-service migration is told."""
        self._cleanup_attachment(context, new_attachment_id)
        try:
            base.retry_transient(self.volume_api.roll_detaching,
                                 context, old_volume_id)
        except Exception:
            LOG.exception("roll_detaching of %s failed", old_volume_id)
        self._complete_volume_migration(context, None, old_volume_id, new_volume_id,
                                        error=True)
        event.failure(error)
        notify_volume(context, "volume_swap", "error", instance, old_volume_id,
                      [bdm], new_volume_id=new_volume_id, error=error)

    def _complete_volume_migration(self, context, bdm, old_volume_id, new_volume_id,
                                   error=False):
        """A swap the volume service asked for (a retype or migration of the
        old volume, which then has a migration_status): tell it the swap is
        done (or failed: ``error``), and name in the record the volume id it
        keeps (Nova's migrate_volume_completion and save_volume_id)."""
        try:
            if not base.retry_transient(self.volume_api.get, context,
                                        old_volume_id).get("migration_status"):
                return
            saved = self.volume_api.migrate_volume_completion(
                context, old_volume_id, new_volume_id, error=error)
        except Exception:
            LOG.exception("migration completion of %s to %s failed", old_volume_id,
                          new_volume_id)
            return
        if bdm is not None and saved != bdm.volume_id:
            bdm.volume_id = saved
            base.retry_transient(bdm.save)
