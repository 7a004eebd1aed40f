"""Schemas of /servers/{server_id}/os-volume_attachments."""
import copy

from volattach.api.schemas import parameter_types

index_query_v21 = {
    "type": "object",
    "properties": {
        "limit": parameter_types.multi_params(
            parameter_types.non_negative_integer),
        "offset": parameter_types.multi_params(
            parameter_types.non_negative_integer),
    },
    # unknown parameters are ignored until 2.75
    "additionalProperties": True,
}

index_query_v275 = copy.deepcopy(index_query_v21)
index_query_v275["additionalProperties"] = False

show_query_v21 = {"type": "object", "properties": {},
                  "additionalProperties": True}

show_query_v2102 = copy.deepcopy(show_query_v21)
show_query_v2102["additionalProperties"] = False

create_v21 = {
    "type": "object",
    "properties": {
        "volumeAttachment": {
            "type": "object",
            "properties": {
                "volumeId": parameter_types.volume_id,
                "device": parameter_types.device_name,
            },
            "required": ["volumeId"],
            "additionalProperties": False,
        },
    },
    "required": ["volumeAttachment"],
    "additionalProperties": False,
}

create_v249 = copy.deepcopy(create_v21)
create_v249["properties"]["volumeAttachment"]["properties"]["tag"] = (
    parameter_types.tag)

create_v279 = copy.deepcopy(create_v249)
create_v279["properties"]["volumeAttachment"]["properties"][
    "delete_on_termination"] = parameter_types.boolean

# 2.105 (volattach's extension): read-only attachments
create_v2105 = copy.deepcopy(create_v279)
create_v2105["properties"]["volumeAttachment"]["properties"]["attach_mode"] = {
    "type": "string", "enum": ["ro", "rw"]}

update_v21 = copy.deepcopy(create_v21)
del update_v21["properties"]["volumeAttachment"]["properties"]["device"]

# 2.85: the body may repeat what GET shows (only delete_on_termination and
# volumeId may differ from the current values).
update_v285 = {
    "type": "object",
    "properties": {
        "volumeAttachment": {
            "type": "object",
            "properties": {
                "volumeId": parameter_types.volume_id,
                "device": parameter_types.device_name,
                "tag": parameter_types.tag,
                "delete_on_termination": parameter_types.boolean,
                "serverId": parameter_types.server_id,
                "id": parameter_types.attachment_id,
            },
            "required": ["volumeId"],
            "additionalProperties": False,
        },
    },
    "required": ["volumeAttachment"],
    "additionalProperties": False,
}

INDEX_QUERY = (("2.1", index_query_v21), ("2.75", index_query_v275))
SHOW_QUERY = (("2.1", show_query_v21), ("2.102", show_query_v2102))
CREATE = (("2.1", create_v21), ("2.49", create_v249), ("2.79", create_v279),
          ("2.105", create_v2105))
UPDATE = (("2.1", update_v21), ("2.85", update_v285))
