"""Attach a volume to a server on a host."""
import logging

import oslo_messaging as messaging
from oslo_utils import uuidutils

from volattach import objects
from volattach.conductor.tasks import base
from volattach.conductor.tasks import detach as detach_task
from volattach.objects import block_device as block_device_obj
from volattach.objects.notification import notify_volume
from volattach import exception

LOG = logging.getLogger(__name__)


class AttachVolumeTask(base.TaskBase):
    """Reserve a device on the compute, attach in Cinder, plug on the host;
    ``execute()`` returns the device name.

    Each step records its undo (``base.TaskBase``); a failure undoes them
    in reverse (unplug, delete the attachment, destroy the record), records
    the failed event and is raised again (the caller of a cast only sees it
    in the instance action's failed event).  What a step whose answer was
    lost may have done is undone all the same:

    * the reserve: the record is made by the compute under a uuid chosen
      here (compute RPC 1.9); a reserve that failed without an answer (a
      broker restart lost the compute's reply, or the reply of the
      compute's own call that created the record) may still have made it,
      or may make it later (a request or the compute's creation held back
      in the broker, sent again once it is back): the rollback abandons
      that uuid (``BlockDeviceMapping.abandon_reservation``), which
      destroys the record if it exists and has a later creation refused.
      Left for the reconcile pass: the record of a compute older than 1.9;
    * the attachment_create: the Cinder client never sends it twice
      blindly (it asks the volume service whether a create cut off
      unanswered happened); when it gives up on the volume service
      (CinderConnectionFailed: the create may have happened without an
      answer) the rollback looks for the attachment of this server and
      volume and deletes it; a refused create is not looked for;
    * the compute's attach: one with no answer (MessagingTimeout) may have
      plugged the volume, so it is unplugged as one that answered (the
      unplug of a device a compute does not have is a no-op).

    ``multiattach``: the volume's flag as the API read it before the cast
    (conductor RPC 1.8), for the connection handed to the compute without
    a GET of the volume here; None (an API capped below 1.8) reads the
    volume as other workflows do.  The flag cannot change under the attach
    once its attachment exists (the volume service retypes only an
    available or in-use volume, and refuses a retype that changes the flag
    of an in-use one); a retype of the still available volume between the
    API's read and the attachment_create (a cast waiting in the queue
    included) would leave this connection with the old flag until the
    next fresh connection (a hard reboot, a start, an unshelve, a
    migration: those read the volume).
    """

    EVENTS = ("compute_attach_volume",)

    def __init__(self, context, instance, volume_id, device=None, tag=None,
                 delete_on_termination=False, attach_mode=None,
                 multiattach=None, **collaborators):
        super().__init__(context, instance, **collaborators)
        self.volume_id = volume_id
        self.device = device
        self.tag = tag
        self.delete_on_termination = delete_on_termination
        self.attach_mode = attach_mode or block_device_obj.DEFAULT_ATTACH_MODE
        self.multiattach = multiattach
        self.event = None
        self.bdm = None

    def _execute(self):
        self.event = base.Event(self.context, self.instance.uuid,
                                "compute_attach_volume", self.instance.host)
        notify_volume(self.context, "volume_attach", "start", self.instance,
                      self.volume_id)
        # the server as it is now, not as the API read it: a live
        # migration may have moved it since (every call below goes to its
        # host)
        self.instance = self._server_to_attach_to()
        bdm = self.bdm = self._reserve_block_device_name()
        # read again once the record exists: a migration that started
        # before this read is refused here (nothing is attached yet), one
        # that starts after it finds the record and refuses itself
        # (live_migrate.LiveMigrationTask._check_volumes_settled)
        self._server_to_attach_to(host=self.instance.host)
        attachment_id = self._create_attachment()
        attachment = self.volume_api.attachment_update(
            self.context, attachment_id,
            self._connector(self.instance.host, bdm.device_name,
                            self.attach_mode),
            mountpoint=bdm.device_name)
        # the volume service has the last word: a read-only volume attaches
        # ro whatever was asked (openstackclient's way to a read-only
        # attach: `openstack volume set --read-only`)
        if attachment.get("attach_mode") in block_device_obj.ATTACH_MODES:
            self.attach_mode = attachment["attach_mode"]
        base.check_compute_takes_key(self.context, self.instance.host,
                                     attachment.get("connection_info"))
        # One save of the attachment, its mode and its connection.  Until
        # it lands, the rollback has the attachment's id, and after a crash
        # the reconcile pass finds the attachment through its server (an
        # attachment no record points at) and the record through its
        # missing attachment_id.
        bdm.attachment_id = attachment_id
        bdm.attach_mode = self.attach_mode
        bdm.set_connection_info(
            self._connection_info(self.volume_id, attachment,
                                  multiattach=self.multiattach))
        base.retry_transient(bdm.save)
        # A delete that read the server's records before this one existed
        # cannot release it: give the volume back here.
        self._check_server_kept("attach_volume")
        with self._attempt("unplug volume %s" % self.volume_id,
                           self._unplug, unknown=messaging.MessagingTimeout):
            self.compute_rpcapi.attach_volume(self.context, self.instance,
                                              bdm, attach_mode=self.attach_mode)
        self.volume_api.attachment_complete(self.context, attachment_id)
        return bdm.device_name

    def _on_success(self):
        self.event.success()
        notify_volume(self.context, "volume_attach", "end", self.instance,
                      self.volume_id, [self.bdm])

    def rollback(self, error):
        LOG.warning("attach of volume %s to server %s failed: %s",
                    self.volume_id, self.instance.uuid, error)
        super().rollback(error)
        if self.event is None:          # failed before it began
            return
        self.event.failure(error)
        notify_volume(self.context, "volume_attach", "error", self.instance,
                      self.volume_id, [self.bdm], error=error)

    # -- the steps -----------------------------------------------------------

    def _server_to_attach_to(self, host=None):
        """The server read again; InstanceInvalidState (409 on a call) while
        a workflow that moves its volumes runs (live migration, shelve,
        offload: the API refuses an attach then, and one that passed its
        checks just before must not plug on a host the guest is leaving),
        when it is on no host, or, with ``host``, no longer on ``host``."""
        fresh = base.retry_transient(objects.Instance.get_by_uuid,
                                     self.context, self.instance.uuid)
        if fresh.task_state in detach_task.MOVING_TASK_STATES:
            raise exception.InstanceInvalidState(
                method="attach_volume", instance_uuid=self.instance.uuid,
                attr="task_state", state=fresh.task_state)
        if not fresh.host or (host is not None and fresh.host != host):
            raise exception.InstanceInvalidState(
                method="attach_volume", instance_uuid=self.instance.uuid,
                attr="host", state=fresh.host)
        return fresh

    def _reserve_block_device_name(self):
        """The new BDM, named and created by the server's compute under a
        uuid chosen here.  A compute of RPC 1.4 gets the server's mappings
        with the call (read here, in this process's database session) and
        needs one call back to the conductor instead of two.  The read
        waits out a database restart; the call is not retried (it creates
        the record), and whatever error it ends with, the record may exist:
        the undo looks for it by its uuid."""
        bdms = None
        if self.compute_rpcapi.sends_mappings_with_reserve(self.instance.host):
            bdms = base.retry_transient(
                objects.BlockDeviceMappingList.get_by_instance_uuid,
                self.context, self.instance.uuid)
        bdm_uuid = uuidutils.generate_uuid()
        with self._attempt("abandon record %s, reserved without an answer"
                           % bdm_uuid, self._destroy_unanswered_reserve,
                           bdm_uuid) as step:
            bdm = self.compute_rpcapi.reserve_block_device_name(
                self.context, self.instance, self.device, self.volume_id,
                tag=self.tag, delete_on_termination=self.delete_on_termination,
                bdms=bdms, bdm_uuid=bdm_uuid)
            step.undo_by("destroy record %s" % bdm_uuid,
                         base.retry_transient, bdm.destroy)
        return bdm

    def _create_attachment(self):
        """The id of a new attachment of the volume to the server (mode
        "ro" sent only for a read-only attach)."""
        mode = "ro" if self.attach_mode == "ro" else None
        with self._attempt("delete the attachment a create without an "
                           "answer may have made",
                           self._delete_unanswered_attachment,
                           unknown=exception.CinderConnectionFailed) as step:
            attachment_id = self.volume_api.attachment_create(
                self.context, self.volume_id, self.instance.uuid,
                mode=mode)["id"]
            step.undo_by("delete attachment %s" % attachment_id,
                         self._delete_attachment, attachment_id)
        return attachment_id

    # -- the undos -------------------------------------------------------------

    def _destroy_unanswered_reserve(self, bdm_uuid):
        """Abandon the record ``bdm_uuid`` of the server, whose reserve got
        no answer: destroyed if the reserve made it (it holds no
        attachment: only this workflow would have given it one), refused
        if the compute creates it later."""
        if base.retry_transient(
                objects.BlockDeviceMapping.abandon_reservation,
                self.context, self.instance.uuid, bdm_uuid):
            LOG.warning("the reserve of %s on %s made record %s without an "
                        "answer; destroyed it", self.volume_id,
                        self.instance.uuid, bdm_uuid)

    def _delete_unanswered_attachment(self):
        """Delete the attachment of this server and volume, if the volume
        service made one for a create whose answer never came."""
        found = self.volume_api.find_attachment(self.context, self.volume_id,
                                                self.instance.uuid)
        if found:
            self._delete_attachment(found["id"])

    def _unplug(self):
        self.compute_rpcapi.detach_volume(self.context, self.instance,
                                          self.bdm)
