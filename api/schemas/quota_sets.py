"""Request bodies and queries of /os-quota-sets (Nova's): 2.36 drops the
network quotas, 2.57 the personality (injected file) ones."""
from volattach.api.schemas import parameter_types

_quota = {
    "type": ["integer", "string"],
    "pattern": "^-?[0-9]+$",
    "minimum": -1,      # -1: unlimited
    "maximum": 0x7FFFFFFF,
}
_RESOURCES = ("instances", "cores", "ram", "floating_ips", "fixed_ips",
              "metadata_items", "key_pairs", "security_groups",
              "security_group_rules", "injected_files",
              "injected_file_content_bytes", "injected_file_path_bytes",
              "server_groups", "server_group_members", "networks")
FILTERED_2_36 = ("fixed_ips", "floating_ips", "networks",
                 "security_group_rules", "security_groups")
FILTERED_2_57 = FILTERED_2_36 + ("injected_files",
                                 "injected_file_content_bytes",
                                 "injected_file_path_bytes")


def _update(filtered):
    properties = {r: _quota for r in _RESOURCES if r not in filtered}
    properties["force"] = parameter_types.boolean
    return {
        "type": "object",
        "properties": {
            "quota_set": {"type": "object", "properties": properties,
                          "additionalProperties": False},
        },
        "required": ["quota_set"],
        "additionalProperties": False,
    }


UPDATE = (("2.1", _update(())), ("2.36", _update(FILTERED_2_36)),
          ("2.57", _update(FILTERED_2_57)))

query = {
    "type": "object",
    "properties": {"user_id": parameter_types.multi_params({"type": "string"})},
    "additionalProperties": True,
}
QUERY = (("2.1", query),)


def filtered(mv):
    """The resources not shown at microversion ``mv``."""
    if mv.matches("2.57"):
        return FILTERED_2_57
    if mv.matches("2.36"):
        return FILTERED_2_36
    return ()


# os-quota-class-sets: no "networks" and no "force"; 2.50 drops the network
# quotas (and shows server_groups and server_group_members), 2.57 the
# personality ones
FILTERED_CLASS_2_50 = FILTERED_2_36


def _class_update(filtered):
    properties = {r: _quota for r in _RESOURCES
                  if r not in filtered and r != "networks"}
    return {
        "type": "object",
        "properties": {
            "quota_class_set": {"type": "object", "properties": properties,
                                "additionalProperties": False},
        },
        "required": ["quota_class_set"],
        "additionalProperties": False,
    }


CLASS_UPDATE = (("2.1", _class_update(())),
                ("2.50", _class_update(FILTERED_CLASS_2_50)),
                ("2.57", _class_update(FILTERED_2_57)))


def class_filtered(mv):
    """The resources a quota class does not show at ``mv``."""
    if mv.matches("2.57"):
        return FILTERED_2_57
    if mv.matches("2.50"):
        return FILTERED_CLASS_2_50
    return ("server_groups", "server_group_members")
