"""Request bodies of /volumes and /volumes/{id}/action."""

_boolean = {"type": ["boolean", "string"],
            "enum": [True, False, "True", "true", "TRUE", "False", "false",
                     "FALSE", "1", "0", "on", "off", "yes", "no", "y", "n",
                     "t", "f"]}
_name = {"type": ["string", "null"], "maxLength": 255}

create = {
    "type": "object",
    "properties": {
        "volume": {
            "type": "object",
            "properties": {
                "size": {"type": ["integer", "string"],
                         "pattern": "^[0-9]+$", "minimum": 1},
                "name": _name,
                "display_name": _name,
                "description": _name,
                "display_description": _name,
                "volume_type": {"type": ["string", "null"],
                                "maxLength": 255},
                "availability_zone": {"type": ["string", "null"],
                                      "maxLength": 255},
                "metadata": {"type": ["object", "null"],
                             "additionalProperties": {
                                 "type": "string", "maxLength": 255}},
                "multiattach": _boolean,
                "snapshot_id": {"type": "null"},
                "source_volid": {"type": "null"},
                "imageRef": {"type": "null"},
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

reset_status = {
    "type": "object",
    "properties": {
        "os-reset_status": {
            "type": "object",
            "properties": {
                "status": {"type": "string"},
                "attach_status": {"type": "string",
                                  "enum": ["attached", "detached"]},
                "migration_status": {"type": "string"},
            },
            "additionalProperties": False,
        },
    },
    "required": ["os-reset_status"],
    "additionalProperties": False,
}
