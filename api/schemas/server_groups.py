"""Request bodies and queries of /os-server-groups (Nova's schemas)."""
import copy

from volattach.api.schemas import parameter_types

create_v21 = {
    "type": "object",
    "properties": {
        "server_group": {
            "type": "object",
            "properties": {
                "name": parameter_types.name,
                "policies": {
                    # one policy, as a list (a single string from 2.64)
                    "type": "array",
                    "prefixItems": [{"type": "string",
                                     "enum": ["anti-affinity", "affinity"]}],
                    "uniqueItems": True,
                    "minItems": 1,
                    "maxItems": 1,
                },
            },
            "required": ["name", "policies"],
            "additionalProperties": False,
        },
    },
    "required": ["server_group"],
    "additionalProperties": False,
}

create_v215 = copy.deepcopy(create_v21)
create_v215["properties"]["server_group"]["properties"]["policies"][
    "prefixItems"][0]["enum"] += ["soft-anti-affinity", "soft-affinity"]

create_v264 = copy.deepcopy(create_v215)
_group = create_v264["properties"]["server_group"]
del _group["properties"]["policies"]
_group["required"] = ["name", "policy"]
_group["properties"]["policy"] = {
    "type": "string",
    "enum": ["anti-affinity", "affinity", "soft-anti-affinity",
             "soft-affinity"]}
_group["properties"]["rules"] = {
    "type": "object",
    "properties": {"max_server_per_host": parameter_types.positive_integer},
    "additionalProperties": False,
}

CREATE = (("2.1", create_v21), ("2.15", create_v215), ("2.64", create_v264))

index_query_v21 = {
    "type": "object",
    "properties": {
        "all_projects": parameter_types.multi_params({"type": "string"}),
        "limit": parameter_types.multi_params(
            parameter_types.non_negative_integer),
        "offset": parameter_types.multi_params(
            parameter_types.non_negative_integer),
    },
    "additionalProperties": True,
}
index_query_v275 = copy.deepcopy(index_query_v21)
index_query_v275["additionalProperties"] = False

INDEX_QUERY = (("2.1", index_query_v21), ("2.75", index_query_v275))

show_query_v21 = {"type": "object", "properties": {},
                  "additionalProperties": True}
show_query_v2102 = dict(show_query_v21, additionalProperties=False)

SHOW_QUERY = (("2.1", show_query_v21), ("2.102", show_query_v2102))
