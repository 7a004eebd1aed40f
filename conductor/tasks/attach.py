"""Attach a volume to a server on a host."""
import logging

import oslo_messaging as messaging
from oslo_utils import uuidutils

from volattach import objects
from volattach.conductor.tasks import base
from volattach.conductor.tasks import detach as detach_task
from volattach.objects.notification import notify_volume
from volattach import exception

LOG = logging.getLogger(__name__)


class AttachVolumeTask(base.TaskBase):
    """Reserve the device, create and connect the attachment, plug."""

    def attach_volume(self, context, instance, volume_id, device=None, tag=None,
                      delete_on_termination=False, attach_mode=None):
        """Reserve a device on the compute, attach in Cinder, plug on the host.

        Returns the device name.  Any failure undoes the completed steps and
        is re-raised (the caller of a cast only sees it in the instance
        action's failed event).

        The record is made by the compute under a uuid chosen here (compute
        RPC 1.9): a reserve that failed without an answer (a broker restart
        lost the compute's reply, or the reply of the compute's own call
        that created the record) may still have made it, and the rollback
        destroys it by that uuid.  Left for the reconcile pass: a reserve
        that a compute runs only after this call gave up, and the record of
        a compute older than 1.9.  An attach on the compute that got no
        answer is unplugged again, as one that answered.
        """
        event = base.Event(context, instance.uuid, "compute_attach_volume", instance.host)
        notify_volume(context, "volume_attach", "start", instance, volume_id)
        bdm = attachment_id = None
        bdm_uuid = uuidutils.generate_uuid()
        create_sent = plugged = False
        try:
            # the server as it is now, not as the API read it: a live
            # migration may have moved it since (every call below goes to
            # its host)
            instance = self._server_to_attach_to(context, instance)
            bdm = self._reserve_block_device_name(
                context, instance, device, volume_id, tag, delete_on_termination,
                bdm_uuid)
            # read again once the record exists: a migration that started
            # before this read is refused here (nothing is attached yet),
            # one that starts after it finds the record and refuses itself
            # (live_migrate.LiveMigrationTask._check_volumes_settled)
            self._server_to_attach_to(context, instance, host=instance.host)
            attach_mode = attach_mode or "rw"
            create_sent = True
            attachment = self._create_attachment(
                context, volume_id, instance.uuid,
                mode=attach_mode if attach_mode == "ro" else None)
            attachment_id = attachment["id"]
            connector = self._connector(context, instance.host, bdm.device_name,
                                        attach_mode)
            attachment = base.retry_transient(
                self.volume_api.attachment_update,
                context, attachment_id, connector, mountpoint=bdm.device_name)
            # the volume service has the last word: a read-only volume
            # attaches ro whatever was asked (openstackclient's way to a
            # read-only attach: `openstack volume set --read-only`)
            if attachment.get("attach_mode") in ("ro", "rw"):
                attach_mode = attachment["attach_mode"]
            # One save of the attachment, its mode and its connection.
            # Until it lands, the rollback below has the attachment's id,
            # and after a crash the reconcile pass finds the attachment
            # through its server (an attachment no record points at) and
            # the record through its missing attachment_id.
            bdm.attachment_id = attachment_id
            bdm.attach_mode = attach_mode
            bdm.set_connection_info(attachment["connection_info"])
            base.retry_transient(bdm.save)
            # A delete that read the server's records before this one
            # existed cannot release it: give the volume back here.
            self._check_server_kept(context, instance, "attach_volume")
            try:
                self.compute_rpcapi.attach_volume(context, instance, bdm,
                                                  attach_mode=attach_mode)
            except messaging.MessagingTimeout:
                # no answer: the compute may have plugged it all the same,
                # and its unplug of a device it does not have is a no-op
                plugged = True
                raise
            plugged = True
            base.retry_transient(self.volume_api.attachment_complete,
                                 context, attachment_id)
        except Exception as error:
            LOG.warning("attach of volume %s to server %s failed: %s",
                        volume_id, instance.uuid, error)
            if plugged:
                try:
                    self.compute_rpcapi.detach_volume(context, instance, bdm)
                except Exception:
                    LOG.exception("unplug during rollback failed")
            if (create_sent and not attachment_id
                    and isinstance(error, base.TRANSIENT_ERRORS)):
                # the create may have happened without an answer
                attachment_id = self._find_attachment(context, volume_id,
                                                      instance.uuid)
            if attachment_id:
                self._cleanup_attachment(context, attachment_id)
            if bdm is not None:
                try:
                    base.retry_transient(bdm.destroy)
                except Exception:
                    LOG.exception("could not destroy BDM during rollback")
            else:
                self._destroy_unanswered_reserve(context, instance, bdm_uuid)
            event.failure(error)
            notify_volume(context, "volume_attach", "error", instance, volume_id,
                          [bdm], error=error)
            raise
        event.success()
        notify_volume(context, "volume_attach", "end", instance, volume_id, [bdm])
        return bdm.device_name

    @staticmethod
    def _server_to_attach_to(context, instance, host=None):
        """The server read again; InstanceInvalidState (409 on a call) while
        a workflow that moves its volumes runs (live migration, shelve,
        offload: the API refuses an attach then, and one that passed its
        checks just before must not plug on a host the guest is leaving),
        when it is on no host, or, with ``host``, no longer on ``host``."""
        fresh = base.retry_transient(objects.Instance.get_by_uuid, context,
                                     instance.uuid)
        if fresh.task_state in detach_task.MOVING_TASK_STATES:
            raise exception.InstanceInvalidState(
                method="attach_volume", instance_uuid=instance.uuid,
                attr="task_state", state=fresh.task_state)
        if not fresh.host or (host is not None and fresh.host != host):
            raise exception.InstanceInvalidState(
                method="attach_volume", instance_uuid=instance.uuid,
                attr="host", state=fresh.host)
        return fresh

    def _create_attachment(self, context, volume_id, instance_uuid, mode):
        """``attachment_create``, tried again while the volume service is
        unavailable; never sent twice blindly: before another try, the
        volume service is asked (the attachments of this server and volume)
        whether the earlier one happened, and that attachment is taken."""
        tries = []

        def create():
            if tries:
                found = self.volume_api.find_attachment(context, volume_id,
                                                        instance_uuid)
                if found is not None:
                    LOG.info("attachment_create of volume %s for %s had "
                             "happened: using attachment %s", volume_id,
                             instance_uuid, found["id"])
                    return found
            tries.append(1)
            return self.volume_api.attachment_create(
                context, volume_id, instance_uuid, mode=mode)
        return base.retry_transient(create)

    def _find_attachment(self, context, volume_id, instance_uuid):
        """The id of the attachment of this server and volume, or None
        (also when the volume service cannot tell)."""
        try:
            found = base.retry_transient(self.volume_api.find_attachment,
                                         context, volume_id, instance_uuid)
        except Exception:
            LOG.exception("could not look for the attachment of volume %s "
                          "to %s during rollback", volume_id, instance_uuid)
            return None
        return found["id"] if found else None

    @staticmethod
    def _destroy_unanswered_reserve(context, instance, bdm_uuid):
        """Destroy the record ``bdm_uuid`` of ``instance`` if a reserve whose
        answer never came made it (it holds no attachment: only this
        workflow would have given it one)."""
        try:
            made = [b for b in base.retry_transient(
                objects.BlockDeviceMappingList.get_by_instance_uuid,
                context, instance.uuid) if b.uuid == bdm_uuid]
            for bdm in made:
                LOG.warning("the reserve of %s on %s made record %s without "
                            "an answer; destroying it", bdm.volume_id,
                            instance.uuid, bdm_uuid)
                base.retry_transient(bdm.destroy_if_attachment, None)
        except Exception:
            LOG.exception("could not look for record %s of %s during rollback",
                          bdm_uuid, instance.uuid)

    def _reserve_block_device_name(self, context, instance, device, volume_id,
                                   tag, delete_on_termination, bdm_uuid):
        """The new BDM, named and created by the server's compute.  A compute
        of RPC 1.4 gets the server's mappings with the call (read here, in
        this process's database session) and needs one call back to the
        conductor instead of two.  The read waits out a database restart;
        the call is not retried (it creates the record)."""
        bdms = None
        if self.compute_rpcapi.sends_mappings_with_reserve(instance.host):
            bdms = base.retry_transient(
                objects.BlockDeviceMappingList.get_by_instance_uuid,
                context, instance.uuid)
        return self.compute_rpcapi.reserve_block_device_name(
            context, instance, device, volume_id, tag=tag,
            delete_on_termination=delete_on_termination, bdms=bdms,
            bdm_uuid=bdm_uuid)
