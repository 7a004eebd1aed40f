"""Conductor endpoints: object proxying for computes, and the workflows.

Every workflow records an instance-action event and undoes, in reverse, the
steps it completed when a later step fails: no BDM without its attachment,
no attachment without its BDM, no volume left reserved.
"""
import logging
import socket

import oslo_messaging as messaging
from oslo_utils import versionutils

from volattach import objects
from volattach.compute import rpcapi as compute_rpcapi
from volattach.conductor import connectors
from volattach.conductor import scheduler
from volattach.db.models import utcnow
from volattach.objects import base as objects_base
from volattach.objects import instance as instance_obj
from volattach.objects.notification import notify_volume
from volattach import exception

LOG = logging.getLogger(__name__)


class ConductorManager:
    """Object indirection: computes read and save objects through here."""

    target = messaging.Target(version="1.0")

    def object_class_action_versions(self, context, objname, objmethod,
                                     object_versions, args, kwargs):
        objclass = objects_base.VolattachObject.obj_class_from_name(
            objname, object_versions[objname])
        result = getattr(objclass, objmethod)(context, *args, **kwargs)
        if isinstance(result, objects_base.VolattachObject):
            wanted = versionutils.convert_version_to_tuple(object_versions[objname])
            have = versionutils.convert_version_to_tuple(result.VERSION)
            if wanted < have or wanted[0] != have[0]:
                return result.obj_to_primitive(target_version=object_versions[objname],
                                               version_manifest=object_versions)
        return result

    def object_action(self, context, objinst, objmethod, args, kwargs):
        before = objinst.obj_clone()
        result = getattr(objinst, objmethod)(*args, **kwargs)
        updates = {}
        for name, field in objinst.fields.items():
            if not objinst.obj_attr_is_set(name):
                continue
            if (not before.obj_attr_is_set(name)
                    or getattr(before, name) != getattr(objinst, name)):
                updates[name] = field.to_primitive(objinst, name, getattr(objinst, name))
        updates["obj_what_changed"] = objinst.obj_what_changed()
        return updates, result

    def object_backport_versions(self, context, objinst, object_versions):
        return objinst.obj_to_primitive(
            target_version=object_versions[objinst.obj_name()],
            version_manifest=object_versions)


class _Event:
    """Records one instance-action event around a workflow step, on the
    host where it runs: the server's compute, or this conductor's host when
    the server is on none (os-instance-actions shows it from 2.62)."""

    def __init__(self, context, instance_uuid, name, host=None):
        self.event = objects.InstanceActionEvent.event_start(
            context, instance_uuid, name, host=host or socket.gethostname())

    def success(self):
        self.event.finish()

    def failure(self, error):
        self.event.finish(error=error)

    @classmethod
    def failed(cls, event, context, instance_uuid, name, error):
        """Fail ``event``, or, when the step failed before it had a host to
        start its event on (scheduling), an event ``name`` on this host."""
        (event or cls(context, instance_uuid, name)).failure(error)


def _min_version_for(context, instance):
    """The compute service version a host needs for ``instance``'s volumes:
    read-only ones need computes that honour attach_mode."""
    from volattach.objects import service as service_obj
    bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(context, instance.uuid)
    if any(b.is_volume and b.attach_mode == "ro" for b in bdms):
        return service_obj.READ_ONLY_ATTACH_SERVICE_VERSION
    return None


