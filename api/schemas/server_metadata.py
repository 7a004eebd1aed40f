"""Request bodies of /servers/{id}/metadata (Nova's)."""
import copy

from volattach.api.schemas import parameter_types

create = {
    "type": "object",
    "properties": {"metadata": parameter_types.metadata},
    "required": ["metadata"],
    "additionalProperties": False,
}

_one_item = copy.deepcopy(parameter_types.metadata)
_one_item.update({"minProperties": 1, "maxProperties": 1})

update = {
    "type": "object",
    "properties": {"meta": _one_item},
    "required": ["meta"],
    "additionalProperties": False,
}

CREATE = (("2.1", create),)
UPDATE_ALL = (("2.1", create),)
UPDATE = (("2.1", update),)
