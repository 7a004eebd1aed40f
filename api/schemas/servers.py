"""Schemas of /servers (create, list queries) and of the server actions."""
import copy

from volattach.api.schemas import parameter_types

# -- POST /servers -----------------------------------------------------------------

_legacy_block_device_mapping = {
    "type": "object",
    "properties": {
        "virtual_name": {"type": "string", "maxLength": 255},
        "volume_id": parameter_types.volume_id,
        "snapshot_id": parameter_types.image_id,
        "volume_size": parameter_types.volume_size,
        "device_name": {"type": "string", "minLength": 1, "maxLength": 255,
                        "pattern": "^[a-zA-Z0-9._/-]*$"},
        "delete_on_termination": parameter_types.boolean,
        "no_device": {},
        "connection_info": {"type": "string", "maxLength": 16777215},
    },
    "additionalProperties": False,
}

_block_device_mapping_v2 = copy.deepcopy(_legacy_block_device_mapping)
_block_device_mapping_v2["properties"].update({
    "source_type": {"type": "string",
                    "enum": ["volume", "image", "snapshot", "blank"]},
    "uuid": {"type": "string", "minLength": 1, "maxLength": 255,
             "pattern": "^[a-zA-Z0-9._-]*$"},
    "image_id": parameter_types.image_id,
    "destination_type": {"type": "string", "enum": ["local", "volume"]},
    "guest_format": {"type": "string", "maxLength": 255},
    "device_type": {"type": "string", "maxLength": 255},
    "disk_bus": {"type": "string", "maxLength": 255},
    # None is accepted for backward compatibility, as in Nova
    "boot_index": {"type": ["integer", "string", "null"],
                   "pattern": "^-?[0-9]+$"},
})

_hints = {
    "type": "object",
    "properties": {
        "group": {"oneOf": [
            {"type": "array", "items": {"type": "string", "format": "uuid"}},
            {"type": "string", "format": "uuid"}]},
        "different_host": {"oneOf": [
            {"type": "string", "format": "uuid"},
            {"type": "array", "items": parameter_types.server_id}]},
        "same_host": {"type": ["string", "array"],
                      "items": parameter_types.server_id},
        "query": {"type": ["string", "object"]},
        "target_cell": parameter_types.name,
        "different_cell": {"type": ["string", "array"],
                           "items": {"type": "string", "maxLength": 255}},
        "build_near_host_ip": parameter_types.ip_address,
        "cidr": {"type": "string", "pattern": "^/[0-9a-f.:]+$"},
    },
    "additionalProperties": True,
}

create_v21 = {
    "type": "object",
    "properties": {
        "server": {
            "type": "object",
            "properties": {
                "name": parameter_types.name,
                # "" only when a block device boots (checked by the handler)
                "imageRef": parameter_types.image_id_or_empty_string,
                "flavorRef": parameter_types.flavor_ref,
                "adminPass": parameter_types.admin_password,
                "metadata": parameter_types.metadata,
                "networks": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "fixed_ip": parameter_types.ip_address,
                            "port": {"type": ["string", "null"],
                                     "format": "uuid"},
                            "uuid": {"type": "string", "maxLength": 255},
                        },
                        "additionalProperties": False,
                    },
                },
                "OS-DCF:diskConfig": parameter_types.disk_config,
                "accessIPv4": parameter_types.accessIPv4,
                "accessIPv6": parameter_types.accessIPv6,
                "personality": parameter_types.personality,
                "availability_zone": parameter_types.name,
                "block_device_mapping": {
                    "type": "array", "items": _legacy_block_device_mapping},
                "block_device_mapping_v2": {
                    "type": "array", "items": _block_device_mapping_v2},
                "config_drive": parameter_types.boolean,
                "key_name": parameter_types.name,
                "min_count": parameter_types.positive_integer,
                "max_count": parameter_types.positive_integer,
                "return_reservation_id": parameter_types.boolean,
                "security_groups": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"name": parameter_types.name},
                        "additionalProperties": False,
                    },
                },
                "user_data": {"type": "string", "format": "base64",
                              "maxLength": 65535},
            },
            "required": ["name", "flavorRef"],
            "additionalProperties": False,
        },
        "os:scheduler_hints": _hints,
        "OS-SCH-HNT:scheduler_hints": _hints,
    },
    "required": ["server"],
    "additionalProperties": False,
}


