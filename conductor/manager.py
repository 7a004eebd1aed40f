"""Conductor endpoints: object proxying for computes (``ConductorManager``)
and the workflows' RPC endpoint (``ComputeTaskManager``), which hands each
workflow to its module in ``conductor/tasks``."""
import logging

import oslo_messaging as messaging
from oslo_utils import versionutils

from volattach.compute import rpcapi as compute_rpcapi
from volattach.conductor import connectors
from volattach.conductor import instance_events
from volattach.conductor.tasks import attach
from volattach.conductor.tasks import base
from volattach.conductor.tasks import build
from volattach.conductor.tasks import delete
from volattach.conductor.tasks import detach
from volattach.conductor.tasks import live_migrate
from volattach.conductor.tasks import power
from volattach.conductor.tasks import rebuild
from volattach.conductor.tasks import shelve
from volattach.conductor.tasks import swap
from volattach.objects import base as objects_base

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


class ComputeTaskManager:
    """Workflows started by the compute API: each endpoint builds one run
    of its task (``conductor/tasks``, one module each) and executes it."""

    target = messaging.Target(namespace="compute_task", version="1.9")

    def __init__(self, volume_api=None):
        if volume_api is None:
            from volattach.volume_client import cinder
            volume_api = cinder.VolumeAPI()
        self.compute_rpcapi = compute_rpcapi.ComputeAPI()
        self.volume_api = volume_api
        # the computes' connectors, read a moment ago (conductor.connectors)
        self.connectors = connectors.HostConnectors()

    def _collaborators(self):
        """What a task run is built with (``tasks.base.TaskBase``)."""
        return {"compute_rpcapi": self.compute_rpcapi,
                "volume_api": self.volume_api,
                "connectors": self.connectors}

    def attach_volume(self, context, instance, volume_id, device=None, tag=None,
                      delete_on_termination=False, attach_mode=None,
                      multiattach=None):
        """Returns the device name (see ``tasks.attach``); a failure,
        rolled back, is raised to the caller.  ``multiattach`` (1.8): the
        volume's flag as the API read it; None (an older API): the task
        reads the volume for it."""
        return attach.AttachVolumeTask(
            context, instance, volume_id, device=device, tag=tag,
            delete_on_termination=delete_on_termination,
            attach_mode=attach_mode, multiattach=multiattach,
            **self._collaborators()).execute()

    def detach_volume(self, context, instance, volume_id):
        base.execute_cast(detach.DetachVolumeTask(
            context, instance, volume_id, **self._collaborators()))

    def swap_volume(self, context, instance, old_volume_id, new_volume_id,
                    new_attachment_id):
        base.execute_cast(swap.SwapVolumeTask(
            context, instance, old_volume_id, new_volume_id,
            new_attachment_id, **self._collaborators()))

    def build_instances(self, context, instances):
        for instance in instances:
            base.execute_cast(build.BuildTask(context, instance,
                                              **self._collaborators()))

    def stop_instance(self, context, instance):
        self._power_action(context, instance, "stop")

    def start_instance(self, context, instance):
        self._power_action(context, instance, "start")

    def pause_instance(self, context, instance):
        self._power_action(context, instance, "pause")

    def unpause_instance(self, context, instance):
        self._power_action(context, instance, "unpause")

    def suspend_instance(self, context, instance):
        self._power_action(context, instance, "suspend")

    def resume_instance(self, context, instance):
        self._power_action(context, instance, "resume")

    def reboot_instance(self, context, instance, reboot_type):
        self._power_action(context, instance, "reboot",
                           reboot_type=reboot_type)

    def _power_action(self, context, instance, action, reboot_type=None):
        base.execute_cast(power.PowerActionTask(
            context, instance, action, reboot_type=reboot_type,
            **self._collaborators()))

    def rebuild_instance(self, context, instance, reimage_image_id=None):
        base.execute_cast(rebuild.RebuildTask(
            context, instance, reimage_image_id=reimage_image_id,
            **self._collaborators()))

    def external_instance_event(self, context, events):
        """1.9 (a fanout cast): wake the workflows of this conductor that
        wait for one of ``events`` (``conductor.instance_events``)."""
        for event in events:
            if instance_events.EVENTS.deliver(event):
                LOG.info("event %s of %s delivered", event.key,
                         event.instance_uuid)

    def shelve_instance(self, context, instance, offload):
        base.execute_cast(shelve.ShelveTask(
            context, instance, offload, **self._collaborators()))

    def shelve_offload_instance(self, context, instance):
        base.execute_cast(shelve.ShelveOffloadTask(
            context, instance, **self._collaborators()))

    def unshelve_instance(self, context, instance):
        base.execute_cast(shelve.UnshelveTask(
            context, instance, **self._collaborators()))

    def live_migrate_instance(self, context, instance, host=None):
        base.execute_cast(live_migrate.LiveMigrationTask(
            context, instance, host=host, **self._collaborators()))

    def delete_instance(self, context, instance):
        base.execute_cast(delete.DeleteTask(context, instance,
                                            **self._collaborators()))
