"""A hand-written stand-in for ``volattach.api.compute.API`` (unit tests of api/ only).

It keeps real versioned objects in dicts, enforces the facade's project
isolation (another project's server is InstanceNotFound unless admin),
records every call in ``calls`` and raises what a test puts in ``errors``
(method name -> exception instance).
"""
import datetime
import uuid

from volattach import objects
from volattach import exception

objects.register_all()

NOW = datetime.datetime(2026, 8, 1, 12, 30, 45, tzinfo=datetime.timezone.utc)
IMAGE = "155d900f-4e14-4e4c-a73d-069cbf4541e6"


def make_flavor(flavorid="1", name="m1.tiny", **kw):
    values = dict(id=int(flavorid) if flavorid.isdigit() else 99,
                  flavorid=flavorid, name=name, vcpus=1, memory_mb=512,
                  root_gb=1, ephemeral_gb=0, swap=0, rxtx_factor=1.0,
                  is_public=True, disabled=False, description=None)
    values.update(kw)
    return objects.Flavor(**values)


def make_instance(project_id="p1", user_id="u1", **kw):
    values = dict(
        id=7, uuid=str(uuid.uuid4()), project_id=project_id, user_id=user_id,
        display_name="vm1", hostname="vm1", host="compute1", node="compute1",
        vm_state="active", task_state=None, power_state=1,
        flavor=make_flavor(), image_ref=IMAGE, key_name=None, locked=False,
        locked_by=None, locked_reason=None, availability_zone=None,
        reservation_id="r-12345678", launch_index=0, access_ip_v4=None,
        access_ip_v6=None, config_drive="", metadata={}, fault=None,
        shelved_at=None, launched_at=NOW, terminated_at=None, deleted_at=None,
        deleted=False, created_at=NOW, updated_at=NOW)
    values.update(kw)
    return objects.Instance(**values)


def make_bdm(instance, volume_id=None, **kw):
    values = dict(
        id=1, uuid=str(uuid.uuid4()), instance_uuid=instance.uuid,
        source_type="volume", destination_type="volume", boot_index=None,
        device_name="/dev/vdb", volume_id=volume_id or str(uuid.uuid4()),
        attachment_id=str(uuid.uuid4()), connection_info=None,
        delete_on_termination=False, tag=None, volume_size=None,
        volume_type=None, disk_bus=None, device_type=None, guest_format=None,
        image_id=None, snapshot_id=None, no_device=False,
        created_at=NOW, updated_at=NOW)
    values.update(kw)
    return objects.BlockDeviceMapping(**values)


def make_service(binary="volattach-compute", host="compute1", **kw):
    values = dict(id=3, uuid=str(uuid.uuid4()), host=host, binary=binary,
                  topic="compute", report_count=5, disabled=False,
                  disabled_reason=None, forced_down=False, version=1,
                  rpc_version="1.0", connector=None, last_seen_up=NOW,
                  created_at=NOW, updated_at=NOW)
    values.update(kw)
    return objects.Service(**values)


def make_action(instance, request_id="req-1", action="attach_volume", **kw):
    values = dict(id=1, action=action, instance_uuid=instance.uuid,
                  request_id=request_id, user_id=instance.user_id,
                  project_id=instance.project_id, start_time=NOW,
                  finish_time=None, message=None, updated_at=NOW)
    values.update(kw)
    return objects.InstanceAction(**values)


def make_event(**kw):
    values = dict(id=1, action_id=1, event="compute_attach_volume",
                  start_time=NOW, finish_time=NOW, result="Error",
                  traceback="Traceback: boom", host="compute1",
                  details="boom")
    values.update(kw)
    return objects.InstanceActionEvent(**values)


