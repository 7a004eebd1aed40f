"""Request bodies of /attachments (Cinder's schemas, same messages)."""
import copy

_uuid = {"type": "string", "format": "uuid"}
# What of a connector the database keeps: its keys (attachment specs),
# ``host`` and ``mountpoint`` in columns of 255 characters.
CONNECTOR_FIELDS = {
    "propertyNames": {"maxLength": 255},
    # a host that is no string is the manager's 400 ("Connector doesn't
    # have required information: host"), as in Cinder
    "properties": {"host": {"maxLength": 255},
                   "mountpoint": {"type": ["string", "null"],
                                  "maxLength": 255}},
}

# 3.27: reserve (no connector) or reserve + connect.
create = {
    "type": "object",
    "properties": {
        "attachment": {
            "type": "object",
            "properties": {
                "instance_uuid": _uuid,
                "connector": dict(CONNECTOR_FIELDS,
                                  type=["object", "null"]),
                "volume_uuid": _uuid,
            },
            "required": ["volume_uuid"],
            "additionalProperties": False,
        },
    },
    "required": ["attachment"],
    "additionalProperties": False,
}

# 3.54: attach mode.
create_v354 = copy.deepcopy(create)
create_v354["properties"]["attachment"]["properties"]["mode"] = {
    "type": "string", "enum": ["rw", "ro"]}

update = {
    "type": "object",
    "properties": {
        "attachment": {
            "type": "object",
            "properties": {
                "connector": dict(CONNECTOR_FIELDS, type="object",
                                  minProperties=1),
            },
            "required": ["connector"],
            "additionalProperties": False,
        },
    },
    "required": ["attachment"],
    "additionalProperties": False,
}

# 3.44: POST /attachments/{id}/action.
complete = {
    "type": "object",
    "properties": {"os-complete": {}},
    "required": ["os-complete"],
    "additionalProperties": False,
}