def _server(schema):
    return schema["properties"]["server"]["properties"]


create_v219 = copy.deepcopy(create_v21)
_server(create_v219)["description"] = parameter_types.description

# 2.32 only: tag on networks and block devices (lost at 2.33, back at 2.42)
create_v232 = copy.deepcopy(create_v219)
_server(create_v232)["networks"]["items"]["properties"]["tag"] = (
    parameter_types.tag)
_server(create_v232)["block_device_mapping_v2"]["items"]["properties"][
    "tag"] = parameter_types.tag

create_v233 = copy.deepcopy(create_v219)
_server(create_v233)["networks"]["items"]["properties"]["tag"] = (
    parameter_types.tag)

# 2.37: networks required, "auto"/"none" or a list with uuid network ids
_networks_v237 = {
    "oneOf": [
        {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "fixed_ip": parameter_types.ip_address,
                    "port": {"type": ["string", "null"], "format": "uuid"},
                    "uuid": {"type": "string", "format": "uuid"},
                },
                "additionalProperties": False,
            },
        },
        {"type": "string", "enum": ["none", "auto"]},
    ],
}
create_v237 = copy.deepcopy(create_v233)
create_v237["properties"]["server"]["required"].append("networks")
_server(create_v237)["networks"] = _networks_v237

create_v242 = copy.deepcopy(create_v237)
_server(create_v242)["networks"]["oneOf"][0]["items"]["properties"]["tag"] = (
    parameter_types.tag)
_server(create_v242)["block_device_mapping_v2"]["items"]["properties"][
    "tag"] = parameter_types.tag

create_v252 = copy.deepcopy(create_v242)
_server(create_v252)["tags"] = {"type": "array", "items": parameter_types.tag,
                                "maxItems": 50}

create_v257 = copy.deepcopy(create_v252)
_server(create_v257).pop("personality")

create_v263 = copy.deepcopy(create_v257)
_server(create_v263)["trusted_image_certificates"] = (
    parameter_types.trusted_certs)

create_v267 = copy.deepcopy(create_v263)
_server(create_v267)["block_device_mapping_v2"]["items"]["properties"][
    "volume_type"] = parameter_types.volume_type

create_v274 = copy.deepcopy(create_v267)
_server(create_v274)["host"] = parameter_types.fqdn
_server(create_v274)["hypervisor_hostname"] = parameter_types.fqdn

create_v290 = copy.deepcopy(create_v274)
_server(create_v290)["hostname"] = parameter_types.hostname

create_v294 = copy.deepcopy(create_v290)
_server(create_v294)["hostname"] = parameter_types.fqdn

# 2.105 (volattach's extension): attach_mode of a mapping
create_v2105 = copy.deepcopy(create_v294)
_server(create_v2105)["block_device_mapping_v2"]["items"]["properties"][
    "attach_mode"] = {"type": "string", "enum": ["ro", "rw"]}

CREATE = (("2.1", create_v21), ("2.19", create_v219), ("2.32", create_v232),
          ("2.33", create_v233), ("2.37", create_v237), ("2.42", create_v242),
          ("2.52", create_v252), ("2.57", create_v257), ("2.63", create_v263),
          ("2.67", create_v267), ("2.74", create_v274), ("2.90", create_v290),
          ("2.94", create_v294), ("2.105", create_v2105))

# -- PUT /servers/{id} ---------------------------------------------------------------

update_v21 = {
    "type": "object",
    "properties": {
        "server": {
            "type": "object",
            "properties": {
                "name": parameter_types.name,
                "OS-DCF:diskConfig": parameter_types.disk_config,
                "accessIPv4": parameter_types.accessIPv4,
                "accessIPv6": parameter_types.accessIPv6,
            },
            "additionalProperties": False,
        },
    },
    "required": ["server"],
    "additionalProperties": False,
}

