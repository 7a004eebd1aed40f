"""Request bodies of /types."""

create = {
    "type": "object",
    "properties": {
        "volume_type": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 255,
                         "pattern": r"^(?!\s)(?!.*\s$).*$"},
                "description": {"type": ["string", "null"],
                                "maxLength": 255},
                "extra_specs": {
                    "type": "object",
                    "patternProperties": {
                        "^[a-zA-Z0-9-_:. /]{1,255}$": {
                            "type": "string", "maxLength": 255}},
                    "additionalProperties": False,
                },
                "os-volume-type-access:is_public": {
                    "type": ["boolean", "string"]},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
    },
    "required": ["volume_type"],
    "additionalProperties": False,
}
