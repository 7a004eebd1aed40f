"""Building blocks of the request schemas (the same rules as Nova's)."""


def multi_params(schema):
    """A query parameter that may be given several times."""
    return {"type": "array", "items": schema}


def single_param(schema):
    """A query parameter that may be given once."""
    return {"type": "array", "items": schema, "maxItems": 1}


common_query_param = multi_params({"type": "string"})
common_query_regex_param = multi_params({"type": "string", "format": "regex"})

boolean = {
    "type": ["boolean", "string"],
    "enum": [True, "True", "TRUE", "true", "1", "ON", "On", "on",
             "YES", "Yes", "yes",
             False, "False", "FALSE", "false", "0", "OFF", "Off", "off",
             "NO", "No", "no"],
}

positive_integer = {
    "type": ["integer", "string"],
    "pattern": "^[0-9]*$", "minimum": 1, "minLength": 1,
}

non_negative_integer = {
    "type": ["integer", "string"],
    "pattern": "^[0-9]*$", "minimum": 0, "minLength": 1,
}

name = {"type": "string", "format": "name", "minLength": 1, "maxLength": 255}

name_or_none = {
    "oneOf": [
        {"type": "string", "minLength": 1, "maxLength": 255},
        {"type": "null"},
    ]
}

description = {
    "type": ["string", "null"],
    # printable characters (Nova's valid_description_regex)
    "pattern": r"^[^\x00-\x1f\x7f-\x9f]*$",
    "minLength": 0, "maxLength": 255,
}

uuid = {"type": "string", "format": "uuid"}
server_id = uuid
volume_id = uuid
attachment_id = uuid
image_id = uuid

image_id_or_empty_string = {
    "oneOf": [
        {"type": "string", "format": "uuid"},
        {"type": "string", "maxLength": 0},
    ]
}

volume_type = {"type": ["string", "null"], "minLength": 0, "maxLength": 255}

flavor_ref = {"type": ["string", "integer"], "minLength": 1}

admin_password = {"type": "string"}

metadata = {
    "type": "object",
    "patternProperties": {
        "^[a-zA-Z0-9-_:. ]{1,255}$": {"type": "string", "maxLength": 255},
    },
    "additionalProperties": False,
}

ip_address = {"type": "string", "oneOf": [{"format": "ipv4"},
                                          {"format": "ipv6"}]}
accessIPv4 = {"type": "string", "format": "ipv4"}
# the longest spelling of an address (a dotted IPv4 tail: 45 characters);
# the handlers store its compressed form, which fits the access_ip_v6
# column (39), as Nova does (tempest's test_verify_server_details sends
# 0000:0000:0000:0000:0000:babe:220.12.22.2)
accessIPv6 = {"type": "string", "format": "ipv6", "maxLength": 45}

disk_config = {"type": "string", "enum": ["AUTO", "MANUAL"]}

volume_size = {
    "type": ["integer", "string"],
    "pattern": "^[0-9]+$", "minimum": 1, "maximum": 0x7FFFFFFF,
}

# at most 60 characters, no ',' or '/'
tag = {"type": "string", "pattern": "^[^,/]*$", "minLength": 1,
       "maxLength": 60}

hostname = {
    "type": "string", "pattern": "^[a-zA-Z0-9]+[a-zA-Z0-9-]*[a-zA-Z0-9]+$",
    "minLength": 2, "maxLength": 63,
}

fqdn = {"type": "string", "pattern": "^[a-zA-Z0-9-._]*$", "minLength": 1,
        "maxLength": 255}

personality = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "maxLength": 255},
            "contents": {"type": "string", "format": "base64"},
        },
        "additionalProperties": False,
    },
}

trusted_certs = {
    "type": ["array", "null"], "minItems": 1, "maxItems": 50,
    "uniqueItems": True, "items": {"type": "string", "minLength": 1},
}

# Nova's match_device(): /dev/ + optional x, optional letter, optional d,
# then letters and an optional partition number; at most the 255
# characters of the block-device record's device_name column.
device_name = {
    "type": ["string", "null"],
    "pattern": "(^/dev/x{0,1}[a-z]{0,1}d{0,1})([a-z]+)[0-9]*$",
    "maxLength": 255,
}
