"""Client side of the conductor RPC APIs.

ConductorAPI (topic ``conductor``, the object indirection API of computes)
version history:

    1.0 - Initial version: object_class_action_versions, object_action,
          object_backport_versions

ComputeTaskAPI (topic ``conductor_compute_task``, namespace ``compute_task``)
version history:

    1.0 - Initial version: build_instances, delete_instance, detach_volume
    1.1 - attach_volume (the workflow of the async-volume-attachments spec,
          called below compute API 2.101 and cast from 2.101)
    1.2 - stop_instance, start_instance, pause_instance, unpause_instance,
          shelve_instance, shelve_offload_instance, unshelve_instance,
          swap_volume
    1.3 - attach_volume takes attach_mode (read-only attachments)
    1.4 - live_migrate_instance (os-migrateLive of servers with volumes)
    1.5 - suspend_instance, resume_instance, reboot_instance
    1.6 - rebuild_instance
    1.7 - rebuild_instance takes reimage_image_id (a volume-backed server's
          root volume re-imaged, compute API 2.93)
    1.8 - attach_volume takes multiattach (the volume's flag as the API
          read it, so the conductor need not GET the volume again for the
          connection it hands the compute; None or absent: it GETs)
    1.9 - external_instance_event (fanout cast to every conductor): the
          volume-reimaged events posted to the compute API, which wake the
          rebuild that waits for them (compute API 2.93)

A caller capped below a method's version gets ConductorTooOld (the API
answers 503) instead of sending a message the conductor cannot dispatch.
"""
import logging

import oslo_messaging as messaging

from volattach import rpc
from volattach import exception
from volattach.conf import CONF

LOG = logging.getLogger(__name__)

TOPIC = "conductor"
TASK_TOPIC = "conductor_compute_task"


class ConductorAPI:
    """The ``indirection_api`` of objects on a compute host."""

    VERSION = "1.0"

    def __init__(self):
        target = messaging.Target(topic=TOPIC, version=self.VERSION)
        self.client = rpc.get_client(target, version_cap=CONF.upgrade_levels.conductor)

    def object_class_action_versions(self, context, objname, objmethod,
                                     object_versions, args, kwargs):
        return self.client.prepare().call(
            context, "object_class_action_versions", objname=objname,
            objmethod=objmethod, object_versions=object_versions,
            args=args, kwargs=kwargs)

    def object_action(self, context, objinst, objmethod, args, kwargs):
        return self.client.prepare().call(
            context, "object_action", objinst=objinst, objmethod=objmethod,
            args=args, kwargs=kwargs)

    def object_backport_versions(self, context, objinst, object_versions):
        return self.client.prepare().call(
            context, "object_backport_versions", objinst=objinst,
            object_versions=object_versions)

    READY_TIMEOUT = 5  # seconds per attempt of wait_until_ready
    READY_ATTEMPTS = 12

    def wait_until_ready(self, context):
        """Return once a conductor answers (or after READY_ATTEMPTS tries).

        A call published before any conductor has declared its queue (a
        compute starting beside its conductor) is dropped by the broker and
        would wait out the whole ``rpc_response_timeout`` (60 s): ask a cheap
        question with a short timeout until one answers.
        """
        for attempt in range(1, self.READY_ATTEMPTS + 1):
            try:
                self.client.prepare(timeout=self.READY_TIMEOUT).call(
                    context, "object_class_action_versions", objname="Service",
                    objmethod="get_minimum_version",
                    # Service 1.0: the answer is an integer, not an
                    # object, so any conductor can give it
                    object_versions={"Service": "1.0"},
                    args=("volattach-conductor",), kwargs={})
                return
            except messaging.MessagingTimeout:
                LOG.warning("no conductor answered in %ss (attempt %d of %d)",
                            self.READY_TIMEOUT, attempt, self.READY_ATTEMPTS)


