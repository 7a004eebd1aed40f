"""Schemas of /os-services (list only)."""
import copy

from volattach.api.schemas import parameter_types

index_query_v21 = {
    "type": "object",
    "properties": {
        "host": parameter_types.common_query_param,
        "binary": parameter_types.common_query_param,
    },
    # unknown parameters are ignored until 2.75
    "additionalProperties": True,
}

index_query_v275 = copy.deepcopy(index_query_v21)
index_query_v275["additionalProperties"] = False

INDEX_QUERY = (("2.1", index_query_v21), ("2.75", index_query_v275))

_reason = {"type": "string", "minLength": 1, "maxLength": 255}
_boolean = {"type": ["boolean", "string"],
            "enum": [True, "True", "TRUE", "true", "1", "ON", "On", "on",
                     "YES", "Yes", "yes", False, "False", "FALSE", "false",
                     "0", "OFF", "Off", "off", "NO", "No", "no"]}

update_v21 = {
    "type": "object",
    "properties": {
        "host": {"type": "string", "pattern": "^[a-zA-Z0-9-._]*$",
                 "minLength": 1, "maxLength": 255},
        "binary": {"type": "string", "minLength": 1, "maxLength": 255},
        "disabled_reason": _reason,
    },
    "required": ["host", "binary"],
    "additionalProperties": False,
}
update_v211 = copy.deepcopy(update_v21)
update_v211["properties"]["forced_down"] = _boolean

# 2.53: the service by uuid in the path, the change in the body
update_v253 = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["enabled", "disabled"]},
        "disabled_reason": _reason,
        "forced_down": _boolean,
    },
    "additionalProperties": False,
}

UPDATE = (("2.1", update_v21), ("2.11", update_v211), ("2.53", update_v253))
