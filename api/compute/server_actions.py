"""Server actions: stop, start, pause, unpause, shelve, shelve offload,
unshelve, live migration, lock and unlock."""
import logging
import socket

from volattach import objects
from volattach.api.compute import base
from volattach.objects import instance as instance_obj
from volattach import availability_zones
from volattach import exception
from volattach import servicegroup

LOG = logging.getLogger(__name__)
SERVER_ACTIONS = base.SERVER_ACTIONS
RESET_STATES = {"active": instance_obj.ACTIVE, "error": instance_obj.ERROR}


class ServerActionsAPI(base.FacadeBase):

    def _start_action(self, context, instance, name):
        """Check lock, state and the conductor's version, set the action's
        task_state (compare-and-swap on task_state None) and record the
        instance action."""
        vm_states, task_state, action = SERVER_ACTIONS[name]
        self._check_locked(context, instance)
        self._check_state(instance, name, vm_states)
        self._check_conductor("%s_instance" % name)
        instance.task_state = task_state
        try:
            instance.save(expected_task_state=[None], expected_vm_state=list(vm_states))
        except (exception.UnexpectedTaskState, exception.UnexpectedVMState):
            fresh = objects.Instance.get_by_uuid(context, instance.uuid)
            self._check_state(fresh, name, vm_states)
            raise
        try:
            objects.InstanceAction.action_start(context, instance.uuid, action)
        except Exception as error:
            self._undo_task_state(context, instance, name, error,
                                  record=False)
            raise

    def _undo_task_state(self, context, instance, name, error, record=True):
        """The action never started: task_state goes back to None
        (compare-and-swap, so a conductor that did get it wins) and, with
        ``record``, the instance action gets a failed event."""
        task_state = SERVER_ACTIONS[name][1]
        LOG.warning("%s of %s not started, task_state %s undone: %s",
                    name, instance.uuid, task_state, error)
        try:
            instance.task_state = None
            instance.save(expected_task_state=[task_state])
            if record:
                objects.InstanceActionEvent.event_start(
                    context, instance.uuid, "api_%s" % name).finish(error)
        except Exception:
            LOG.exception("could not undo task_state %s of %s",
                          task_state, instance.uuid)

    def _send_action(self, context, instance, name, send, *args, **kwargs):
        """``send(context, instance, ...)``: the cast of an action whose
        task_state ``_start_action`` set.  When it cannot be sent (the bus
        is down) the action never started (``_undo_task_state``) and the
        error propagates."""
        try:
            send(context, instance, *args, **kwargs)
        except Exception as error:
            self._undo_task_state(context, instance, name, error)
            raise

    def stop(self, context, instance):
        self._start_action(context, instance, "stop")
        self._send_action(context, instance, "stop",
                          self.compute_task_api.stop_instance)

    def start(self, context, instance):
        self._start_action(context, instance, "start")
        self._send_action(context, instance, "start",
                          self.compute_task_api.start_instance)

    def get_console_output(self, context, instance, length=None):
        """The tail (``length`` lines, all when None or -1, as Nova) of the
        guest's console, asked of its compute; InstanceNotReady without a
        host."""
        from volattach.compute import rpcapi as compute_rpcapi
        if not instance.host:
            raise exception.InstanceNotReady(instance_id=instance.uuid)
        length = None if length is None or int(length) == -1 else int(length)
        return compute_rpcapi.ComputeAPI().get_console_output(
            context, instance, length)

    def pause(self, context, instance):
        self._start_action(context, instance, "pause")
        self._send_action(context, instance, "pause",
                          self.compute_task_api.pause_instance)

    def unpause(self, context, instance):
        self._start_action(context, instance, "unpause")
        self._send_action(context, instance, "unpause",
                          self.compute_task_api.unpause_instance)

    def _check_compute_for(self, context, instance, feature, minimum=None):
        """409 when the server's compute is older than service version
        ``minimum`` (compute RPC 1.6, suspend/resume/reboot, by default)."""
        from volattach.objects import service as service_obj
        if minimum is None:
            minimum = service_obj.SUSPEND_REBOOT_SERVICE_VERSION
        version = self._compute_version(context, instance.host)
        if instance.host and (version is None or version < minimum):
            raise exception.ComputeTooOldForFeature(host=instance.host,
                                                    feature=feature)

    def suspend(self, context, instance):
        self._check_compute_for(context, instance, "suspend")
        self._start_action(context, instance, "suspend")
        self._send_action(context, instance, "suspend",
                          self.compute_task_api.suspend_instance)

    def resume(self, context, instance):
        self._check_compute_for(context, instance, "resume")
        self._start_action(context, instance, "resume")
        self._send_action(context, instance, "resume",
                          self.compute_task_api.resume_instance)

    def reboot(self, context, instance, reboot_type):
        name = "reboot_hard" if reboot_type == "HARD" else "reboot"
        self._check_compute_for(context, instance, "reboot")
        self._start_action(context, instance, name)
        self._send_action(context, instance, name,
                          self.compute_task_api.reboot_instance, reboot_type)

    def rebuild(self, context, instance, image_ref, changes,
                reimage_boot_volume=False):
        """rebuild: the guest is re-created from ``image_ref`` on its host,
        its volumes stay attached (same attachments, same host), a stopped
        server stays stopped.  ``changes`` are Instance fields the request
        sets (name, metadata, access IPs, ...), saved with the task state.
        ``reimage_boot_volume`` (2.93): a volume-backed server's root
        volume is re-imaged with ``image_ref`` (any image, the same one
        too, as Nova does), by the conductor's ComputeTaskAPI 1.7 (503
        below).  400 (before anything changes) for an unknown image, an
        unknown key, or another image for a volume-backed server before
        2.93; 409 while locked, in another state, on a compute older than
        compute RPC 1.7, or for a root volume attached to other servers
        too (it cannot be re-imaged)."""
        from volattach.objects import service as service_obj
        self._check_locked(context, instance)
        self._check_state(instance, "rebuild", SERVER_ACTIONS["rebuild"][0])
        if not instance.host:
            raise exception.InstanceNotReady(instance_id=instance.uuid)
        self._check_image(image_ref, context, host=instance.host)
        if changes.get("key_name"):
            self.check_key_name(context, changes["key_name"])
        bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(context,
                                                                   instance.uuid)
        root = next((b for b in bdms if b.is_root and b.is_volume), None)
        reimage_image_id = None
        if root is not None:
            volume = self.volume_api.get(context, root.volume_id)
            current = (volume.get("volume_image_metadata") or {}).get("image_id")
            if reimage_boot_volume:
                if len(volume.get("attachments") or []) > 1:
                    raise exception.Conflict(
                        message="Cannot re-image a volume which is attached "
                                "to more than one server.")
                self._check_conductor("rebuild_instance_reimage")
                reimage_image_id = image_ref
            elif current != image_ref:
                raise exception.ImageUnacceptable(
                    image_id=image_ref,
                    reason="Unable to rebuild with a different image for a "
                           "volume-backed server.")
            image_ref = ""        # a volume-backed server shows no image
        self._check_compute_for(context, instance, "rebuild",
                                service_obj.REBUILD_SERVICE_VERSION)
        instance.image_ref = image_ref
        for name, value in changes.items():
            setattr(instance, name, value)
        self._start_action(context, instance, "rebuild")
        self._send_action(context, instance, "rebuild",
                          self.compute_task_api.rebuild_instance,
                          reimage_image_id=reimage_image_id)
        return instance

    def shelve(self, context, instance):
        from volattach.conf import CONF
        bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(context, instance.uuid)
        volume_backed = any(b.is_root and b.is_volume for b in bdms)
        offload = volume_backed or CONF.compute.shelved_offload_time == 0
        self._start_action(context, instance, "shelve")
        self._send_action(context, instance, "shelve",
                          self.compute_task_api.shelve_instance, offload)

    def shelve_offload(self, context, instance):
        self._start_action(context, instance, "shelve_offload")
        self._send_action(context, instance, "shelve_offload",
                          self.compute_task_api.shelve_offload_instance)

    def unshelve(self, context, instance, availability_zone=None, host=None):
        """400 (Nova's checks, before anything changes) for an availability
        zone that is not one (the zone of no compute; ``nova:host`` is not
        a zone) and for a ``host`` that is no compute."""
        if availability_zone is not None and (
                ":" in availability_zone
                or not availability_zones.zone_exists(context, availability_zone)):
            raise exception.InvalidRequest(
                message="The requested availability zone is not available")
        if host and objects.Service.get_by_host_and_binary(
                context.elevated(), host, "volattach-compute") is None:
            raise exception.InvalidRequest(
                message="Compute host %s could not be found." % host)
        if instance.vm_state == instance_obj.SHELVED_OFFLOADED:
            # the compute that receives it must honour its read-only volumes
            bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(context,
                                                                       instance.uuid)
            if any(b.is_volume and b.attach_mode == "ro" for b in bdms):
                self._check_read_only_computes(context)
        self._start_action(context, instance, "unshelve")
        if instance.vm_state == instance_obj.SHELVED_OFFLOADED and (availability_zone or host):
            # a host alone forces the host, in whatever zone it is
            instance.availability_zone = ("%s:%s" % (availability_zone or "", host)
                                          if host else availability_zone)
            instance.save()
        self._send_action(context, instance, "unshelve",
                          self.compute_task_api.unshelve_instance)

    def live_migrate(self, context, instance, host=None):
        """os-migrateLive: 400 for a destination that is the source or not
        an up compute, 409 when the source compute cannot live-migrate;
        the conductor picks a destination when ``host`` is None."""
        from volattach.objects import service as service_obj
        if host is not None:
            if host == instance.host:
                raise exception.InvalidRequest(
                    reason="The target host can't be the same one.")
            service = objects.Service.get_by_host_and_binary(
                context.elevated(), host, "volattach-compute")
            if (service is None or service.disabled
                    or not servicegroup.is_up(service)):
                raise exception.InvalidRequest(
                    reason="Compute service of %s is unavailable at this time."
                    % host)
            if service.version < service_obj.LIVE_MIGRATION_SERVICE_VERSION:
                raise exception.ComputeTooOldForFeature(host=host,
                                                        feature="live migration")
        self._check_state(instance, "live_migrate", SERVER_ACTIONS["live_migrate"][0])
        if host is not None:
            # a destination against the server group's hard policy: 400
            self.check_group_destination(context, instance, host)
        if instance.host:
            source = objects.Service.get_by_host_and_binary(
                context.elevated(), instance.host, "volattach-compute")
            if (source is not None
                    and source.version < service_obj.LIVE_MIGRATION_SERVICE_VERSION):
                raise exception.ComputeTooOldForFeature(host=instance.host,
                                                        feature="live migration")
        self._start_action(context, instance, "live_migrate")
        self._send_action(context, instance, "live_migrate",
                          self.compute_task_api.live_migrate_instance, host=host)

    def lock(self, context, instance, reason=None):
        """Lock the server (Nova: the owner locking it again changes
        nothing; otherwise the action ``lock`` with its ``api_lock`` event)."""
        is_owner = context.project_id == instance.project_id
        if instance.locked and is_owner:
            return
        instance.locked = True
        instance.locked_by = "admin" if (context.is_admin and not is_owner) else "owner"
        instance.locked_reason = reason
        self._save_in_api_action(context, instance, "lock")

    def unlock(self, context, instance):
        if (instance.locked and instance.locked_by == "admin"
                and not context.is_admin):
            raise exception.PolicyNotAuthorized(action="os_compute_api:os-lock-server:unlock")
        instance.locked = False
        instance.locked_by = None
        instance.locked_reason = None
        self._save_in_api_action(context, instance, "unlock")

    def reset_state(self, context, instance, state):
        """os-resetState: the admin's way out of a stuck task (Nova's): the
        server goes to ``state`` (``active`` or ``error``) with no task
        state, whatever it was doing; recorded as the action resetState."""
        objects.InstanceAction.action_start(context, instance.uuid, "resetState")
        instance.vm_state = RESET_STATES[state]
        instance.task_state = None
        instance.save()

    @staticmethod
    def _save_in_api_action(context, instance, action):
        """Save ``instance`` as the instance action ``action`` done here in
        the API (Nova's ``api_<action>`` event, on this API host)."""
        objects.InstanceAction.action_start(context, instance.uuid, action)
        event = objects.InstanceActionEvent.event_start(
            context, instance.uuid, "api_%s" % action, host=socket.gethostname())
        try:
            instance.save()
        except Exception as error:
            event.finish(error=error)
            raise
        event.finish()