update_v219 = copy.deepcopy(update_v21)
_server(update_v219)["description"] = parameter_types.description

update_v290 = copy.deepcopy(update_v219)
_server(update_v290)["hostname"] = parameter_types.hostname

update_v294 = copy.deepcopy(update_v290)
_server(update_v294)["hostname"] = parameter_types.fqdn

# 2.104: unpin (null) or re-pin the server's availability zone
update_v2104 = copy.deepcopy(update_v294)
_server(update_v2104)["pinned_availability_zone"] = (
    parameter_types.name_or_none)

UPDATE = (("2.1", update_v21), ("2.19", update_v219), ("2.90", update_v290),
          ("2.94", update_v294), ("2.104", update_v2104))

# -- GET /servers, /servers/detail ---------------------------------------------------

# query parameters that name joined tables: refused with 400 (as in Nova)
JOINED_TABLE_QUERY_PARAMS = ("block_device_mapping", "services", "metadata",
                             "system_metadata", "info_cache",
                             "security_groups", "pci_devices")

_SORT_KEYS = [
    "access_ip_v4", "access_ip_v6", "auto_disk_config", "availability_zone",
    "config_drive", "created_at", "display_description", "display_name",
    "host", "hostname", "image_ref", "instance_type_id", "kernel_id",
    "key_name", "launch_index", "launched_at", "locked_by", "node",
    "power_state", "progress", "project_id", "ramdisk_id", "root_device_name",
    "task_state", "terminated_at", "updated_at", "user_id", "uuid",
    "vm_state"]
# accepted and ignored before 2.75 (2.73 makes 'locked' a real key)
_IGNORED_SORT_KEYS = [
    "architecture", "cell_name", "cleaned", "default_ephemeral_device",
    "default_swap_device", "deleted", "deleted_at", "disable_terminate",
    "ephemeral_gb", "ephemeral_key_uuid", "id", "key_data", "launched_on",
    "locked", "memory_mb", "os_type", "reservation_id", "root_gb",
    "shutdown_terminate", "user_data", "vcpus", "vm_mode"]

_c = parameter_types.common_query_param
_r = parameter_types.common_query_regex_param

index_query_v21 = {
    "type": "object",
    "properties": dict(
        {name: _c for name in (
            "user_id", "project_id", "tenant_id", "launch_index", "image_ref",
            "image", "vm_state", "task_state", "host", "uuid", "sort_dir",
            "all_tenants", "soft_deleted", "deleted", "status")},
        **{name: _r for name in (
            "kernel_id", "ramdisk_id", "hostname", "key_name", "power_state",
            "node", "flavor", "reservation_id", "launched_at",
            "terminated_at", "availability_zone", "name", "display_name",
            "description", "display_description", "locked_by",
            "root_device_name", "config_drive", "access_ip_v4",
            "access_ip_v6", "auto_disk_config", "progress", "ip", "ip6",
            "created_at")},
        **{name: _c for name in JOINED_TABLE_QUERY_PARAMS},
        **{
            "sort_key": parameter_types.multi_params(
                {"type": "string", "enum": _SORT_KEYS + _IGNORED_SORT_KEYS}),
            "changes-since": parameter_types.multi_params(
                {"type": "string", "format": "date-time"}),
            "limit": parameter_types.multi_params(
                parameter_types.non_negative_integer),
            "marker": parameter_types.multi_params({"type": "string"}),
        }),
    # unknown parameters are ignored until 2.75
    "additionalProperties": True,
    # internal attributes (leading underscore) are kept, to be refused
    "patternProperties": {"^_": _c},
}

index_query_v226 = copy.deepcopy(index_query_v21)
index_query_v226["properties"].update(
    {name: _r for name in ("tags", "tags-any", "not-tags", "not-tags-any")})

