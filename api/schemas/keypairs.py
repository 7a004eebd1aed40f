"""Request bodies of /os-keypairs."""
import copy

_name = {"type": "string", "minLength": 1, "maxLength": 255,
         "pattern": r"^[a-zA-Z0-9 _-]+$"}

create_v21 = {
    "type": "object",
    "properties": {
        "keypair": {
            "type": "object",
            "properties": {
                "name": _name,
                "public_key": {"type": "string"},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
    },
    "required": ["keypair"],
    "additionalProperties": False,
}

create_v22 = copy.deepcopy(create_v21)
create_v22["properties"]["keypair"]["properties"]["type"] = {
    "type": "string", "enum": ["ssh", "x509"]}

create_v210 = copy.deepcopy(create_v22)
create_v210["properties"]["keypair"]["properties"]["user_id"] = {
    "type": "string", "minLength": 1, "maxLength": 255}

# 2.92: imported keys only, and names may hold @ and .
create_v292 = copy.deepcopy(create_v210)
create_v292["properties"]["keypair"]["required"] = ["name", "public_key"]
create_v292["properties"]["keypair"]["properties"]["name"] = dict(
    _name, pattern=r"^[a-zA-Z0-9 @._-]+$")

CREATE = (("2.1", create_v21), ("2.2", create_v22), ("2.10", create_v210),
          ("2.92", create_v292))
