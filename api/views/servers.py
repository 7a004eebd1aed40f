"""Server bodies: create response, list (id/name/links) and detail.

The detail view (``GET /servers/{id}``, ``GET /servers/detail``) has, per
microversion (tempest's response schemas check every key, with
``additionalProperties: false``):

  always     id, name, status, links, tenant_id, user_id, created, updated,
             hostId, image ({id, links} or "" when booted from a volume),
             flavor, metadata, addresses ({}), accessIPv4/6, config_drive,
             key_name, OS-DCF:diskConfig, OS-EXT-AZ:availability_zone,
             OS-EXT-STS:{task_state,vm_state,power_state},
             OS-SRV-USG:{launched_at,terminated_at},
             os-extended-volumes:volumes_attached [{id}],
             progress (0, for BUILD/ACTIVE/...), fault (ERROR/DELETED, if any)
  admin      OS-EXT-SRV-ATTR:{host,instance_name,hypervisor_hostname}
  2.3+       volumes_attached items gain delete_on_termination; admins also
             get OS-EXT-SRV-ATTR:{hostname,kernel_id,launch_index,ramdisk_id,
             reservation_id,root_device_name,user_data}
  2.9+       locked
  2.16+      host_status (admins)
  2.19+      description
  2.26+      tags
  2.47+      flavor is {vcpus, ram, disk, ephemeral, swap, original_name,
             extra_specs} instead of {id, links}
  2.63+      trusted_image_certificates (null)
  2.71+      server_groups ([]), on show only (not in the detail list)
  2.73+      locked_reason
  2.90+      OS-EXT-SRV-ATTR:hostname for every caller
  2.96+      pinned_availability_zone
  2.98+      image gains properties ({})
  2.100+     scheduler_hints ({})
"""
import hashlib

from volattach.api import common
from volattach.api import policy
from volattach.api.views import field
from volattach.api.views import isotime
from volattach.api.views import primitive_time

# vm_state -> {task_state -> status}, Nova's status map
_STATE_MAP = {
    "active": {"default": "ACTIVE",
               "rebooting": "REBOOT", "reboot_pending": "REBOOT",
               "reboot_started": "REBOOT",
               "rebooting_hard": "HARD_REBOOT",
               "reboot_pending_hard": "HARD_REBOOT",
               "reboot_started_hard": "HARD_REBOOT",
               "updating_password": "PASSWORD",
               "rebuilding": "REBUILD",
               "rebuild_block_device_mapping": "REBUILD",
               "rebuild_spawning": "REBUILD",
               "migrating": "MIGRATING",
               "resize_prep": "RESIZE", "resize_migrating": "RESIZE",
               "resize_migrated": "RESIZE", "resize_finish": "RESIZE"},
    "building": {"default": "BUILD"},
    "stopped": {"default": "SHUTOFF",
                "resize_prep": "RESIZE", "resize_migrating": "RESIZE",
                "resize_migrated": "RESIZE", "resize_finish": "RESIZE",
                "rebuilding": "REBUILD",
                "rebuild_block_device_mapping": "REBUILD",
                "rebuild_spawning": "REBUILD"},
    "resized": {"default": "VERIFY_RESIZE",
                "resize_reverting": "REVERT_RESIZE"},
    "paused": {"default": "PAUSED", "migrating": "MIGRATING"},
    "suspended": {"default": "SUSPENDED"},
    "rescued": {"default": "RESCUE"},
    "error": {"default": "ERROR",
              "rebuilding": "REBUILD",
              "rebuild_block_device_mapping": "REBUILD",
              "rebuild_spawning": "REBUILD"},
    "deleted": {"default": "DELETED"},
    "soft-delete": {"default": "SOFT_DELETED"},
    "shelved": {"default": "SHELVED"},
    "shelved_offloaded": {"default": "SHELVED_OFFLOADED"},
}

STATUSES = sorted({s for m in _STATE_MAP.values() for s in m.values()})

_PROGRESS_STATUSES = ("ACTIVE", "BUILD", "REBUILD", "RESIZE", "VERIFY_RESIZE",
                      "MIGRATING")
_FAULT_STATUSES = ("ERROR", "DELETED")

DEFAULT_AVAILABILITY_ZONE = "nova"


def status_from_state(vm_state, task_state=None):
    task_map = _STATE_MAP.get(vm_state, {"default": "UNKNOWN"})
    return task_map.get(task_state, task_map["default"])


def status(instance):
    if field(instance, "deleted"):
        return "DELETED"
    return status_from_state(instance.vm_state, field(instance, "task_state"))


def host_id(project_id, host):
    """Nova's hostId: sha224 of project id + host, "" without a host."""
    if not host:
        return ""
    return hashlib.sha224((str(project_id) + str(host)).encode()).hexdigest()


