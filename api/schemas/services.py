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
