"""Schemas of /flavors (query strings only: flavors are read-only here)."""
import copy

from volattach.api.schemas import parameter_types

VALID_SORT_KEYS = [
    "created_at", "description", "disabled", "ephemeral_gb", "flavorid", "id",
    "is_public", "memory_mb", "name", "root_gb", "rxtx_factor", "swap",
    "updated_at", "vcpu_weight", "vcpus"]

index_query_v21 = {
    "type": "object",
    "properties": {
        "limit": parameter_types.multi_params(
            parameter_types.non_negative_integer),
        "marker": parameter_types.multi_params({"type": "string"}),
        "is_public": parameter_types.multi_params({"type": "string"}),
        "minRam": parameter_types.multi_params({"type": "string"}),
        "minDisk": parameter_types.multi_params({"type": "string"}),
        "sort_key": parameter_types.multi_params(
            {"type": "string", "enum": VALID_SORT_KEYS}),
        "sort_dir": parameter_types.multi_params(
            {"type": "string", "enum": ["asc", "desc"]}),
    },
    # unknown parameters are ignored until 2.75
    "additionalProperties": True,
}

index_query_v275 = copy.deepcopy(index_query_v21)
index_query_v275["additionalProperties"] = False

index_query_v2102 = copy.deepcopy(index_query_v275)
index_query_v2102["properties"]["name"] = parameter_types.multi_params(
    {"type": "string"})
index_query_v2102["properties"]["sort_key"]["items"]["enum"].remove(
    "rxtx_factor")

show_query_v21 = {"type": "object", "properties": {},
                  "additionalProperties": True}
show_query_v2102 = copy.deepcopy(show_query_v21)
show_query_v2102["additionalProperties"] = False

INDEX_QUERY = (("2.1", index_query_v21), ("2.75", index_query_v275),
               ("2.102", index_query_v2102))
SHOW_QUERY = (("2.1", show_query_v21), ("2.102", show_query_v2102))
