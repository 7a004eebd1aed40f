"""Request schemas of the deprecated os-volumes proxy (below 2.36)."""

create_v21 = {
    "type": "object",
    "properties": {
        "volume": {
            "type": "object",
            "properties": {
                "volume_type": {"type": "string"},
                "metadata": {"type": "object",
                             "additionalProperties": {"type": "string"}},
                "snapshot_id": {"type": "string", "format": "uuid"},
                "size": {"type": ["integer", "string"],
                         "pattern": "^[0-9]+$", "minimum": 1},
                "availability_zone": {"type": "string"},
                "display_name": {"type": ["string", "null"]},
                "display_description": {"type": ["string", "null"]},
            },
            "required": ["size"],
            "additionalProperties": False,
        },
    },
    "required": ["volume"],
    "additionalProperties": False,
}

CREATE = (("2.1", create_v21),)
