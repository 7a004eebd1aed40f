"""Request bodies of /volumes and /volumes/{id}/action."""
from volattach.volume.schemas import attachments

_boolean = {"type": ["boolean", "string"],
            "enum": [True, False, "True", "true", "TRUE", "False", "false",
                     "FALSE", "1", "0", "on", "off", "yes", "no", "y", "n",
                     "t", "f"]}
_name = {"type": ["string", "null"], "maxLength": 255}
# Cinder's volume_size: at most its DB_MAX_INT (a string of digits is
# checked by the handler).
_size = {"type": ["integer", "string"], "pattern": "^[0-9]+$", "minimum": 1,
         "maximum": 0x7FFFFFFF}
_uuid = {"type": "string", "format": "uuid"}
_metadata = {"type": ["object", "null"],
             "additionalProperties": {"type": "string", "maxLength": 255}}
_connector = dict(attachments.CONNECTOR_FIELDS, type="object")


def _action(name, properties=None, required=(), nullable=False):
    """The body of one volume action: ``{name: {...}}``."""
    args = {"type": "object", "properties": properties or {},
            "required": list(required), "additionalProperties": False}
    if nullable:
        args = {"type": ["object", "null"], "properties": properties or {},
                "additionalProperties": False}
    return {"type": "object", "properties": {name: args},
            "required": [name], "additionalProperties": False}

create = {
    "type": "object",
    "properties": {
        "volume": {
            "type": "object",
            "properties": {
                "size": _size,
                "name": _name,
                "display_name": _name,
                "description": _name,
                "display_description": _name,
                "volume_type": {"type": ["string", "null"],
                                "maxLength": 255},
                "availability_zone": {"type": ["string", "null"],
                                      "maxLength": 255},
                "metadata": _metadata,
                "multiattach": _boolean,
                # no snapshots here: any id is 404; a source volume is
                # looked up (404), then refused (no cloning)
                "snapshot_id": {"type": ["string", "null"], "format": "uuid"},
                "source_volid": {"type": ["string", "null"],
                                 "format": "uuid"},
                "imageRef": {"type": ["string", "null"],
                             "maxLength": 255},
                "backup_id": {"type": "null"},
                "group_id": {"type": "null"},
                "consistencygroup_id": {"type": "null"},
            },
            "required": ["size"],
            "additionalProperties": False,
        },
        "OS-SCH-HNT:scheduler_hints": {"type": ["object", "null"]},
    },
    "required": ["volume"],
    "additionalProperties": False,
}

update_readonly_flag = {
    "type": "object",
    "properties": {
        "os-update_readonly_flag": {
            "type": "object",
            "properties": {"readonly": _boolean},
            "required": ["readonly"],
            "additionalProperties": False,
        },
    },
    "required": ["os-update_readonly_flag"],
    "additionalProperties": False,
}

# Cinder's admin_actions.force_detach
force_detach = {
    "type": "object",
    "properties": {
        "os-force_detach": {
            "type": "object",
            "properties": {
                "connector": {"type": ["string", "object", "null"]},
                "attachment_id": {"type": ["string", "null"]},
            },
            "additionalProperties": False,
        },
    },
    "required": ["os-force_detach"],
    "additionalProperties": False,
}

reset_status = {
    "type": "object",
    "properties": {
        "os-reset_status": {
            "type": "object",
            "properties": {
                "status": {"type": "string", "maxLength": 255},
                "attach_status": {"type": "string",
                                  "enum": ["attached", "detached"]},
                # the 255 characters of the migration_status column
                "migration_status": {"type": "string", "maxLength": 255},
            },
            "additionalProperties": False,
        },
    },
    "required": ["os-reset_status"],
    "additionalProperties": False,
}

update = {
    "type": "object",
    "properties": {
        "volume": {
            "type": "object",
            "properties": {
                "name": _name, "display_name": _name,
                "description": _name, "display_description": _name,
                "metadata": _metadata,
            },
            "additionalProperties": False,
        },
    },
    "required": ["volume"],
    "additionalProperties": False,
}

extend = _action("os-extend", {"new_size": _size}, ["new_size"])
reimage = _action("os-reimage", {"image_id": _uuid,
                                 "reimage_reserved": _boolean}, ["image_id"])
set_bootable = _action("os-set_bootable", {"bootable": _boolean},
                       ["bootable"])
reserve = {"type": "object", "properties": {"os-reserve": {}},
           "required": ["os-reserve"], "additionalProperties": False}
unreserve = {"type": "object", "properties": {"os-unreserve": {}},
             "required": ["os-unreserve"], "additionalProperties": False}
initialize_connection = _action("os-initialize_connection",
                                {"connector": _connector}, ["connector"])
terminate_connection = _action("os-terminate_connection",
                               {"connector": _connector}, ["connector"])
attach = _action("os-attach", {
    "instance_uuid": _uuid,
    "mountpoint": {"type": "string", "maxLength": 255},
    "host_name": {"type": "string", "maxLength": 255},
    "mode": {"type": "string", "enum": ["rw", "ro"]},
}, ["mountpoint"])
detach = _action("os-detach", {"attachment_id": _uuid}, nullable=True)
retype = _action("os-retype", {
    "new_type": {"type": "string", "minLength": 1, "maxLength": 255},
    "migration_policy": {"type": ["string", "null"],
                         "enum": ["on-demand", "never", None]},
}, ["new_type"])
migrate_volume = _action("os-migrate_volume", {
    "host": {"type": "string", "minLength": 1, "maxLength": 255},
    "force_host_copy": _boolean, "lock_volume": _boolean,
}, ["host"])
migrate_volume_completion = _action("os-migrate_volume_completion", {
    "new_volume": _uuid, "error": {"type": ["boolean", "null"]},
}, ["new_volume"])
