"""Schemas of /servers/{server_id}/os-instance-actions (query strings)."""
import copy

from volattach.api.schemas import parameter_types

index_query_v21 = {"type": "object", "properties": {},
                   "additionalProperties": True}

# 2.58: paging by limit/marker and the changes-since filter
index_query_v258 = {
    "type": "object",
    "properties": {
        "limit": parameter_types.single_param(
            parameter_types.non_negative_integer),
        "marker": parameter_types.single_param({"type": "string"}),
        "changes-since": parameter_types.single_param(
            {"type": "string", "format": "date-time"}),
    },
    "additionalProperties": False,
}

index_query_v266 = copy.deepcopy(index_query_v258)
index_query_v266["properties"]["changes-before"] = (
    parameter_types.single_param({"type": "string", "format": "date-time"}))

show_query_v21 = {"type": "object", "properties": {},
                  "additionalProperties": True}
show_query_v2102 = copy.deepcopy(show_query_v21)
show_query_v2102["additionalProperties"] = False

INDEX_QUERY = (("2.1", index_query_v21), ("2.58", index_query_v258),
               ("2.66", index_query_v266))
SHOW_QUERY = (("2.1", show_query_v21), ("2.102", show_query_v2102))
