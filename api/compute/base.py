"""What every part of the compute API facade shares: the states each
request allows, the cheap checks (lock, state, the conductor's version, the
compute being up, read-only support) and the two services the facade talks
to, the volume service and the conductor's task API."""
import uuid as uuidlib

from volattach.api.compute import images
from volattach import objects
from volattach.conductor import api as conductor_api
from volattach.objects import instance as instance_obj
from volattach import exception
from volattach import servicegroup

# vm_states in which volumes may be attached or detached (with no task_state);
# the shelved states from microversion 2.20 (the volume-ops-when-shelved spec)
ATTACH_DETACH_VM_STATES = (instance_obj.ACTIVE, instance_obj.PAUSED,
                           instance_obj.STOPPED, instance_obj.RESIZED,
                           instance_obj.SOFT_DELETED)
SHELVED_VM_STATES = (instance_obj.SHELVED, instance_obj.SHELVED_OFFLOADED)
SWAP_VM_STATES = (instance_obj.ACTIVE, instance_obj.PAUSED, instance_obj.RESIZED,
                  instance_obj.SHELVED, instance_obj.SHELVED_OFFLOADED)

# server action -> (allowed vm_states, task_state set while it runs,
#                   instance action name); task_state must be None to start
SERVER_ACTIONS = {
    "stop": ((instance_obj.ACTIVE, instance_obj.ERROR), "powering-off", "stop"),
    "start": ((instance_obj.STOPPED,), "powering-on", "start"),
    "pause": ((instance_obj.ACTIVE,), "pausing", "pause"),
    "unpause": ((instance_obj.PAUSED,), "unpausing", "unpause"),
    "shelve": ((instance_obj.ACTIVE, instance_obj.STOPPED, instance_obj.PAUSED,
                instance_obj.SUSPENDED), "shelving", "shelve"),
    "shelve_offload": ((instance_obj.SHELVED,), "shelving_offloading", "shelveOffload"),
    "unshelve": ((instance_obj.SHELVED, instance_obj.SHELVED_OFFLOADED), "unshelving",
                 "unshelve"),
    "live_migrate": ((instance_obj.ACTIVE, instance_obj.PAUSED), "migrating",
                     "live-migration"),
    "suspend": ((instance_obj.ACTIVE,), "suspending", "suspend"),
    "resume": ((instance_obj.SUSPENDED,), "resuming", "resume"),
    "reboot": ((instance_obj.ACTIVE,), "rebooting", "reboot"),
    "rebuild": ((instance_obj.ACTIVE, instance_obj.STOPPED, instance_obj.ERROR),
                "rebuilding", "rebuild"),
    "reboot_hard": ((instance_obj.ACTIVE, instance_obj.STOPPED, instance_obj.PAUSED,
                     instance_obj.SUSPENDED, instance_obj.ERROR), "rebooting_hard",
                    "reboot"),
}

# task_states a delete may interrupt: none, a build, a change of the guest's
# power on its host, a rebuild (not shelve, offload or unshelve, which move
# volumes)
DELETE_INTERRUPTIBLE_TASK_STATES = (None, "scheduling", "spawning", "powering-off",
                                    "powering-on", "pausing", "unpausing",
                                    "suspending", "resuming", "rebooting",
                                    "rebooting_hard", "rebuilding")

# API status (servers list filter) -> vm_state
STATUS_TO_VM_STATE = {
    "ACTIVE": instance_obj.ACTIVE, "BUILD": instance_obj.BUILDING,
    "SHUTOFF": instance_obj.STOPPED, "PAUSED": instance_obj.PAUSED,
    "ERROR": instance_obj.ERROR, "DELETED": instance_obj.DELETED,
    "SHELVED": instance_obj.SHELVED,
    "SHELVED_OFFLOADED": instance_obj.SHELVED_OFFLOADED,
    "SUSPENDED": instance_obj.SUSPENDED, "SOFT_DELETED": instance_obj.SOFT_DELETED,
    "VERIFY_RESIZE": instance_obj.RESIZED,
}

ATTACHABLE_STATUSES = ("available",)
MULTIATTACH_ATTACHABLE_STATUSES = ("available", "in-use", "reserved", "attaching")


def is_uuid(value):
    try:
        uuidlib.UUID(str(value))
        return True
    except ValueError:
        return False


