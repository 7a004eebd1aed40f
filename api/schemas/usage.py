"""Queries of /os-simple-tenant-usage (Nova's schemas)."""
import copy

from volattach.api.schemas import parameter_types

_text = parameter_types.multi_params({"type": "string"})
index_query_v21 = {
    "type": "object",
    "properties": {"start": _text, "end": _text, "detailed": _text},
    "additionalProperties": True,
}
show_query_v21 = {
    "type": "object",
    "properties": {"start": _text, "end": _text},
    "additionalProperties": True,
}
_paging = {"limit": parameter_types.multi_params(
               parameter_types.non_negative_integer),
           "marker": parameter_types.multi_params({"type": "string"})}


def _v240(schema):
    schema = copy.deepcopy(schema)
    schema["properties"].update(_paging)
    return schema


def _v275(schema):
    return dict(_v240(schema), additionalProperties=False)


INDEX_QUERY = (("2.1", index_query_v21), ("2.40", _v240(index_query_v21)),
               ("2.75", _v275(index_query_v21)))
SHOW_QUERY = (("2.1", show_query_v21), ("2.40", _v240(show_query_v21)),
              ("2.75", _v275(show_query_v21)))