def instance_name(instance):
    """Nova's default ``instance_name_template``: ``instance-%08x``."""
    db_id = field(instance, "id")
    return "instance-%08x" % db_id if db_id is not None else ""


# -- pieces ------------------------------------------------------------------------

def _image(req, instance):
    image_ref = field(instance, "image_ref")
    if not image_ref:
        return ""
    image_id = str(image_ref).rstrip("/").split("/")[-1]
    image = {"id": image_id,
             "links": [{"rel": "bookmark",
                        "href": common.bookmark(req, "images", image_id)}]}
    if req.context.microversion.matches("2.98"):
        image["properties"] = {}
    return image


def _flavor(req, instance):
    flavor = field(instance, "flavor")
    if flavor is None:
        return {}
    if req.context.microversion.matches("2.47"):
        return {"vcpus": flavor.vcpus, "ram": flavor.memory_mb,
                "disk": flavor.root_gb, "ephemeral": flavor.ephemeral_gb,
                "swap": flavor.swap, "original_name": flavor.name,
                "extra_specs": {}}
    return {"id": str(flavor.flavorid),
            "links": [{"rel": "bookmark",
                       "href": common.bookmark(req, "flavors",
                                               flavor.flavorid)}]}


def _fault(req, instance):
    fault = field(instance, "fault")
    if not fault:
        return None
    body = {"code": int(fault.get("code", 500)),
            "created": isotime(fault.get("created") or fault.get("created_at")
                               or field(instance, "updated_at")
                               or field(instance, "created_at")),
            "message": fault.get("message") or ""}
    details = fault.get("details")
    if details and (req.context.ctx.is_admin or body["code"] != 500):
        body["details"] = details
    return body


def _volumes_attached(req, bdms):
    volumes = []
    for bdm in bdms or ():
        if not bdm.volume_id:
            continue
        volume = {"id": bdm.volume_id}
        if req.context.microversion.matches("2.3"):
            volume["delete_on_termination"] = bool(bdm.delete_on_termination)
        volumes.append(volume)
    return volumes


def _root_device_name(bdms):
    for bdm in bdms or ():
        if bdm.boot_index == 0:
            return bdm.device_name
    return None


def _zones(req):
    """host -> zone of every host in a zoned aggregate, read once per
    request through the facade (a list of servers asks once)."""
    zones = req.context.get("host_zones")
    if zones is None:
        zones = req.context["host_zones"] = req.context.compute.host_zones()
    return zones


def availability_zone(instance, req=None):
    """OS-EXT-AZ:availability_zone: the zone of the server's host (its
    aggregate's, or the default zone), or before it has one the zone it
    asked for."""
    host = field(instance, "host")
    if host:
        if req is None:
            return DEFAULT_AVAILABILITY_ZONE
        return _zones(req).get(host, DEFAULT_AVAILABILITY_ZONE)
    return instance.pinned_availability_zone or ""


def _server_groups(req, instance):
    """2.71: the server group the server is in (a list of at most one)."""
    return req.context.compute.server_group_ids(req.context.ctx, instance)


# -- bodies ------------------------------------------------------------------------

def create(req, instance, security_groups=None, admin_pass=None):
    server = {
        "id": instance.uuid,
        "links": common.links(req, "servers", instance.uuid),
        "OS-DCF:diskConfig": "MANUAL",
        "security_groups": security_groups or [{"name": "default"}],
    }
    if admin_pass is not None:
        server["adminPass"] = admin_pass
    return {"server": server}


def basic(req, instance):
    return {"id": instance.uuid, "name": field(instance, "display_name") or "",
            "links": common.links(req, "servers", instance.uuid)}


def index(req, conf, instances):
    body = {"servers": [basic(req, i) for i in instances]}
    next_links = common.collection_links(req, conf, body["servers"], "servers")
    if next_links:
        body["servers_links"] = next_links
    return body