class ComputeTaskAPI:
    VERSION = "1.9"

    # The version each method needs (the history above).
    METHOD_VERSIONS = {
        "build_instances": "1.0", "delete_instance": "1.0",
        "detach_volume": "1.0", "attach_volume": "1.1",
        "attach_volume_read_only": "1.3",
        "stop_instance": "1.2", "start_instance": "1.2",
        "pause_instance": "1.2", "unpause_instance": "1.2",
        "shelve_instance": "1.2", "shelve_offload_instance": "1.2",
        "unshelve_instance": "1.2", "swap_volume": "1.2",
        "live_migrate_instance": "1.4",
        "suspend_instance": "1.5", "resume_instance": "1.5",
        "reboot_instance": "1.5",
        "reboot_hard_instance": "1.5",      # the facade's name of a HARD one
        "rebuild_instance": "1.6",
        "rebuild_instance_reimage": "1.7",  # with reimage_image_id
        "external_instance_event": "1.9",
    }

    def __init__(self):
        target = messaging.Target(topic=TASK_TOPIC, namespace="compute_task",
                                  version=self.VERSION)
        self.client = rpc.get_client(target, version_cap=CONF.upgrade_levels.conductor)

    def check_can_send(self, method):
        """Raise ConductorTooOld unless the (capped) conductor can run
        ``method``: callers ask before they record or change anything."""
        if not self.client.can_send_version(self.METHOD_VERSIONS[method]):
            raise exception.ConductorTooOld(method=method)

    def _prepare(self, version, method, timeout=None):
        if not self.client.can_send_version(version):
            raise exception.ConductorTooOld(method=method)
        kwargs = {"version": version}
        if timeout:
            kwargs["timeout"] = timeout
        return self.client.prepare(**kwargs)

    def build_instances(self, ctxt, instances):
        self._prepare("1.0", "build_instances").cast(
            ctxt, "build_instances", instances=instances)

    def delete_instance(self, ctxt, instance):
        self._prepare("1.0", "delete_instance").cast(
            ctxt, "delete_instance", instance=instance)

    def detach_volume(self, ctxt, instance, volume_id):
        self._prepare("1.0", "detach_volume").cast(
            ctxt, "detach_volume", instance=instance, volume_id=volume_id)

    def attach_volume(self, ctxt, instance, volume_id, device=None, tag=None,
                      delete_on_termination=False, do_cast=False, attach_mode=None,
                      multiattach=None):
        """Run the attach workflow: cast (2.101+) or call for the device name.

        A read-only attach needs a conductor of 1.3; rw works from 1.1.
        ``multiattach`` (the volume's flag as the caller read it) goes with
        the message from 1.8; capped below, it is left out and the
        conductor reads the volume for it, as before."""
        version = "1.3" if attach_mode == "ro" else "1.1"
        kwargs = dict(instance=instance, volume_id=volume_id, device=device,
                      tag=tag, delete_on_termination=delete_on_termination)
        if attach_mode == "ro":
            kwargs["attach_mode"] = attach_mode
        if multiattach is not None and self.client.can_send_version("1.8"):
            version = "1.8"
            kwargs["multiattach"] = bool(multiattach)
        cctxt = self._prepare(version, "attach_volume",
                              timeout=None if do_cast else CONF.rpc_response_timeout_attach)
        if do_cast:
            cctxt.cast(ctxt, "attach_volume", **kwargs)
            return None
        return cctxt.call(ctxt, "attach_volume", **kwargs)

    def _cast_12(self, ctxt, method, **kwargs):
        self._prepare("1.2", method).cast(ctxt, method, **kwargs)

    def stop_instance(self, ctxt, instance):
        self._cast_12(ctxt, "stop_instance", instance=instance)

    def start_instance(self, ctxt, instance):
        self._cast_12(ctxt, "start_instance", instance=instance)

    def pause_instance(self, ctxt, instance):
        self._cast_12(ctxt, "pause_instance", instance=instance)

    def unpause_instance(self, ctxt, instance):
        self._cast_12(ctxt, "unpause_instance", instance=instance)

    def suspend_instance(self, ctxt, instance):
        self._prepare("1.5", "suspend_instance").cast(
            ctxt, "suspend_instance", instance=instance)

    def resume_instance(self, ctxt, instance):
        self._prepare("1.5", "resume_instance").cast(
            ctxt, "resume_instance", instance=instance)

    def reboot_instance(self, ctxt, instance, reboot_type):
        self._prepare("1.5", "reboot_instance").cast(
            ctxt, "reboot_instance", instance=instance, reboot_type=reboot_type)

    def rebuild_instance(self, ctxt, instance, reimage_image_id=None):
        if reimage_image_id is None:
            self._prepare("1.6", "rebuild_instance").cast(
                ctxt, "rebuild_instance", instance=instance)
            return
        self._prepare("1.7", "rebuild_instance_reimage").cast(
            ctxt, "rebuild_instance", instance=instance,
            reimage_image_id=reimage_image_id)

    def can_send(self, method):
        return self.client.can_send_version(self.METHOD_VERSIONS[method])

    def external_instance_event(self, ctxt, events):
        """Every conductor gets ``events`` (InstanceExternalEvent): the one
        whose workflow waits for one of them wakes it (a fanout cast)."""
        if not self.client.can_send_version("1.9"):
            raise exception.ConductorTooOld(method="external_instance_event")
        self.client.prepare(version="1.9", fanout=True).cast(
            ctxt, "external_instance_event", events=events)

    def shelve_instance(self, ctxt, instance, offload):
        self._cast_12(ctxt, "shelve_instance", instance=instance, offload=offload)

    def shelve_offload_instance(self, ctxt, instance):
        self._cast_12(ctxt, "shelve_offload_instance", instance=instance)

    def unshelve_instance(self, ctxt, instance):
        self._cast_12(ctxt, "unshelve_instance", instance=instance)

    def swap_volume(self, ctxt, instance, old_volume_id, new_volume_id,
                    new_attachment_id):
        self._cast_12(ctxt, "swap_volume", instance=instance,
                      old_volume_id=old_volume_id, new_volume_id=new_volume_id,
                      new_attachment_id=new_attachment_id)

    def live_migrate_instance(self, ctxt, instance, host=None):
        self._prepare("1.4", "live_migrate_instance").cast(
            ctxt, "live_migrate_instance", instance=instance, host=host)
