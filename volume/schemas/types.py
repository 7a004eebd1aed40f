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

# -- /types/{id}/encryption (Cinder's volume_type_encryption schemas) ---------

# an integer, or a string of one (Cinder's "key_size" format)
_key_size = {"type": ["string", "integer", "null"], "pattern": "^[0-9]+$",
             "minimum": 0, "maximum": 2147483647}

# POST: provider and control_location required; other keys are ignored,
# as Cinder does (its schema allows them, its table has no column for them)
encryption_create = {
    "type": "object",
    "properties": {
        "encryption": {
            "type": "object",
            "properties": {
                "key_size": _key_size,
                "provider": {"type": "string", "maxLength": 255},
                "control_location": {"enum": ["front-end", "back-end"]},
                "cipher": {"type": ["string", "null"], "maxLength": 255},
            },
            "required": ["provider", "control_location"],
            "additionalProperties": True,
        },
    },
    "required": ["encryption"],
    "additionalProperties": False,
}

# PUT /types/{id}/encryption/{encryption_id}: any of the same keys
encryption_update = {
    "type": "object",
    "properties": {
        "encryption": dict(encryption_create["properties"]["encryption"],
                           required=[]),
    },
    "required": ["encryption"],
    "additionalProperties": False,
}
