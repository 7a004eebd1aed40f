"""Schemas of os-migrations and /servers/{server_id}/migrations (query
strings), Nova's."""
import copy

from volattach.api.schemas import parameter_types

# os-migrations: the filters of every version; unknown parameters are
# ignored until 2.59
index_query_v21 = {
    "type": "object",
    "properties": {
        "hidden": parameter_types.common_query_param,
        "host": parameter_types.common_query_param,
        "instance_uuid": parameter_types.common_query_param,
        "source_compute": parameter_types.common_query_param,
        "status": parameter_types.common_query_param,
        "migration_type": parameter_types.common_query_param,
    },
    "additionalProperties": True,
}

# 2.59: paging by limit/marker (a migration uuid), changes-since; nothing else
index_query_v259 = copy.deepcopy(index_query_v21)
index_query_v259["properties"].update({
    "limit": parameter_types.single_param(
        parameter_types.non_negative_integer),
    "marker": parameter_types.single_param({"type": "string"}),
    "changes-since": parameter_types.single_param(
        {"type": "string", "format": "date-time"}),
})
index_query_v259["additionalProperties"] = False

index_query_v266 = copy.deepcopy(index_query_v259)
index_query_v266["properties"]["changes-before"] = (
    parameter_types.single_param({"type": "string", "format": "date-time"}))

# 2.80: the user_id and project_id filters
index_query_v280 = copy.deepcopy(index_query_v266)
index_query_v280["properties"].update({
    "user_id": parameter_types.single_param({"type": "string"}),
    "project_id": parameter_types.single_param({"type": "string"}),
})

INDEX_QUERY = (("2.1", index_query_v21), ("2.59", index_query_v259),
               ("2.66", index_query_v266), ("2.80", index_query_v280))

# /servers/{server_id}/migrations[/{migration_id}] (from 2.23): no
# parameters; unknown ones are ignored until 2.102
server_query_v223 = {"type": "object", "properties": {},
                     "additionalProperties": True}
server_query_v2102 = copy.deepcopy(server_query_v223)
server_query_v2102["additionalProperties"] = False

SERVER_INDEX_QUERY = (("2.23", server_query_v223),
                      ("2.102", server_query_v2102))
SERVER_SHOW_QUERY = SERVER_INDEX_QUERY