index_query_v266 = copy.deepcopy(index_query_v226)
index_query_v266["properties"]["changes-before"] = (
    parameter_types.multi_params({"type": "string", "format": "date-time"}))

index_query_v273 = copy.deepcopy(index_query_v266)
index_query_v273["properties"]["locked"] = _c

index_query_v275 = copy.deepcopy(index_query_v273)
index_query_v275["properties"]["sort_key"] = parameter_types.multi_params(
    {"type": "string", "enum": _SORT_KEYS + ["locked"]})
index_query_v275["additionalProperties"] = False

INDEX_QUERY = (("2.1", index_query_v21), ("2.26", index_query_v226),
               ("2.66", index_query_v266), ("2.73", index_query_v273),
               ("2.75", index_query_v275))

show_query_v21 = {"type": "object", "properties": {},
                  "additionalProperties": True}
show_query_v2102 = copy.deepcopy(show_query_v21)
show_query_v2102["additionalProperties"] = False

SHOW_QUERY = (("2.1", show_query_v21), ("2.102", show_query_v2102))

# -- POST /servers/{server_id}/action ------------------------------------------------


def _action(name, value_schema=None):
    return {
        "type": "object",
        "properties": {name: {} if value_schema is None else value_schema},
        "required": [name],
        "additionalProperties": False,
    }


suspend_v21 = _action("suspend")
resume_v21 = _action("resume")
reboot_v21 = _action("reboot", {
    "type": "object",
    "properties": {"type": {"type": "string", "enum": [
        "HARD", "Hard", "hard", "SOFT", "Soft", "soft"]}},
    "required": ["type"],
    "additionalProperties": False,
})
force_delete_v21 = _action("forceDelete")
restore_v21 = _action("restore")
start_v21 = _action("os-start")
stop_v21 = _action("os-stop")
pause_v21 = _action("pause")
unpause_v21 = _action("unpause")
lock_v21 = _action("lock")
lock_v273 = _action("lock", {
    "type": ["object", "null"],
    "properties": {"locked_reason": {"type": "string", "minLength": 1,
                                     "maxLength": 255}},
    "additionalProperties": False,
})
unlock_v21 = _action("unlock")
reset_state_v21 = _action("os-resetState", {
    "type": "object",
    "properties": {"state": {"type": "string", "enum": ["active", "error"]}},
    "required": ["state"],
    "additionalProperties": False,
})
shelve_v21 = _action("shelve")
shelve_offload_v21 = _action("shelveOffload")
unshelve_v21 = _action("unshelve")
# {"unshelve": null} or {"unshelve": {"availability_zone": "az"}}
unshelve_v277 = _action("unshelve", {
    "type": ["object", "null"],
    "properties": {"availability_zone": parameter_types.name},
    "required": ["availability_zone"],
    "additionalProperties": False,
})
unshelve_v291 = _action("unshelve", {
    "type": ["object", "null"],
    "properties": {"availability_zone": {"type": ["string", "null"],
                                         "maxLength": 255},
                   "host": {"type": "string", "maxLength": 255}},
    "additionalProperties": False,
})

# os-migrateLive (Nova's migrate_server schemas): host null or a compute
# name; block_migration boolean (a string boolean) and, from 2.25, "auto";
# disk_over_commit until 2.25; force from 2.30 until 2.68.
_live_host = {"type": ["string", "null"], "minLength": 1, "maxLength": 255,
              "pattern": "^[a-zA-Z0-9-._]*$"}
migrate_live_v21 = _action("os-migrateLive", {
    "type": "object",
    "properties": {"block_migration": parameter_types.boolean,
                   "disk_over_commit": parameter_types.boolean,
                   "host": _live_host},
    "required": ["block_migration", "disk_over_commit", "host"],
    "additionalProperties": False,
})
_block_migration_v225 = {"oneOf": [parameter_types.boolean,
                                   {"type": "string", "enum": ["auto"]}]}