def server(req, instance, bdms, host_statuses=None, show_server_groups=False,
           tags=None):
    """The detailed dict of one server (without the ``server`` wrapper).

    ``bdms``: the server's block device mappings; ``host_statuses``: host ->
    host_status (UP, DOWN, MAINTENANCE, UNKNOWN), given when the caller may
    see it.
    """
    mv = req.context.microversion
    ctx = req.context.ctx
    created = field(instance, "created_at")
    body = {
        "accessIPv4": field(instance, "access_ip_v4") or "",
        "accessIPv6": field(instance, "access_ip_v6") or "",
        "addresses": {},
        "created": isotime(created),
        "flavor": _flavor(req, instance),
        "hostId": host_id(instance.project_id, field(instance, "host")),
        "id": instance.uuid,
        "image": _image(req, instance),
        "links": common.links(req, "servers", instance.uuid),
        "metadata": dict(field(instance, "metadata") or {}),
        "name": field(instance, "display_name") or "",
        "status": status(instance),
        "tenant_id": instance.project_id or "",
        "user_id": field(instance, "user_id") or "",
        "updated": isotime(field(instance, "updated_at") or created),
        "OS-DCF:diskConfig": "MANUAL",
        "OS-EXT-AZ:availability_zone": availability_zone(instance, req),
        "config_drive": field(instance, "config_drive") or "",
        "key_name": field(instance, "key_name"),
        "OS-SRV-USG:launched_at": primitive_time(field(instance,
                                                       "launched_at")),
        "OS-SRV-USG:terminated_at": primitive_time(field(instance,
                                                         "terminated_at")),
        "OS-EXT-STS:task_state": field(instance, "task_state"),
        "OS-EXT-STS:vm_state": instance.vm_state,
        "OS-EXT-STS:power_state": field(instance, "power_state", 0),
        "os-extended-volumes:volumes_attached": _volumes_attached(req, bdms),
    }
    if body["status"] in _FAULT_STATUSES:
        fault = _fault(req, instance)
        if fault:
            body["fault"] = fault
    if body["status"] in _PROGRESS_STATUSES:
        body["progress"] = 0

    extended = policy.check(ctx, "os_compute_api:os-extended-server-attributes",
                            {"project_id": instance.project_id})
    if extended:
        body["OS-EXT-SRV-ATTR:host"] = field(instance, "host")
        body["OS-EXT-SRV-ATTR:instance_name"] = instance_name(instance)
        body["OS-EXT-SRV-ATTR:hypervisor_hostname"] = field(instance, "node")
        if mv.matches("2.3"):
            body.update({
                "OS-EXT-SRV-ATTR:hostname": field(instance, "hostname") or "",
                "OS-EXT-SRV-ATTR:kernel_id": None,
                "OS-EXT-SRV-ATTR:launch_index": field(instance,
                                                      "launch_index", 0),
                "OS-EXT-SRV-ATTR:ramdisk_id": None,
                "OS-EXT-SRV-ATTR:reservation_id": field(instance,
                                                        "reservation_id"),
                "OS-EXT-SRV-ATTR:root_device_name": _root_device_name(bdms),
                "OS-EXT-SRV-ATTR:user_data": field(instance, "user_data"),
            })
    if mv.matches("2.9"):
        body["locked"] = bool(field(instance, "locked"))
    if mv.matches("2.16") and host_statuses is not None:
        host = field(instance, "host")
        body["host_status"] = host_statuses.get(host, "UNKNOWN") if host else ""
    if mv.matches("2.19"):
        body["description"] = field(instance, "display_description")
    if mv.matches("2.26"):
        body["tags"] = list(tags or [])
    if mv.matches("2.63"):
        body["trusted_image_certificates"] = None
    if show_server_groups and mv.matches("2.71"):
        body["server_groups"] = _server_groups(req, instance)
    if mv.matches("2.73"):
        body["locked_reason"] = field(instance, "locked_reason")
    if mv.matches("2.90") and not extended:
        body["OS-EXT-SRV-ATTR:hostname"] = field(instance, "hostname") or ""
    if mv.matches("2.96"):
        body["pinned_availability_zone"] = instance.pinned_availability_zone
    if mv.matches("2.100"):
        body["scheduler_hints"] = {}
    return body


def show(req, instance, bdms, host_statuses=None, tags=None):
    return {"server": server(req, instance, bdms, host_statuses,
                             show_server_groups=True, tags=tags)}


# what Nova's PUT /servers/{id} leaves out of the server before 2.75
_NOT_IN_UPDATE = ("OS-EXT-AZ:", "OS-EXT-SRV-ATTR:", "OS-EXT-STS:",
                  "OS-SRV-USG:", "os-extended-volumes:", "config_drive",
                  "key_name", "host_status", "server_groups",
                  "security_groups")


def updated(req, instance, bdms, host_statuses=None, tags=None):
    """The body of PUT /servers/{id}: from 2.75 the same as a show, before
    it the server without its extension attributes (as Nova answers)."""
    if req.context.microversion.matches("2.75"):
        return show(req, instance, bdms, host_statuses, tags)
    body = server(req, instance, bdms, tags=tags)
    return {"server": {k: v for k, v in body.items()
                       if not k.startswith(_NOT_IN_UPDATE)}}


def detail(req, conf, instances, bdms_by_instance, host_statuses=None,
           tags_by_instance=None):
    tags_by_instance = tags_by_instance or {}
    servers = [server(req, instance, bdms_by_instance.get(instance.uuid, []),
                      host_statuses, tags=tags_by_instance.get(instance.uuid))
               for instance in instances]
    body = {"servers": servers}
    next_links = common.collection_links(req, conf, servers, "servers/detail")
    if next_links:
        body["servers_links"] = next_links
    return body
