"""Request bodies of /servers/{id}/tags (2.26, Nova's)."""
from volattach.api.schemas import parameter_types

update_all = {
    "type": "object",
    "properties": {
        "tags": {"type": "array", "items": parameter_types.tag,
                 "maxItems": 50},
    },
    "required": ["tags"],
    "additionalProperties": False,
}

UPDATE_ALL = (("2.26", update_all),)
