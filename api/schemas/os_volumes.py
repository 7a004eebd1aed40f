"""Request schemas of the deprecated os-volumes proxy (below 2.36); the
strings at most the 255 characters of the volume service's columns."""

create_v21 = {
    "type": "object",
    "properties": {
        "volume": {
            "type": "object",
            "properties": {
                "volume_type": {"type": "string", "maxLength": 255},
                "metadata": {"type": "object",
                             "additionalProperties": {"type": "string",
                                                      "maxLength": 255}},
                "snapshot_id": {"type": "string", "format": "uuid"},
                "size": {"type": ["integer", "string"],
                         "pattern": "^[0-9]+$", "minimum": 1},
                "availability_zone": {"type": "string",
                                      "maxLength": 255},
                "display_name": {"type": ["string", "null"],
                                 "maxLength": 255},
                "display_description": {"type": ["string", "null"],
                                        "maxLength": 255},
            },
            "required": ["size"],
            "additionalProperties": False,
        },
    },
    "required": ["volume"],
    "additionalProperties": False,
}

CREATE = (("2.1", create_v21),)
