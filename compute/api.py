"""The compute API facade: what the HTTP layer calls (runs in the API process).

It checks what can be checked cheaply (existence, ownership, states, locks,
the volume's attachability), records the instance action, and hands
workflows to the conductor: called for microversions below 2.101, cast from
2.101.  It never waits on a compute.
"""
import logging
import secrets
import socket
import uuid as uuidlib

from volattach import objects
from volattach.compute import device_names
from volattach.conductor import api as conductor_api
from volattach.conductor import manager as conductor_manager
from volattach.objects import block_device as block_device_obj
from volattach.objects import instance as instance_obj
from volattach.objects import instance_action
from volattach import exception
from volattach import servicegroup

LOG = logging.getLogger(__name__)

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
}

# task_states a delete may interrupt: none, a build, a change of the guest's
# power on its host (not shelve, offload or unshelve, which move volumes)
DELETE_INTERRUPTIBLE_TASK_STATES = (None, "scheduling", "spawning", "powering-off",
                                    "powering-on", "pausing", "unpausing")

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


def _is_uuid(value):
    try:
        uuidlib.UUID(str(value))
        return True
    except ValueError:
        return False


class API:

    def __init__(self, volume_api=None, compute_task_api=None):
        if volume_api is None:
            from volattach.volume import cinder
            volume_api = cinder.VolumeAPI()
        self.volume_api = volume_api
        self.compute_task_api = compute_task_api or conductor_api.ComputeTaskAPI()
        # computes seen up a moment ago (volattach.servicegroup.UpCache)
        self._computes_up = servicegroup.UpCache()

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

    @staticmethod
    def _check_state(instance, method, vm_states, task_states=(None,)):
        if instance.vm_state not in vm_states:
            raise exception.InstanceInvalidState(method=method, instance_uuid=instance.uuid,
                                                 attr="vm_state", state=instance.vm_state)
        if instance.task_state not in task_states:
            raise exception.InstanceInvalidState(method=method, instance_uuid=instance.uuid,
                                                 attr="task_state", state=instance.task_state)

    # -- flavors and services ------------------------------------------------------------
    def flavor_list(self, context):
        return objects.Flavor.get_all(context)

    def flavor_get(self, context, flavor_id):
        return objects.Flavor.get_by_flavor_id(context, flavor_id)

    def service_list(self, context, binary=None, host=None):
        services = objects.ServiceList.get_all(context, binary=binary, host=host)
        return [(s, servicegroup.is_up(s)) for s in services]

    # -- servers ---------------------------------------------------------------------------
    def get(self, context, server_id):
        try:
            instance = objects.Instance.get_by_uuid(context, server_id)
        except exception.InstanceNotFound:
            raise exception.InstanceNotFound(instance_id=server_id)
        self._check_visible(context, instance, server_id)
        return instance

    def get_with_bdms(self, context, server_id):
        """``get`` and the server's block device mappings (a list, in id
        order) in one database round: the volume requests need both.  Pass
        the mappings on to ``get_volume_attachment(s)``, ``attach_volume``
        and ``detach_volume`` (``bdms=``) so that they do not read them
        again."""
        try:
            instance, bdms = objects.Instance.get_by_uuid_with_bdms(context, server_id)
        except exception.InstanceNotFound:
            raise exception.InstanceNotFound(instance_id=server_id)
        self._check_visible(context, instance, server_id)
        return instance, list(bdms)

    def list_volume_attachments(self, context, server_id):
        """``(project_id, rows)`` for GET os-volume_attachments: the server's
        project (for the policy check) and its volume mappings as read-only
        rows in id order (``objects.block_device.volume_attachment_rows``),
        the same mappings as ``get_volume_attachments`` without building
        objects.  404 as ``get`` for a missing or another project's server."""
        try:
            project_id, rows = block_device_obj.volume_attachment_rows(server_id)
        except exception.InstanceNotFound:
            raise exception.InstanceNotFound(instance_id=server_id)
        if not context.is_admin and project_id != context.project_id:
            raise exception.InstanceNotFound(instance_id=server_id)
        return project_id, rows

    @staticmethod
    def _check_visible(context, instance, server_id):
        """Another project's server does not exist, unless for an admin."""
        if not context.is_admin and instance.project_id != context.project_id:
            raise exception.InstanceNotFound(instance_id=server_id)

    def get_all(self, context, search_opts=None, limit=None, marker=None):
        opts = dict(search_opts or {})
        filters = {}
        if not (context.is_admin and opts.get("all_tenants")):
            filters["project_id"] = context.project_id
        if context.is_admin and opts.get("project_id"):
            filters["project_id"] = opts["project_id"]
        if opts.get("name"):
            filters["name"] = opts["name"]
        if opts.get("host") and context.is_admin:
            filters["host"] = opts["host"]
        if opts.get("reservation_id"):
            filters["reservation_id"] = opts["reservation_id"]
        status = opts.get("status")
        if status:
            vm_state = STATUS_TO_VM_STATE.get(str(status).upper())
            if vm_state is None:
                return []
            filters["vm_state"] = vm_state
            if vm_state == instance_obj.DELETED:
                filters["read_deleted"] = True
        if marker:
            self.get(context, marker)
        return list(objects.InstanceList.get_by_filters(context, filters, limit=limit,
                                                        marker=marker))

    def get_bdms_by_instances(self, context, instances):
        result = {i.uuid: [] for i in instances}
        if result:
            for bdm in objects.BlockDeviceMappingList.get_by_instance_uuids(
                    context, list(result)):
                result[bdm.instance_uuid].append(bdm)
        return result

    def _check_create_bdms(self, context, bdms, image_ref, count, supports_multiattach,
                           multiattach_multi_create=False):
        """Validate block_device_mapping_v2 and look up its volumes.

        With ``multiattach_multi_create`` (2.105) several servers of one
        request may share a multiattach volume; a non-multiattach one stays
        refused (400)."""
        bdms = [dict(b) for b in (bdms or [])]
        boot_indexes = sorted(int(b["boot_index"]) for b in bdms
                              if b.get("boot_index") is not None
                              and int(b["boot_index"]) >= 0)
        if boot_indexes != list(range(len(boot_indexes))):
            raise exception.InvalidBDM(reason="Boot sequence for the instance and "
                                              "image/block device mapping combination "
                                              "is not valid.")
        if not image_ref and 0 not in boot_indexes:
            raise exception.InvalidBDM(reason="Boot sequence for the instance and "
                                              "image/block device mapping combination "
                                              "is not valid.")
        volumes = {}
        for bdm in bdms:
            if bdm.get("boot_index") is not None:
                bdm["boot_index"] = int(bdm["boot_index"])
            source = bdm.get("source_type")
            dest = bdm.get("destination_type") or ("volume" if source == "volume" else "local")
            bdm["destination_type"] = dest
            if bdm.get("attach_mode") is not None and dest != "volume":
                raise exception.InvalidBDM(
                    reason="attach_mode is only valid for a mapping with "
                           "destination_type volume.")
            if dest == "volume" and source != "volume":
                raise exception.InvalidBDM(
                    reason="source_type %s with destination_type volume is not "
                           "supported: create the volume first and map it with "
                           "source_type volume." % source)
            if source == "volume":
                if dest != "volume":
                    raise exception.InvalidBDM(reason="a volume must have "
                                                      "destination_type volume.")
                volume_id = bdm.get("uuid")
                if not volume_id:
                    raise exception.InvalidBDM(reason="missing volume uuid.")
                if volume_id in volumes:
                    raise exception.InvalidBDM(reason="volume %s is mapped twice." % volume_id)
                try:
                    volume = self.volume_api.get(context, volume_id)
                except exception.VolumeNotFound:
                    raise exception.InvalidBDM(reason="failed to get volume %s." % volume_id)
                if volume.get("multiattach") and not supports_multiattach:
                    raise exception.MultiattachNotSupportedOldMicroversion()
                if count > 1 and not (multiattach_multi_create
                                      and volume.get("multiattach")):
                    raise exception.MultipleVolumeAttachNotAllowed()
                self._check_volume_attachable(volume)
                volumes[volume_id] = volume
            elif source in ("image", "blank", "snapshot") and dest == "local":
                if source == "image" and bdm.get("boot_index") == 0 and not bdm.get("uuid"):
                    raise exception.InvalidBDM(reason="missing image uuid.")
            elif source is not None:
                raise exception.InvalidBDM(reason="unknown source_type %s." % source)
        return bdms, volumes

    def _check_volume_attachable(self, volume):
        allowed = (MULTIATTACH_ATTACHABLE_STATUSES if volume.get("multiattach")
                   else ATTACHABLE_STATUSES)
        if volume.get("status") not in allowed:
            raise exception.InvalidVolume(
                reason="Volume %s status must be available to attach, but the "
                       "current status is %s." % (volume["id"], volume.get("status")))

    @staticmethod
    def _check_image(image_ref):
        """With the libvirt driver there is no image service: an image is
        a directory of [libvirt] image_dir (400 when it is not there)."""
        from volattach.conf import CONF
        if image_ref and CONF.compute.virt_driver == "libvirt":
            from volattach.compute.virt.libvirt import images
            if images.image_path(image_ref) is None:
                raise exception.InvalidInput(
                    message="Image %s could not be found." % image_ref)

    def create(self, context, *, name, flavor_ref, image_ref, block_device_mapping,
               min_count=1, max_count=1, metadata=None, key_name=None,
               availability_zone=None, access_ip_v4=None, access_ip_v6=None,
               config_drive=None, description=None, supports_multiattach=False,
               multiattach_multi_create=False, microversion=None):
        flavor = objects.Flavor.get_by_flavor_id(context, flavor_ref)
        if image_ref and not _is_uuid(image_ref):
            raise exception.ImageRefInvalid()
        self._check_image(image_ref)
        min_count = int(min_count or 1)
        max_count = int(max_count or min_count)
        if max_count < min_count:
            raise exception.InvalidInput(reason="min_count must be <= max_count")
        bdm_dicts, _volumes = self._check_create_bdms(
            context, block_device_mapping, image_ref, max_count, supports_multiattach,
            multiattach_multi_create)
        if any(b.get("attach_mode") == "ro" for b in bdm_dicts):
            self._check_read_only_computes(context)
        reservation_id = "r-" + secrets.token_hex(4)
        instances = []
        created_bdms = []
        try:
            for index in range(max_count):
                display_name = name if max_count == 1 else "%s-%d" % (name, index + 1)
                instance = objects.Instance(
                    context, uuid=str(uuidlib.uuid4()), project_id=context.project_id,
                    user_id=context.user_id, display_name=display_name,
                    display_description=description,
                    hostname=display_name, vm_state=instance_obj.BUILDING,
                    task_state="scheduling", power_state=instance_obj.NOSTATE,
                    flavor=flavor, image_ref=image_ref or "", key_name=key_name,
                    locked=False, availability_zone=availability_zone,
                    reservation_id=reservation_id, launch_index=index,
                    access_ip_v4=access_ip_v4, access_ip_v6=access_ip_v6,
                    config_drive=config_drive or "", metadata=dict(metadata or {}))
                instance.create()
                instances.append(instance)
                objects.InstanceAction.action_start(context, instance.uuid,
                                                    instance_action.CREATE)
                mappings = [dict(b) for b in bdm_dicts]
                if image_ref and not any(b.get("boot_index") == 0 for b in mappings):
                    mappings.insert(0, {"source_type": "image", "destination_type": "local",
                                        "boot_index": 0, "uuid": image_ref,
                                        "delete_on_termination": True})
                device_names.assign(mappings)
                for mapping in mappings:
                    bdm = self._new_bdm(context, instance, mapping)
                    bdm.create()
                    created_bdms.append(bdm)
                    if bdm.is_volume:
                        attachment = self.volume_api.attachment_create(
                            context, bdm.volume_id, instance.uuid,
                            mode="ro" if bdm.attach_mode == "ro" else None)
                        bdm.attachment_id = attachment["id"]
                        bdm.save()
        except Exception:
            conductor_manager.release_instance_volumes(context, self.volume_api,
                                                       created_bdms)
            for instance in instances:
                try:
                    instance.destroy()
                except Exception:
                    LOG.exception("rollback of server %s failed", instance.uuid)
            raise
        self.compute_task_api.build_instances(context, instances)
        return instances, reservation_id

    @staticmethod
    def _new_bdm(context, instance, mapping):
        source = mapping.get("source_type")
        return objects.BlockDeviceMapping(
            context, uuid=str(uuidlib.uuid4()), instance_uuid=instance.uuid,
            source_type=source, destination_type=mapping.get("destination_type"),
            boot_index=mapping.get("boot_index"), device_name=mapping.get("device_name"),
            volume_id=mapping.get("uuid") if source == "volume" else None,
            image_id=mapping.get("uuid") if source == "image" else None,
            snapshot_id=mapping.get("uuid") if source == "snapshot" else None,
            delete_on_termination=bool(mapping.get("delete_on_termination", False)),
            tag=mapping.get("tag"), volume_size=mapping.get("volume_size"),
            volume_type=mapping.get("volume_type"), disk_bus=mapping.get("disk_bus"),
            device_type=mapping.get("device_type"),
            guest_format=mapping.get("guest_format"),
            no_device=bool(mapping.get("no_device", False)),
            attach_mode=(mapping.get("attach_mode") or "rw")
            if mapping.get("destination_type") == "volume" else None)

    def delete(self, context, instance):
        """Delete the server, interrupting a build or a change of its power
        state; while shelve, offload or unshelve moves it and its volumes
        the answer is 409 (a delete racing them could leave an attachment
        behind).  A server already being deleted: nothing more to do."""
        self._check_locked(context, instance)
        if instance.task_state == "deleting":
            return
        self._check_state(instance, "delete", (instance.vm_state,),
                          DELETE_INTERRUPTIBLE_TASK_STATES)
        objects.InstanceAction.action_start(context, instance.uuid, instance_action.DELETE)
        if instance.host and self._host_is_up(context, instance.host, cached=False):
            instance.task_state = "deleting"
            try:
                instance.save(expected_task_state=list(DELETE_INTERRUPTIBLE_TASK_STATES))
            except exception.UnexpectedTaskState:
                fresh = objects.Instance.get_by_uuid(context, instance.uuid)
                if fresh.task_state == "deleting":
                    return
                self._check_state(fresh, "delete", (fresh.vm_state,),
                                  DELETE_INTERRUPTIBLE_TASK_STATES)
                raise
            self.compute_task_api.delete_instance(context, instance)
            return
        self._local_delete(context, instance)

    def _local_delete(self, context, instance):
        """Delete a server that is on no (running) host, here in the API."""
        bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(context, instance.uuid)
        conductor_manager.release_instance_volumes(context, self.volume_api, bdms)
        try:
            instance.destroy()
        except exception.InstanceNotFound:
            pass

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

    # -- volume attachments -------------------------------------------------------------
    def get_volume_attachments(self, context, instance, bdms=None):
        return [b for b in self._bdms(context, instance, bdms) if b.is_volume]

    def get_volume_attachment(self, context, instance, volume_id, bdms=None):
        if bdms is not None:
            # what the query below answers: the first mapping (id order)
            # of this volume on this server
            bdm = next((b for b in bdms if b.volume_id == volume_id), None)
        else:
            try:
                bdm = objects.BlockDeviceMapping.get_by_volume_and_instance(
                    context, volume_id, instance.uuid)
            except exception.VolumeBDMNotFound:
                bdm = None
        if bdm is None or not bdm.is_volume:
            raise exception.VolumeBDMNotFound(volume_id=volume_id)
        return bdm

    @staticmethod
    def _volume_vm_states(allow_shelved):
        return ATTACH_DETACH_VM_STATES + (SHELVED_VM_STATES if allow_shelved else ())

    def attach_volume(self, context, instance, volume_id, device=None, tag=None,
                      delete_on_termination=False, supports_multiattach=False,
                      wait=True, allow_shelved=True, attach_mode="rw", bdms=None):
        """Attach a volume; returns the device name when ``wait`` (below
        2.101), None when the workflow is cast (2.101+).  ``allow_shelved``
        is False below microversion 2.20.  ``attach_mode`` ``ro`` (2.105)
        needs a compute that honours it (409 otherwise).  ``bdms``: the
        server's mappings as ``get_with_bdms`` read them (else read here)."""
        if attach_mode not in ("ro", "rw"):
            raise exception.InvalidInput(reason="attach_mode must be ro or rw")
        self._check_locked(context, instance)
        self._check_state(instance, "attach_volume", self._volume_vm_states(allow_shelved))
        volume = self.volume_api.get(context, volume_id)
        if volume.get("multiattach") and not supports_multiattach:
            raise exception.MultiattachNotSupportedOldMicroversion()
        offloaded = instance.vm_state == instance_obj.SHELVED_OFFLOADED
        if offloaded and tag:
            raise exception.VolumeTaggedAttachToShelvedNotSupported()
        if offloaded and volume.get("multiattach"):
            raise exception.MultiattachToShelvedNotSupported()
        for bdm in self._bdms(context, instance, bdms):
            if bdm.volume_id == volume_id:
                raise exception.InvalidVolume(reason="volume %s already attached" % volume_id)
        self._check_volume_attachable(volume)
        if offloaded:
            return self._attach_volume_offloaded(context, instance, volume_id,
                                                 delete_on_termination, attach_mode)
        if not self._host_is_up(context, instance.host):
            raise exception.ServiceUnavailableConflict(host=instance.host)
        if attach_mode == "ro":
            self._check_read_only_compute(context, instance.host)
        self._check_conductor("attach_volume_read_only" if attach_mode == "ro"
                              else "attach_volume")
        objects.InstanceAction.action_start(context, instance.uuid,
                                            instance_action.ATTACH_VOLUME)
        return self.compute_task_api.attach_volume(
            context, instance, volume_id, device=device, tag=tag,
            delete_on_termination=delete_on_termination, do_cast=not wait,
            attach_mode=attach_mode)

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
        for service, up in self.service_list(context.elevated(),
                                             binary="volattach-compute"):
            if up and service.version >= service_obj.READ_ONLY_ATTACH_SERVICE_VERSION:
                return
        raise exception.ComputeTooOldForFeature(host="any",
                                                feature="read-only attachments")

    def _attach_volume_offloaded(self, context, instance, volume_id,
                                 delete_on_termination, attach_mode="rw"):
        """Attach to a server on no host, here in the API: a BDM without a
        device name and a completed connector-less attachment.  The compute
        that receives the server at unshelve names the device and connects."""
        objects.InstanceAction.action_start(context, instance.uuid,
                                            instance_action.ATTACH_VOLUME)
        bdm = objects.BlockDeviceMapping(
            context, uuid=str(uuidlib.uuid4()), instance_uuid=instance.uuid,
            source_type="volume", destination_type="volume", volume_id=volume_id,
            device_name=None, boot_index=None,
            delete_on_termination=bool(delete_on_termination), attach_mode=attach_mode)
        bdm.create()
        attachment_id = None
        try:
            attachment_id = self.volume_api.attachment_create(
                context, volume_id, instance.uuid,
                mode="ro" if attach_mode == "ro" else None)["id"]
            bdm.attachment_id = attachment_id
            bdm.save()
            self.volume_api.attachment_complete(context, attachment_id)
        except Exception:
            if attachment_id:
                try:
                    self.volume_api.attachment_delete(context, attachment_id)
                except Exception:
                    LOG.exception("rollback of attachment %s failed", attachment_id)
            bdm.destroy()
            raise
        return None

    def detach_volume(self, context, instance, volume_id, allow_shelved=True, bdms=None):
        self._check_locked(context, instance)
        self._check_state(instance, "detach_volume", self._volume_vm_states(allow_shelved))
        bdm = self.get_volume_attachment(context, instance, volume_id, bdms=bdms)
        if bdm.is_root:
            raise exception.CannotDetachRootVolume()
        if instance.vm_state == instance_obj.SHELVED_OFFLOADED:
            objects.InstanceAction.action_start(context, instance.uuid,
                                                instance_action.DETACH_VOLUME)
            conductor_manager.release_instance_volumes(
                context, self.volume_api, [_keep_volume(bdm)])
            return
        if not bdm.attachment_id or not bdm.connection_info:
            raise exception.Conflict(reason="the attachment of volume %s is still in "
                                            "progress" % volume_id)
        if instance.host and not self._host_is_up(context, instance.host):
            raise exception.ServiceUnavailableConflict(host=instance.host)
        self._check_conductor("detach_volume")
        self.volume_api.begin_detaching(context, volume_id)
        objects.InstanceAction.action_start(context, instance.uuid,
                                            instance_action.DETACH_VOLUME)
        try:
            self.compute_task_api.detach_volume(context, instance, volume_id)
        except Exception:
            self.volume_api.roll_detaching(context, volume_id)
            raise

    def update_volume_attachment(self, context, instance, volume_id, delete_on_termination):
        self._check_locked(context, instance)
        bdm = self.get_volume_attachment(context, instance, volume_id)
        bdm.delete_on_termination = bool(delete_on_termination)
        bdm.save()

    def swap_volume(self, context, instance, old_volume_id, new_volume_id):
        """Swap (PUT with another volumeId; admin or service role, checked by
        the API's policy): the new volume takes over the old one's device,
        tag and delete_on_termination; the old attachment is deleted."""
        self._check_locked(context, instance)
        self._check_state(instance, "swap_volume", SWAP_VM_STATES)
        bdm = self.get_volume_attachment(context, instance, old_volume_id)
        if not bdm.attachment_id:
            raise exception.Conflict(reason="the attachment of volume %s is still in "
                                            "progress" % old_volume_id)
        old_volume = self.volume_api.get(context, old_volume_id)
        new_volume = self.volume_api.get(context, new_volume_id)
        if old_volume.get("multiattach") and len(old_volume.get("attachments") or []) > 1:
            raise exception.InvalidVolume(reason="Swapping multi-attach volumes with "
                                                 "more than one read/write attachment "
                                                 "is not supported.")
        if new_volume.get("status") != "available":
            raise exception.InvalidVolume(reason="new volume %s status must be "
                                                 "available, but is %s" % (
                                                     new_volume_id, new_volume.get("status")))
        if instance.host and not self._host_is_up(context, instance.host):
            raise exception.ServiceUnavailableConflict(host=instance.host)
        self._check_conductor("swap_volume")
        self.volume_api.begin_detaching(context, old_volume_id)
        try:
            # the new volume keeps the old one's attach mode
            new_attachment_id = self.volume_api.attachment_create(
                context, new_volume_id, instance.uuid,
                mode="ro" if bdm.attach_mode == "ro" else None)["id"]
        except Exception:
            self.volume_api.roll_detaching(context, old_volume_id)
            raise
        objects.InstanceAction.action_start(context, instance.uuid,
                                            instance_action.SWAP_VOLUME)
        try:
            self.compute_task_api.swap_volume(context, instance, old_volume_id,
                                              new_volume_id, new_attachment_id)
        except Exception:
            self.volume_api.attachment_delete(context, new_attachment_id)
            self.volume_api.roll_detaching(context, old_volume_id)
            raise

    # -- server actions ---------------------------------------------------------------------
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
        objects.InstanceAction.action_start(context, instance.uuid, action)

    def _send_action(self, context, instance, name, send, *args, **kwargs):
        """``send(context, instance, ...)``: the cast of an action whose
        task_state ``_start_action`` set.  When it cannot be sent (the bus
        is down) the action never started: task_state goes back to None
        (compare-and-swap, so a conductor that did get it wins), the
        instance action gets a failed event, and the error propagates."""
        try:
            send(context, instance, *args, **kwargs)
        except Exception as error:
            task_state = SERVER_ACTIONS[name][1]
            LOG.warning("%s of %s not sent, task_state %s undone: %s",
                        name, instance.uuid, task_state, error)
            try:
                instance.task_state = None
                instance.save(expected_task_state=[task_state])
                objects.InstanceActionEvent.event_start(
                    context, instance.uuid, "api_%s" % name).finish(error)
            except Exception:
                LOG.exception("could not undo task_state %s of %s",
                              task_state, instance.uuid)
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
        """The tail (``length`` lines, all when None) of the guest's
        console, asked of its compute; InstanceNotReady without a host."""
        from volattach.compute import rpcapi as compute_rpcapi
        if not instance.host:
            raise exception.InstanceNotReady(instance_id=instance.uuid)
        return compute_rpcapi.ComputeAPI().get_console_output(
            context, instance, None if length is None else int(length))

    def pause(self, context, instance):
        self._start_action(context, instance, "pause")
        self._send_action(context, instance, "pause",
                          self.compute_task_api.pause_instance)

    def unpause(self, context, instance):
        self._start_action(context, instance, "unpause")
        self._send_action(context, instance, "unpause",
                          self.compute_task_api.unpause_instance)

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
        if instance.vm_state == instance_obj.SHELVED_OFFLOADED:
            # the compute that receives it must honour its read-only volumes
            bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(context,
                                                                       instance.uuid)
            if any(b.is_volume and b.attach_mode == "ro" for b in bdms):
                self._check_read_only_computes(context)
        self._start_action(context, instance, "unshelve")
        if instance.vm_state == instance_obj.SHELVED_OFFLOADED and (availability_zone or host):
            instance.availability_zone = ("%s:%s" % (availability_zone or "nova", host)
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

    # -- instance actions -------------------------------------------------------------------
    def get_instance_actions(self, context, instance):
        return list(objects.InstanceActionList.get_by_instance_uuid(context, instance.uuid))

    def get_instance_action(self, context, instance, request_id):
        action = objects.InstanceAction.get_by_request_id(context, instance.uuid, request_id)
        if action is None:
            raise exception.InstanceActionNotFound(request_id=request_id,
                                                   instance_uuid=instance.uuid)
        events = list(objects.InstanceActionEventList.get_by_action(context, action.id))
        return action, events


def _keep_volume(bdm):
    """A BDM for release_instance_volumes that never deletes the volume
    (detach keeps it, whatever delete_on_termination says)."""
    bdm.delete_on_termination = False
    return bdm