class ComputeTaskManager:
    """Workflows started by the compute API."""

    target = messaging.Target(namespace="compute_task", version="1.4")

    def __init__(self, volume_api=None):
        if volume_api is None:
            from volattach.volume import cinder
            volume_api = cinder.VolumeAPI()
        self.compute_rpcapi = compute_rpcapi.ComputeAPI()
        self.volume_api = volume_api
        # the computes' connectors, read a moment ago (conductor.connectors)
        self._connectors = connectors.ConnectorCache()

    # -- helpers ------------------------------------------------------------------
    def _connector(self, context, host, device_name=None, attach_mode=None):
        """The host connector of a compute, with the mountpoint and the
        attach mode (the way the multiattach-enhancements spec passes the
        mode to Cinder) of one volume."""
        connector = self._connectors.get(
            host, lambda: objects.Service.get_by_host_and_binary(
                context.elevated(), host, compute_rpcapi.BINARY))
        if connector is None:
            raise exception.ComputeHostNotFound(host=host)
        if device_name:
            connector["mountpoint"] = device_name
        connector["mode"] = attach_mode or "rw"
        return connector

    def _connect_volumes(self, context, host, bdms):
        """attachment_update of every reserved volume BDM with ``host``'s
        connector (build and unshelve); saves the connection_info."""
        for bdm in bdms:
            if bdm.is_volume and bdm.attachment_id:
                connector = self._connector(context, host, bdm.device_name,
                                            bdm.attach_mode)
                attachment = self.volume_api.attachment_update(
                    context, bdm.attachment_id, connector,
                    mountpoint=bdm.device_name)
                bdm.set_connection_info(attachment["connection_info"])
                bdm.save()

    def _complete_volumes(self, context, bdms):
        for bdm in bdms:
            if bdm.is_volume and bdm.attachment_id:
                self.volume_api.attachment_complete(context, bdm.attachment_id)

    def _cleanup_attachment(self, context, attachment_id):
        try:
            self.volume_api.attachment_delete(context, attachment_id)
        except exception.VolumeAttachmentNotFound:
            pass
        except Exception:
            LOG.exception("could not delete attachment %s during rollback",
                          attachment_id)

    # -- attach -----------------------------------------------------------------------
    def attach_volume(self, context, instance, volume_id, device=None, tag=None,
                      delete_on_termination=False, attach_mode=None):
        """Reserve a device on the compute, attach in Cinder, plug on the host.

        Returns the device name.  Any failure undoes the completed steps and
        is re-raised (the caller of a cast only sees it in the instance
        action's failed event).
        """
        event = _Event(context, instance.uuid, "compute_attach_volume", instance.host)
        notify_volume(context, "volume_attach", "start", instance, volume_id)
        bdm = attachment_id = None
        plugged = False
        try:
            bdm = self._reserve_block_device_name(
                context, instance, device, volume_id, tag, delete_on_termination)
            attach_mode = attach_mode or "rw"
            attachment = self.volume_api.attachment_create(
                context, volume_id, instance.uuid,
                mode=attach_mode if attach_mode == "ro" else None)
            attachment_id = attachment["id"]
            connector = self._connector(context, instance.host, bdm.device_name,
                                        attach_mode)
            attachment = self.volume_api.attachment_update(
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
            bdm.save()
            self.compute_rpcapi.attach_volume(context, instance, bdm,
                                              attach_mode=attach_mode)
            plugged = True
            self.volume_api.attachment_complete(context, attachment_id)
        except Exception as error:
            LOG.warning("attach of volume %s to server %s failed: %s",
                        volume_id, instance.uuid, error)
            if plugged:
                try:
                    self.compute_rpcapi.detach_volume(context, instance, bdm)
                except Exception:
                    LOG.exception("unplug during rollback failed")
            if attachment_id:
                self._cleanup_attachment(context, attachment_id)
            if bdm is not None:
                try:
                    bdm.destroy()
                except Exception:
                    LOG.exception("could not destroy BDM during rollback")
            event.failure(error)
            notify_volume(context, "volume_attach", "error", instance, volume_id,
                          [bdm], error=error)
            raise
        event.success()
        notify_volume(context, "volume_attach", "end", instance, volume_id, [bdm])
        return bdm.device_name

    def _reserve_block_device_name(self, context, instance, device, volume_id,
                                   tag, delete_on_termination):
        """The new BDM, named and created by the server's compute.  A compute
        of RPC 1.4 gets the server's mappings with the call (read here, in
        this process's database session) and needs one call back to the
        conductor instead of two."""
        bdms = None
        if self.compute_rpcapi.sends_mappings_with_reserve(instance.host):
            bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(
                context, instance.uuid)
        return self.compute_rpcapi.reserve_block_device_name(
            context, instance, device, volume_id, tag=tag,
            delete_on_termination=delete_on_termination, bdms=bdms)

    # -- detach -----------------------------------------------------------------------
    def detach_volume(self, context, instance, volume_id):
        """Unplug on the compute, delete the attachment, destroy the BDM."""
        event = _Event(context, instance.uuid, "compute_detach_volume", instance.host)
        notify_volume(context, "volume_detach", "start", instance, volume_id)
        bdm = None
        try:
            bdm = objects.BlockDeviceMapping.get_by_volume_and_instance(
                context, volume_id, instance.uuid)
            if instance.host:
                self.compute_rpcapi.detach_volume(context, instance, bdm)
        except Exception as error:
            LOG.warning("detach of volume %s from %s failed: %s",
                        volume_id, instance.uuid, error)
            try:
                self.volume_api.roll_detaching(context, volume_id)
            except Exception:
                LOG.exception("roll_detaching failed")
            event.failure(error)
            notify_volume(context, "volume_detach", "error", instance, volume_id,
                          [bdm], error=error)
            return
        try:
            if bdm.attachment_id:
                try:
                    self.volume_api.attachment_delete(context, bdm.attachment_id)
                except exception.VolumeAttachmentNotFound:
                    pass
            bdm.destroy()
        except Exception as error:
            LOG.exception("detach of volume %s: cleanup failed", volume_id)
            event.failure(error)
            notify_volume(context, "volume_detach", "error", instance, volume_id,
                          [bdm], error=error)
            return
        event.success()
        notify_volume(context, "volume_detach", "end", instance, volume_id, [bdm])

    # -- build ------------------------------------------------------------------------
    def build_instances(self, context, instances):
        for instance in instances:
            self._build_one(context, instance)

    def _build_one(self, context, instance):
        event = None
        try:
            host = scheduler.select_host(context, instance.availability_zone,
                                         _min_version_for(context, instance))
            event = _Event(context, instance.uuid, "compute_build_and_run_instance",
                           host)
            instance.host = host
            instance.node = host
            instance.task_state = "spawning"
            instance.save(expected_task_state=["scheduling"])
            bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(
                context, instance.uuid)
            self._connect_volumes(context, host, bdms)
            self.compute_rpcapi.build_and_run_instance(context, instance, bdms)
            self._complete_volumes(context, bdms)
            instance.vm_state = instance_obj.ACTIVE
            instance.power_state = instance_obj.RUNNING
            instance.task_state = None
            instance.launched_at = utcnow()
            instance.save(expected_task_state=["spawning"])
        except exception.UnexpectedTaskState as error:
            # deleted or changed while building: the delete owns the cleanup
            LOG.info("build of %s interrupted: %s", instance.uuid, error)
            _Event.failed(event, context, instance.uuid,
                          "compute_build_and_run_instance", error)
            return
        except exception.InstanceNotFound as error:
            _Event.failed(event, context, instance.uuid,
                          "compute_build_and_run_instance", error)
            return
        except Exception as error:
            LOG.warning("build of %s failed: %s", instance.uuid, error)
            try:
                instance.vm_state = instance_obj.ERROR
                instance.task_state = None
                instance.fault = {"code": 500 if not isinstance(
                    error, exception.NoValidHost) else 500,
                    "message": (error.format_message()
                                if isinstance(error, exception.VolattachException)
                                else str(error)) or error.__class__.__name__,
                    "created": utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")}
                instance.save()
            except Exception:
                LOG.exception("could not put %s in ERROR", instance.uuid)
            _Event.failed(event, context, instance.uuid,
                          "compute_build_and_run_instance", error)
            return
        event.success()

    # -- power and pause ------------------------------------------------------------------
    def _power_action(self, context, instance, event_name, compute_call,
                      task_state, vm_state, power_state):
        """Run one host-local state change and land the new states, or put
        the server back as it was (task_state None) on failure."""
        event = _Event(context, instance.uuid, event_name, instance.host)
        try:
            compute_call(context, instance)
            instance.vm_state = vm_state
            instance.power_state = power_state
            instance.task_state = None
            instance.save(expected_task_state=[task_state])
        except Exception as error:
            LOG.warning("%s of %s failed: %s", event_name, instance.uuid, error)
            self._reset_task_state(instance, task_state)
            event.failure(error)
            return
        event.success()

    @staticmethod
    def _reset_task_state(instance, task_state):
        try:
            instance.task_state = None
            instance.save(expected_task_state=[task_state])
        except Exception:
            LOG.exception("could not reset the task state of %s", instance.uuid)

    def stop_instance(self, context, instance):
        self._power_action(context, instance, "compute_stop_instance",
                           self.compute_rpcapi.power_off_instance, "powering-off",
                           instance_obj.STOPPED, instance_obj.SHUTDOWN)

    def start_instance(self, context, instance):
        self._power_action(context, instance, "compute_start_instance",
                           self.compute_rpcapi.power_on_instance, "powering-on",
                           instance_obj.ACTIVE, instance_obj.RUNNING)

    def pause_instance(self, context, instance):
        self._power_action(context, instance, "compute_pause_instance",
                           self.compute_rpcapi.pause_instance, "pausing",
                           instance_obj.PAUSED, instance_obj.PAUSED_POWER)

    def unpause_instance(self, context, instance):
        self._power_action(context, instance, "compute_unpause_instance",
                           self.compute_rpcapi.unpause_instance, "unpausing",
                           instance_obj.ACTIVE, instance_obj.RUNNING)

    # -- shelve ------------------------------------------------------------------------------
    def shelve_instance(self, context, instance, offload):
        """Power the guest off and mark it shelved; offload at once when asked
        (volume-backed servers, shelved_offload_time = 0)."""
        event = _Event(context, instance.uuid, "compute_shelve_instance", instance.host)
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
        event = _Event(context, instance.uuid, "compute_shelve_offload_instance",
                       instance.host)
        try:
            bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(context,
                                                                       instance.uuid)
            self.compute_rpcapi.terminate_instance(context, instance, bdms)
            for bdm in bdms:
                if not (bdm.is_volume and bdm.attachment_id):
                    continue
                new = self.volume_api.attachment_create(
                    context, bdm.volume_id, instance.uuid,
                    mode="ro" if bdm.attach_mode == "ro" else None)
                self.volume_api.attachment_complete(context, new["id"])
                old = bdm.attachment_id
                bdm.attachment_id = new["id"]
                bdm.connection_info = None
                bdm.save()
                self._cleanup_attachment(context, old)
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

    def unshelve_instance(self, context, instance):
        if instance.vm_state == instance_obj.SHELVED:
            self._power_action(context, instance, "compute_unshelve_instance",
                               self.compute_rpcapi.power_on_instance, "unshelving",
                               instance_obj.ACTIVE, instance_obj.RUNNING)
            return
        event = None
        try:
            host = scheduler.select_host(context, instance.availability_zone,
                                         _min_version_for(context, instance))
            event = _Event(context, instance.uuid, "compute_unshelve_instance", host)
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
            _Event.failed(event, context, instance.uuid, "compute_unshelve_instance", error)
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

    # -- swap ---------------------------------------------------------------------------------
    def swap_volume(self, context, instance, old_volume_id, new_volume_id,
                    new_attachment_id):
        """Move the BDM of ``old_volume_id`` onto the new volume's attachment
        (reserved by the API).  Any failure deletes the new attachment and
        leaves the old volume attached as it was."""
        event = _Event(context, instance.uuid, "compute_swap_volume", instance.host)
        notify_volume(context, "volume_swap", "start", instance, old_volume_id,
                      new_volume_id=new_volume_id)
        bdm = None
        try:
            bdm = objects.BlockDeviceMapping.get_by_volume_and_instance(
                context, old_volume_id, instance.uuid)
            old_attachment_id = bdm.attachment_id
            new_connection_info = None
            if instance.host:
                connector = self._connector(context, instance.host, bdm.device_name,
                                            bdm.attach_mode)
                attachment = self.volume_api.attachment_update(
                    context, new_attachment_id, connector, mountpoint=bdm.device_name)
                new_connection_info = attachment["connection_info"]
                self.compute_rpcapi.swap_volume(context, instance, bdm,
                                                new_connection_info)
            self.volume_api.attachment_complete(context, new_attachment_id)
        except Exception as error:
            LOG.warning("swap of %s to %s on %s failed: %s", old_volume_id,
                        new_volume_id, instance.uuid, error)
            self._cleanup_attachment(context, new_attachment_id)
            try:
                self.volume_api.roll_detaching(context, old_volume_id)
            except Exception:
                LOG.exception("roll_detaching of %s failed", old_volume_id)
            self._complete_volume_migration(context, None, old_volume_id, new_volume_id,
                                            error=True)
            event.failure(error)
            notify_volume(context, "volume_swap", "error", instance, old_volume_id,
                          [bdm], new_volume_id=new_volume_id, error=error)
            return
        bdm.volume_id = new_volume_id
        bdm.attachment_id = new_attachment_id
        bdm.set_connection_info(new_connection_info)
        bdm.save()
        self._cleanup_attachment(context, old_attachment_id)
        self._complete_volume_migration(context, bdm, old_volume_id, new_volume_id)
        event.success()
        notify_volume(context, "volume_swap", "end", instance, old_volume_id, [bdm],
                      new_volume_id=new_volume_id)

    def _complete_volume_migration(self, context, bdm, old_volume_id, new_volume_id,
                                   error=False):
        """A swap the volume service asked for (a retype or migration of the
        old volume, which then has a migration_status): tell it the swap is
        done (or failed: ``error``), and name in the record the volume id it
        keeps (Nova's migrate_volume_completion and save_volume_id)."""
        try:
            if not self.volume_api.get(context, old_volume_id).get("migration_status"):
                return
            saved = self.volume_api.migrate_volume_completion(
                context, old_volume_id, new_volume_id, error=error)
        except Exception:
            LOG.exception("migration completion of %s to %s failed", old_volume_id,
                          new_volume_id)
            return
        if bdm is not None and saved != bdm.volume_id:
            bdm.volume_id = saved
            bdm.save()

    # -- live migration ---------------------------------------------------------------
    def live_migrate_instance(self, context, instance, host=None):
        """Move the running server to ``host`` (or one the scheduler picks).

        For each volume a second attachment of the same server, connected
        with the destination's connector and the same attach mode; then the
        destination connects them, the source moves the guest, the guest
        runs on the destination, the source forgets it and disconnects the
        old connections; only then are the BDMs switched and the source
        attachments deleted.  Any failure before the switch deletes the
        destination attachments, disconnects them there, and leaves the
        server on the source as it was (task_state None).
        """
        from volattach.objects import service as service_obj
        source = instance.host
        dest = None
        new_attachments = {}      # bdm uuid -> new attachment id
        new_bdms = []
        dest_touched = False
        step = "compute_live_migration_select_destination"
        event = None
        try:
            if not source:
                raise exception.InstanceInvalidState(
                    method="live_migrate", instance_uuid=instance.uuid,
                    attr="host", state=None)
            minimum = max(_min_version_for(context, instance) or 0,
                          service_obj.LIVE_MIGRATION_SERVICE_VERSION)
            dest = scheduler.select_host(context, ":%s" % host if host else None,
                                         minimum, exclude=(source,))
            for name in (source, dest):
                if not self.compute_rpcapi.can_send_version(name, "1.3"):
                    raise exception.ComputeTooOldForFeature(
                        host=name, feature="live migration")
            source_service = objects.Service.get_by_host_and_binary(
                context.elevated(), source, compute_rpcapi.BINARY)
            if source_service is None or (
                    source_service.version < service_obj.LIVE_MIGRATION_SERVICE_VERSION):
                raise exception.ComputeTooOldForFeature(host=source,
                                                        feature="live migration")

            step = "compute_live_migration_attach_destination"
            event = _Event(context, instance.uuid, step, dest)
            bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(
                context, instance.uuid)
            old_bdms = [b for b in bdms if b.is_volume and b.attachment_id]
            for bdm in old_bdms:
                mode = bdm.attach_mode or "rw"
                attachment = self.volume_api.attachment_create(
                    context, bdm.volume_id, instance.uuid,
                    mode="ro" if mode == "ro" else None)
                new_attachments[bdm.uuid] = attachment["id"]
                connector = self._connector(context, dest, bdm.device_name, mode)
                attachment = self.volume_api.attachment_update(
                    context, attachment["id"], connector, mountpoint=bdm.device_name)
                new = bdm.obj_clone()
                new.attachment_id = attachment["id"]
                new.set_connection_info(attachment["connection_info"])
                new.obj_reset_changes()
                new_bdms.append(new)
            event.success()

            step = "compute_pre_live_migration"
            event = _Event(context, instance.uuid, step, dest)
            self.compute_rpcapi.pre_live_migration(context, instance, new_bdms, dest)
            dest_touched = True
            event.success()

            step = "compute_live_migration"
            event = _Event(context, instance.uuid, step, source)
            self.compute_rpcapi.live_migration(context, instance, dest)
            self.compute_rpcapi.post_live_migration_at_destination(
                context, instance, new_bdms, dest)
            event.success()

            step = "compute_post_live_migration_at_source"
            event = _Event(context, instance.uuid, step, source)
            self.compute_rpcapi.post_live_migration_at_source(context, instance,
                                                              old_bdms)
        except Exception as error:
            LOG.warning("live migration of %s from %s to %s failed at %s: %s",
                        instance.uuid, source, dest, step, error)
            if dest_touched:
                try:
                    self.compute_rpcapi.rollback_live_migration_at_destination(
                        context, instance, new_bdms, dest)
                except Exception:
                    LOG.exception("rollback at %s failed", dest)
            for attachment_id in new_attachments.values():
                self._cleanup_attachment(context, attachment_id)
            self._reset_task_state(instance, "migrating")
            _Event.failed(event, context, instance.uuid, step, error)
            return
        # the switch is done: the server runs on dest with the new attachments
        for bdm in old_bdms:
            old_attachment_id = bdm.attachment_id
            new = next(b for b in new_bdms if b.uuid == bdm.uuid)
            try:
                self.volume_api.attachment_complete(context, new.attachment_id)
            except Exception:
                LOG.exception("attachment_complete of %s failed", new.attachment_id)
            bdm.attachment_id = new.attachment_id
            bdm.connection_info = new.connection_info
            bdm.save()
            self._cleanup_attachment(context, old_attachment_id)
        try:
            instance.host = dest
            instance.node = dest
            instance.task_state = None
            instance.save(expected_task_state=["migrating"])
        except Exception as error:
            LOG.exception("could not record %s on %s", instance.uuid, dest)
            event.failure(error)
            return
        event.success()

    # -- delete ------------------------------------------------------------------------
    def delete_instance(self, context, instance):
        """Destroy the guest, release every volume, then the server."""
        event = _Event(context, instance.uuid, "compute_terminate_instance", instance.host)
        bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(context, instance.uuid)
        if instance.host:
            try:
                self.compute_rpcapi.terminate_instance(context, instance, bdms)
            except Exception as error:
                LOG.warning("terminate of %s on %s failed (%s); deleting locally",
                            instance.uuid, instance.host, error)
        release_instance_volumes(context, self.volume_api, bdms)
        try:
            instance.destroy()
        except exception.InstanceNotFound:
            pass
        event.success()


def release_instance_volumes(context, volume_api, bdms):
    """Delete every attachment of the BDMs (volumes on delete_on_termination)
    and destroy the BDMs.  Shared by the conductor and the API's local delete."""
    for bdm in bdms:
        if bdm.is_volume and bdm.attachment_id:
            try:
                volume_api.attachment_delete(context, bdm.attachment_id)
            except exception.VolumeAttachmentNotFound:
                pass
            except Exception:
                LOG.exception("could not delete attachment %s", bdm.attachment_id)
        if bdm.is_volume and bdm.delete_on_termination and bdm.volume_id:
            try:
                volume_api.delete_volume(context, bdm.volume_id)
            except Exception:
                LOG.exception("could not delete volume %s", bdm.volume_id)
        try:
            bdm.destroy()
        except Exception:
            LOG.exception("could not destroy BDM %s", bdm.uuid)
