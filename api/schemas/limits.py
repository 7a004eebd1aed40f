"""The query of GET /limits (Nova's): ``tenant_id`` (an admin's look at
another project); unknown parameters are refused from 2.75."""
import copy

from volattach.api.schemas import parameter_types

query = {
    "type": "object",
    "properties": {
        "tenant_id": parameter_types.common_query_param,
    },
    "additionalProperties": True,
}
query_v275 = copy.deepcopy(query)
query_v275["additionalProperties"] = False

QUERY = (("2.1", query), ("2.75", query_v275))
