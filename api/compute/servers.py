"""Servers: show, list, create (with block_device_mapping_v2), update and
delete."""
import logging
import secrets
import uuid as uuidlib

from oslo_utils import strutils

from volattach import objects
from volattach.api.compute import base
from volattach import availability_zones
from volattach import device_naming
from volattach.objects import block_device as block_device_obj
from volattach.objects import instance as instance_obj
from volattach.objects import instance_action
from volattach import exception
from volattach import volume_release
from volattach.conf import CONF

LOG = logging.getLogger(__name__)


class ServersAPI(base.FacadeBase):

    def get(self, context, server_id, read_deleted=False):
        """The server ``server_id`` the caller may see; ``read_deleted``:
        a deleted server too (its instance actions from 2.21)."""
        try:
            instance = objects.Instance.get_by_uuid(context, server_id,
                                                    read_deleted=read_deleted)
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

    def get_all(self, context, search_opts=None, limit=None, marker=None):
        opts = dict(search_opts or {})
        filters = {}
        if not (context.is_admin and opts.get("all_tenants")):
            filters["project_id"] = context.project_id
        if context.is_admin and opts.get("project_id"):
            filters["project_id"] = opts["project_id"]
        for key in ("name", "flavorid", "image_ref", "changes-since",
                    "changes-before"):
            if opts.get(key) is not None:
                filters[key] = opts[key]
        if opts.get("changes-since") or opts.get("changes-before"):
            filters["read_deleted"] = True      # deleted servers changed too
        if opts.get("host") and context.is_admin:
            filters["host"] = opts["host"]
        if opts.get("reservation_id"):
            filters["reservation_id"] = opts["reservation_id"]
        for key in ("tags", "tags-any", "not-tags", "not-tags-any",
                    "locked"):
            if opts.get(key) is not None:
                filters[key] = opts[key]
        status = opts.get("status")
        if status:
            vm_state = base.STATUS_TO_VM_STATE.get(str(status).upper())
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
                if bdm.get("boot_index") == 0 and not strutils.bool_from_string(
                        volume.get("bootable", True), default=True):
                    # Cinder says "false" of a volume made blank (Nova's check)
                    raise exception.InvalidBDMVolumeNotBootable(id=volume_id)
                self._check_volume_attachable(volume)
                volumes[volume_id] = volume
            elif source in ("image", "blank", "snapshot") and dest == "local":
                if source == "image" and bdm.get("boot_index") == 0 and not bdm.get("uuid"):
                    raise exception.InvalidBDM(reason="missing image uuid.")
            elif source is not None:
                raise exception.InvalidBDM(reason="unknown source_type %s." % source)
        return bdms, volumes

    def create(self, context, *, name, flavor_ref, image_ref, block_device_mapping,
               min_count=1, max_count=1, metadata=None, key_name=None,
               availability_zone=None, access_ip_v4=None, access_ip_v6=None,
               config_drive=None, description=None, supports_multiattach=False,
               multiattach_multi_create=False, microversion=None, user_data=None,
               group=None, tags=None):
        """``group``: the uuid of the server group the servers join (the
        ``group`` scheduler hint); ``tags``: their tags (2.52)."""
        flavor = objects.Flavor.get_by_flavor_id(context, flavor_ref)
        if group is not None:
            group = self.group_for_create(context, group)
        zone = (availability_zone or "").split(":", 1)[0]
        if zone and not availability_zones.zone_exists(context, zone):
            # Nova's answer (400) for a zone that no compute is in
            raise exception.InvalidRequest(
                message="The requested availability zone is not available")
        if image_ref and not base.is_uuid(image_ref):
            raise exception.ImageRefInvalid()
        self._check_image(image_ref)
        if key_name is not None:
            self.check_key_name(context, key_name)
        min_count = int(min_count or 1)
        max_count = int(max_count or min_count)
        if max_count < min_count:
            raise exception.InvalidInput(reason="min_count must be <= max_count")
        bdm_dicts, _volumes = self._check_create_bdms(
            context, block_device_mapping, image_ref, max_count, supports_multiattach,
            multiattach_multi_create)
        if any(b.get("attach_mode") == "ro" for b in bdm_dicts):
            self._check_read_only_computes(context)
        self.check_metadata_quota(context, context.project_id, metadata)
        self._check_disk_devices(bdm_dicts, image_ref)
        reservation_id = "r-" + secrets.token_hex(4)
        new = []
        for index in range(max_count):
            display_name = name
            if max_count > 1:
                # "-N" after a name cut to fit the 255 characters of
                # the display_name and hostname columns
                suffix = "-%d" % (index + 1)
                display_name = name[:255 - len(suffix)] + suffix
            new.append(objects.Instance(
                context, uuid=str(uuidlib.uuid4()), project_id=context.project_id,
                user_id=context.user_id, display_name=display_name,
                display_description=description,
                hostname=display_name, vm_state=instance_obj.BUILDING,
                task_state="scheduling", power_state=instance_obj.NOSTATE,
                flavor=flavor, image_ref=image_ref or "", key_name=key_name,
                locked=False, availability_zone=availability_zone,
                reservation_id=reservation_id, launch_index=index,
                access_ip_v4=access_ip_v4, access_ip_v6=access_ip_v6,
                config_drive=config_drive or "", metadata=dict(metadata or {}),
                user_data=user_data))
        # the quota check and the rows are one step (api/compute/quotas.py)
        instances = objects.Instance.create_many(
            new, self.instance_admitter(context, flavor, min_count, max_count),
            tags=tags or ())
        created_bdms = []
        try:
            if group is not None:
                group.add_members([instance.uuid for instance in instances])
            for instance in instances:
                objects.InstanceAction.action_start(context, instance.uuid,
                                                    instance_action.CREATE)
                mappings = [dict(b) for b in bdm_dicts]
                if image_ref and not any(b.get("boot_index") == 0 for b in mappings):
                    mappings.insert(0, {"source_type": "image", "destination_type": "local",
                                        "boot_index": 0, "uuid": image_ref,
                                        "delete_on_termination": True})
                device_naming.assign(mappings)
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
            volume_release.release_instance_volumes(context, self.volume_api,
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
    def _check_disk_devices(bdm_dicts, image_ref):
        """[compute] max_disk_devices_to_attach counts each server's disks
        (its image root too): over it, 403 before anything is created."""
        limit = CONF.compute.max_disk_devices_to_attach
        disks = len(bdm_dicts) + (1 if image_ref and not any(
            b.get("boot_index") == 0 for b in bdm_dicts) else 0)
        if limit >= 0 and disks > limit:
            raise exception.TooManyDiskDevices(maximum=limit)

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
            attach_mode=(mapping.get("attach_mode") or block_device_obj.DEFAULT_ATTACH_MODE)
            if mapping.get("destination_type") == "volume" else None)

    def update(self, context, instance, changes, pin=False, zone=None):
        """Rename, describe, re-address (access IPs) or re-hostname the
        server: a database write, allowed in every state (as in Nova).
        ``pin`` (2.104): also unpin (``zone`` None) or re-pin its zone,
        see ``_pin``."""
        if pin:
            self._pin(instance, zone)
        for name, value in changes.items():
            setattr(instance, name, value)
        instance.save()
        return instance

    @staticmethod
    def _pin(instance, zone):
        """Nova's 2.104 transitions of ``pinned_availability_zone``: unpin
        (a forced host stays forced), pin an unpinned server to the zone it
        is in, or set the pinned zone again (no change).  Pinning to
        another zone, or from one zone straight to another, is 409."""
        pinned = instance.pinned_availability_zone
        if zone is None:
            if pinned is not None:
                instance.pin_availability_zone(None)
            return
        if pinned is not None:
            if zone != pinned:
                raise exception.Conflict(
                    message="Cannot change pinned availability zone directly. "
                            "Unpin first by setting pinned_availability_zone "
                            "to null.")
            return
        # a server not placed yet is in no zone
        current = availability_zones.host_zone(instance.host)
        if zone != current:
            raise exception.Conflict(
                message="Server can only be pinned to its current "
                        "availability zone '%s', but '%s' was requested."
                        % (current, zone))
        instance.pin_availability_zone(zone)

    def delete(self, context, instance):
        """Delete the server, interrupting a build or a change of its power
        state; while shelve, offload or unshelve moves it and its volumes
        the answer is 409 (a delete racing them could leave an attachment
        behind).  A server already being deleted: nothing more to do."""
        self._check_locked(context, instance)
        if instance.task_state == "deleting":
            return
        self._check_state(instance, "delete", (instance.vm_state,),
                          base.DELETE_INTERRUPTIBLE_TASK_STATES)
        objects.InstanceAction.action_start(context, instance.uuid, instance_action.DELETE)
        if instance.host and self._host_is_up(context, instance.host, cached=False):
            instance.task_state = "deleting"
            try:
                instance.save(expected_task_state=list(base.DELETE_INTERRUPTIBLE_TASK_STATES))
            except exception.UnexpectedTaskState:
                fresh = objects.Instance.get_by_uuid(context, instance.uuid)
                if fresh.task_state == "deleting":
                    return
                self._check_state(fresh, "delete", (fresh.vm_state,),
                                  base.DELETE_INTERRUPTIBLE_TASK_STATES)
                raise
            self.compute_task_api.delete_instance(context, instance)
            return
        self._local_delete(context, instance)

    def force_delete(self, context, instance):
        """forceDelete: there is no soft delete here ([DEFAULT]
        reclaim_instance_interval is not supported), so it is the delete."""
        self.delete(context, instance)

    def restore(self, context, instance):
        """restore: only a soft-deleted server (409 otherwise, as Nova);
        nothing stopped the guest, so the server is active again."""
        self._check_locked(context, instance)
        self._check_state(instance, "restore", (instance_obj.SOFT_DELETED,))
        instance.vm_state = instance_obj.ACTIVE
        instance.save(expected_task_state=[None],
                      expected_vm_state=[instance_obj.SOFT_DELETED])

    def _local_delete(self, context, instance):
        """Delete a server that is on no (running) host, here in the API."""
        bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(context, instance.uuid)
        volume_release.release_instance_volumes(context, self.volume_api, bdms)
        try:
            instance.destroy()
        except exception.InstanceNotFound:
            pass
        volume_release.release_instance_volumes(
            context, self.volume_api,
            volume_release.created_since(context, instance, bdms))
