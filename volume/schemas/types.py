"""Request bodies of /types."""

_SPEC_KEY = "^[a-zA-Z0-9-_:. /]{1,255}$"
_specs = {"type": "object",
          "patternProperties": {_SPEC_KEY: {"type": "string",
                                            "maxLength": 255}},
          "additionalProperties": False}

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
                "extra_specs": _specs,
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

# PUT /types/{id}: at least one of name, description, is_public
update = {
    "type": "object",
    "properties": {
        "volume_type": {
            "type": "object",
            "properties": {
                "name": {"type": ["string", "null"], "minLength": 1,
                         "maxLength": 255,
                         "pattern": r"^(?!\s)(?!.*\s$).*$"},
                "description": {"type": ["string", "null"],
                                "maxLength": 255},
                "is_public": {"type": ["boolean", "string"]},
            },
            "additionalProperties": False,
        },
    },
    "required": ["volume_type"],
    "additionalProperties": False,
}

extra_specs_create = {
    "type": "object",
    "properties": {"extra_specs": _specs},
    "required": ["extra_specs"],
    "additionalProperties": False,
}

# PUT /types/{id}/extra_specs/{key}: {key: value}
extra_spec_update = dict(_specs, minProperties=1)
