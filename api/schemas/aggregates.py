"""Request bodies and queries of /os-aggregates (Nova's schemas)."""
import copy

from volattach.api.schemas import parameter_types

_az = {"oneOf": [{"type": "string", "format": "az_name", "minLength": 1,
                  "maxLength": 255}, {"type": "null"}]}
_host = {"type": "string", "pattern": "^[a-zA-Z0-9-._]*$", "minLength": 1,
         "maxLength": 255}

create = {
    "type": "object",
    "properties": {
        "aggregate": {
            "type": "object",
            "properties": {"name": parameter_types.name,
                           "availability_zone": _az},
            "required": ["name"],
            "additionalProperties": False,
        },
    },
    "required": ["aggregate"],
    "additionalProperties": False,
}
CREATE = (("2.1", create),)

update = {
    "type": "object",
    "properties": {
        "aggregate": {
            "type": "object",
            "properties": {"name": parameter_types.name,
                           "availability_zone": _az},
            "additionalProperties": False,
            "anyOf": [{"required": ["name"]},
                      {"required": ["availability_zone"]}],
        },
    },
    "required": ["aggregate"],
    "additionalProperties": False,
}
UPDATE = (("2.1", update),)


def _host_action(name):
    return {
        "type": "object",
        "properties": {name: {"type": "object",
                              "properties": {"host": _host},
                              "required": ["host"],
                              "additionalProperties": False}},
        "required": [name],
        "additionalProperties": False,
    }


ADD_HOST = (("2.1", _host_action("add_host")),)
REMOVE_HOST = (("2.1", _host_action("remove_host")),)

_metadata_with_null = copy.deepcopy(parameter_types.metadata)
_metadata_with_null["patternProperties"]["^[a-zA-Z0-9-_:. ]{1,255}$"][
    "type"] = ["string", "null"]

SET_METADATA = (("2.1", {
    "type": "object",
    "properties": {
        "set_metadata": {
            "type": "object",
            "properties": {"metadata": _metadata_with_null},
            "required": ["metadata"],
            "additionalProperties": False,
        },
    },
    "required": ["set_metadata"],
    "additionalProperties": False,
}),)

_query = {"type": "object", "properties": {}, "additionalProperties": True}
QUERY = (("2.1", _query),
         ("2.102", dict(_query, additionalProperties=False)))