migrate_live_v225 = _action("os-migrateLive", {
    "type": "object",
    "properties": {"block_migration": _block_migration_v225,
                   "host": _live_host},
    "required": ["block_migration", "host"],
    "additionalProperties": False,
})
migrate_live_v230 = _action("os-migrateLive", {
    "type": "object",
    "properties": {"block_migration": _block_migration_v225,
                   "host": _live_host,
                   "force": parameter_types.boolean},
    "required": ["block_migration", "host"],
    "additionalProperties": False,
})
migrate_live_v268 = migrate_live_v225

# rebuild (Nova's base_rebuild and its later versions): imageRef required
rebuild_v21 = _action("rebuild", {
    "type": "object",
    "properties": {
        "name": parameter_types.name,
        "imageRef": parameter_types.image_id,
        "adminPass": parameter_types.admin_password,
        "metadata": parameter_types.metadata,
        "preserve_ephemeral": parameter_types.boolean,
        "OS-DCF:diskConfig": parameter_types.disk_config,
        "accessIPv4": parameter_types.accessIPv4,
        "accessIPv6": parameter_types.accessIPv6,
        "personality": parameter_types.personality,
    },
    "required": ["imageRef"],
    "additionalProperties": False,
})


def _rebuild(schema):
    return schema["properties"]["rebuild"]["properties"]


rebuild_v219 = copy.deepcopy(rebuild_v21)
_rebuild(rebuild_v219)["description"] = parameter_types.description
rebuild_v254 = copy.deepcopy(rebuild_v219)
_rebuild(rebuild_v254)["key_name"] = parameter_types.name_or_none
rebuild_v257 = copy.deepcopy(rebuild_v254)
_rebuild(rebuild_v257).pop("personality")
_rebuild(rebuild_v257)["user_data"] = {
    "oneOf": [{"type": "string", "format": "base64", "maxLength": 65535},
              {"type": "null"}]}
rebuild_v263 = copy.deepcopy(rebuild_v257)
_rebuild(rebuild_v263)["trusted_image_certificates"] = (
    parameter_types.trusted_certs)
rebuild_v290 = copy.deepcopy(rebuild_v263)
_rebuild(rebuild_v290)["hostname"] = parameter_types.hostname
rebuild_v294 = copy.deepcopy(rebuild_v290)
_rebuild(rebuild_v294)["hostname"] = parameter_types.fqdn

REBUILD = (("2.1", rebuild_v21), ("2.19", rebuild_v219), ("2.54", rebuild_v254),
           ("2.57", rebuild_v257), ("2.63", rebuild_v263), ("2.90", rebuild_v290),
           ("2.94", rebuild_v294))

SUSPEND = (("2.1", suspend_v21),)
RESUME = (("2.1", resume_v21),)
REBOOT = (("2.1", reboot_v21),)
FORCE_DELETE = (("2.1", force_delete_v21),)
RESTORE = (("2.1", restore_v21),)
START = (("2.1", start_v21),)
STOP = (("2.1", stop_v21),)
PAUSE = (("2.1", pause_v21),)
UNPAUSE = (("2.1", unpause_v21),)
LOCK = (("2.1", lock_v21), ("2.73", lock_v273))
UNLOCK = (("2.1", unlock_v21),)
RESET_STATE = (("2.1", reset_state_v21),)
SHELVE = (("2.1", shelve_v21),)
SHELVE_OFFLOAD = (("2.1", shelve_offload_v21),)
get_console_output_v21 = _action("os-getConsoleOutput", {
    "type": "object",
    "properties": {
        "length": {
            "oneOf": [
                {"type": "string", "pattern": "^-?[0-9]+$"},
                {"type": "integer", "minimum": -1},
                {"type": "null"},
            ],
        },
    },
    "additionalProperties": False,
})
GET_CONSOLE_OUTPUT = (("2.1", get_console_output_v21),)
MIGRATE_LIVE = (("2.1", migrate_live_v21), ("2.25", migrate_live_v225),
                ("2.30", migrate_live_v230), ("2.68", migrate_live_v268))
UNSHELVE = (("2.1", unshelve_v21), ("2.77", unshelve_v277),
            ("2.91", unshelve_v291))