class FacadeBase:
    """The state and checks of the facade; ``volattach.api.compute.API``
    composes the per-resource parts built on it."""

    def __init__(self, volume_api=None, compute_task_api=None):
        if volume_api is None:
            from volattach.volume_client import cinder
            volume_api = cinder.VolumeAPI()
        self.volume_api = volume_api
        self.compute_task_api = compute_task_api or conductor_api.ComputeTaskAPI()
        # computes seen up a moment ago (volattach.servicegroup.UpCache)
        self._computes_up = servicegroup.UpCache()
        # the images the up computes reported a moment ago
        # (or, with [glance], Glance)
        self._images = images.image_check()

    # -- checks -------------------------------------------------------------------------
    @staticmethod
    def _check_locked(context, instance):
        if instance.locked and not context.is_admin:
            raise exception.InstanceIsLocked(instance_uuid=instance.uuid)

    def _check_conductor(self, method):
        """503 (ConductorTooOld) before anything is recorded or changed when
        the conductor, capped by ``[upgrade_levels] conductor``, cannot run
        the workflow ``method`` yet."""
        self.compute_task_api.rpcapi.check_can_send(method)

    def _check_image(self, image_ref, context=None, host=None):
        """There is no image service: an imageRef must be an image that an
        up compute reports it can boot, ``host``'s compute when given (a
        rebuild) (``api/compute/images.py``: 400 "Image X could not be
        found." otherwise, as Nova answers; accepted while a compute
        concerned reports no list, an older one)."""
        self._images.check(context, image_ref, host=host)

    @staticmethod
    def _check_state(instance, method, vm_states, task_states=(None,)):
        if instance.vm_state not in vm_states:
            raise exception.InstanceInvalidState(method=method, instance_uuid=instance.uuid,
                                                 attr="vm_state", state=instance.vm_state)
        if instance.task_state not in task_states:
            raise exception.InstanceInvalidState(method=method, instance_uuid=instance.uuid,
                                                 attr="task_state", state=instance.task_state)

    @staticmethod
    def _check_visible(context, instance, server_id):
        """Another project's server does not exist, unless for an admin."""
        if not context.is_admin and instance.project_id != context.project_id:
            raise exception.InstanceNotFound(instance_id=server_id)

    def _check_volume_attachable(self, volume):
        allowed = (MULTIATTACH_ATTACHABLE_STATUSES if volume.get("multiattach")
                   else ATTACHABLE_STATUSES)
        if volume.get("status") not in allowed:
            raise exception.InvalidVolume(
                reason="Volume %s status must be available to attach, but the "
                       "current status is %s." % (volume["id"], volume.get("status")))

    def _host_is_up(self, context, host, cached=True):
        """Whether ``host``'s compute service is up.  ``cached``: a row seen
        up less than servicegroup.UP_CACHE_SECONDS ago counts (UpCache: the
        volume operations, on every attach and detach); a server's delete
        reads the row (it deletes locally what a down compute holds)."""
        def load():
            return objects.Service.get_by_host_and_binary(
                context.elevated(), host, "volattach-compute")
        if not cached:
            service = load()
            return service is not None and servicegroup.is_up(service)
        return self._computes_up.is_up((host, "volattach-compute"), load)

    def _bdms(self, context, instance, bdms=None):
        """The server's mappings: ``bdms`` when the caller read them with
        the server (``get_with_bdms``), else from the database."""
        if bdms is not None:
            return bdms
        return objects.BlockDeviceMappingList.get_by_instance_uuid(context, instance.uuid)

    @staticmethod
    def _volume_vm_states(allow_shelved):
        return ATTACH_DETACH_VM_STATES + (SHELVED_VM_STATES if allow_shelved else ())

    @staticmethod
    def _compute_version(context, host):
        service = objects.Service.get_by_host_and_binary(context.elevated(), host,
                                                         "volattach-compute")
        return service.version if service is not None else None

    def _check_read_only_compute(self, context, host):
        """409 when ``host``'s compute is older than read-only attachments
        (the multiattach-enhancements spec: the API refuses, rather than
        attach read/write what the user asked read-only)."""
        from volattach.objects import service as service_obj
        version = self._compute_version(context, host)
        if version is None or version < service_obj.READ_ONLY_ATTACH_SERVICE_VERSION:
            raise exception.ComputeTooOldForFeature(host=host,
                                                    feature="read-only attachments")

    def _check_read_only_computes(self, context):
        """409 unless some up compute honours read-only attachments (the
        scheduler then only picks such hosts)."""
        from volattach.objects import service as service_obj
        for service in objects.ServiceList.get_all(context.elevated(),
                                                   binary="volattach-compute"):
            if (servicegroup.is_up(service) and service.version
                    >= service_obj.READ_ONLY_ATTACH_SERVICE_VERSION):
                return
        raise exception.ComputeTooOldForFeature(host="any",
                                                feature="read-only attachments")