class FakeFacade:

    def __init__(self):
        self.flavors = [make_flavor("1", "m1.tiny"),
                        make_flavor("2", "m1.small", memory_mb=2048,
                                    root_gb=20, swap=512)]
        self.instances = {}
        self.deleted_instances = {}
        self.bdms = {}
        self.services = [(make_service(), True),
                         (make_service("volattach-conductor", "ctl1", id=4),
                          True)]
        self.actions = {}
        self.calls = []
        self.errors = {}
        self.attach_result = "/dev/vdb"
        self.created = []

    # -- helpers for tests -------------------------------------------------------
    def add_instance(self, **kw):
        instance = make_instance(**kw)
        self.instances[instance.uuid] = instance
        self.bdms.setdefault(instance.uuid, [])
        return instance

    def add_bdm(self, instance, **kw):
        bdm = make_bdm(instance, **kw)
        self.bdms.setdefault(instance.uuid, []).append(bdm)
        return bdm

    def last_call(self, name):
        for call_name, args, kwargs in reversed(self.calls):
            if call_name == name:
                return args, kwargs
        raise AssertionError("%s was not called; calls: %s"
                             % (name, [c[0] for c in self.calls]))

    def called(self, name):
        return any(c[0] == name for c in self.calls)

    def _record(self, name, /, *args, **kwargs):
        self.calls.append((name, args, kwargs))
        if name in self.errors:
            raise self.errors[name]

    # -- the facade contract -----------------------------------------------------
    def flavor_list(self, ctx):
        self._record("flavor_list", ctx)
        return list(self.flavors)

    def flavor_get(self, ctx, flavor_id):
        self._record("flavor_get", ctx, flavor_id)
        for flavor in self.flavors:
            if flavor.flavorid == flavor_id:
                return flavor
        raise exception.FlavorNotFound(flavor_id=flavor_id)

    def service_list(self, ctx, binary=None, host=None):
        self._record("service_list", ctx, binary=binary, host=host)
        return [(s, up) for s, up in self.services
                if (binary is None or s.binary == binary)
                and (host is None or s.host == host)]

    # host -> zone of the hosts in a zoned aggregate; instance uuid -> the
    # uuid of its server group
    zones = {}
    groups = {}

    def host_zones(self):
        return dict(self.zones)

    def service_zones(self, services):
        return [(s, self.zones.get(s.host, "nova")
                 if s.binary.endswith("-compute") else "internal")
                for s in services]

    def server_group_ids(self, ctx, instance):
        group = self.groups.get(instance.uuid)
        return [group] if group else []

    def get(self, ctx, server_id, read_deleted=False):
        self._record("get", ctx, server_id, read_deleted=read_deleted)
        instance = self.instances.get(server_id)
        if instance is None and read_deleted:
            instance = self.deleted_instances.get(server_id)
        if instance is None or (not ctx.is_admin
                                and instance.project_id != ctx.project_id):
            raise exception.InstanceNotFound(instance_id=server_id)
        return instance

    def get_with_bdms(self, ctx, server_id):
        self._record("get_with_bdms", ctx, server_id)
        instance = self.instances.get(server_id)
        if instance is None or (not ctx.is_admin
                                and instance.project_id != ctx.project_id):
            raise exception.InstanceNotFound(instance_id=server_id)
        return instance, list(self.bdms.get(instance.uuid, []))

    def list_volume_attachments(self, ctx, server_id):
        self._record("list_volume_attachments", ctx, server_id)
        instance = self.instances.get(server_id)
        if instance is None or (not ctx.is_admin
                                and instance.project_id != ctx.project_id):
            raise exception.InstanceNotFound(instance_id=server_id)
        return instance.project_id, [b for b in self.bdms.get(instance.uuid, [])
                                     if b.is_volume]

    def get_all(self, ctx, search_opts, limit=None, marker=None):
        self._record("get_all", ctx, search_opts, limit=limit, marker=marker)
        result = [i for i in self.instances.values()
                  if (ctx.is_admin and search_opts.get("all_tenants"))
                  or i.project_id == ctx.project_id]
        if marker is not None:
            ids = [i.uuid for i in result]
            if marker not in ids:
                raise exception.InstanceNotFound(instance_id=marker)
            result = result[ids.index(marker) + 1:]
        return result[:limit] if limit is not None else result

    def get_bdms_by_instances(self, ctx, instances):
        self._record("get_bdms_by_instances", ctx, instances)
        return {i.uuid: list(self.bdms.get(i.uuid, [])) for i in instances}

    def get_tags(self, ctx, instance):
        return list(getattr(instance, "_tags", []))

    def tags_by_instances(self, ctx, instances):
        return {i.uuid: list(getattr(i, "_tags", [])) for i in instances}

    def create(self, ctx, **kwargs):
        self._record("create", ctx, **kwargs)
        instances = [make_instance(project_id=ctx.project_id,
                                   user_id=ctx.user_id,
                                   display_name=kwargs["name"],
                                   vm_state="building", host=None, node=None)
                     for _ in range(kwargs.get("max_count", 1))]
        for instance in instances:
            self.instances[instance.uuid] = instance
        self.created.extend(instances)
        return instances, "r-abcdef12"

    def delete(self, ctx, instance):
        self._record("delete", ctx, instance)
        self.instances.pop(instance.uuid, None)

    def get_volume_attachments(self, ctx, instance, bdms=None):
        self._record("get_volume_attachments", ctx, instance, bdms=bdms)
        bdms = self.bdms.get(instance.uuid, []) if bdms is None else bdms
        return [b for b in bdms if b.is_volume]

    def get_volume_attachment(self, ctx, instance, volume_id, bdms=None):
        self._record("get_volume_attachment", ctx, instance, volume_id,
                     bdms=bdms)
        bdms = self.bdms.get(instance.uuid, []) if bdms is None else bdms
        for bdm in bdms:
            if bdm.volume_id == volume_id and bdm.is_volume:
                return bdm
        raise exception.VolumeBDMNotFound(volume_id=volume_id)

    def attach_volume(self, ctx, instance, volume_id, device=None, tag=None,
                      delete_on_termination=False, supports_multiattach=False,
                      wait=True, attach_mode="rw", bdms=None):
        self._record("attach_volume", ctx, instance, volume_id, device=device,
                     tag=tag, delete_on_termination=delete_on_termination,
                     supports_multiattach=supports_multiattach, wait=wait,
                     attach_mode=attach_mode, bdms=bdms)
        return self.attach_result if wait else None

    def detach_volume(self, ctx, instance, volume_id, bdms=None):
        self._record("detach_volume", ctx, instance, volume_id, bdms=bdms)
        self.get_volume_attachment(ctx, instance, volume_id, bdms=bdms)

    def swap_volume(self, ctx, instance, old_volume_id, new_volume_id):
        self._record("swap_volume", ctx, instance, old_volume_id,
                     new_volume_id)

    def update_volume_attachment(self, ctx, instance, volume_id,
                                 delete_on_termination):
        self._record("update_volume_attachment", ctx, instance, volume_id,
                     delete_on_termination)

    def get_instance_actions(self, ctx, instance):
        self._record("get_instance_actions", ctx, instance)
        return [a for a, _e in self.actions.get(instance.uuid, [])]

    def get_instance_action(self, ctx, instance, request_id):
        self._record("get_instance_action", ctx, instance, request_id)
        for action, events in self.actions.get(instance.uuid, []):
            if action.request_id == request_id:
                return action, events
        raise exception.InstanceActionNotFound(request_id=request_id,
                                               instance_uuid=instance.uuid)

    def _action(name):
        def method(self, ctx, instance, **kwargs):
            self._record(name, ctx, instance, **kwargs)
        method.__name__ = name
        return method

    stop = _action("stop")
    start = _action("start")
    pause = _action("pause")
    unpause = _action("unpause")
    lock = _action("lock")
    unlock = _action("unlock")
    shelve = _action("shelve")
    shelve_offload = _action("shelve_offload")
    unshelve = _action("unshelve")
    del _action

    console_output = "line1\nline2\x07\n"

    def get_console_output(self, ctx, instance, length=None):
        self._record("get_console_output", ctx, instance, length)
        return self.console_output
