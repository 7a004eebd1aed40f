"""Who may call what in the volume service: oslo.policy with Cinder's rule
names, check strings and scope types (``oslo.policy.policies`` entry point
``volattach-volume``).

The admin-only operations of the manager go through ``authorize``; the
visibility of other projects' volumes stays the admin role's (the context's
``is_admin``), as in Cinder's ``context_is_admin``.  Overrides go in the
file of ``[oslo_policy] policy_file``; ``make_app`` calls ``init(conf)``.
"""
from oslo_policy import policy

from volattach.wsgi import policy as wsgi_policy

ADMIN_API = "rule:admin_api"
SCOPE = ["project"]

_BASE = [
    policy.RuleDefault("context_is_admin", "role:admin",
                       "Decides what is required for the 'is_admin:True' "
                       "check to succeed."),
    # Cinder's is "is_admin:True or (role:admin and is_admin_project:True)";
    # here is_admin is the admin role, and the compute API's admin_api is
    # the same rule, so that both services can read one policy file.
    policy.RuleDefault("admin_api", "is_admin:True",
                       "Default rule for most Admin APIs."),
]


def _rule(name, description, operations):
    return policy.DocumentedRuleDefault(
        name=name, check_str=ADMIN_API, description=description,
        operations=[{"method": m, "path": p} for m, p in operations],
        scope_types=SCOPE)


_RULES = [
    _rule("volume_extension:services:index", "List all services.",
          [("GET", "/os-services")]),
    _rule("volume_extension:types_manage",
          "Create, update and delete volume type.",
          [("POST", "/types"), ("PUT", "/types/{type_id}"),
           ("DELETE", "/types/{type_id}")]),
    _rule("volume_extension:types_extra_specs:create",
          "Create type extra specs.",
          [("POST", "/types/{type_id}/extra_specs")]),
    _rule("volume_extension:types_extra_specs:update",
          "Update type extra specs.",
          [("PUT", "/types/{type_id}/extra_specs/{extra_spec_key}")]),
    _rule("volume_extension:types_extra_specs:delete",
          "Delete type extra specs.",
          [("DELETE", "/types/{type_id}/extra_specs/{extra_spec_key}")]),
    _rule("volume_extension:volume_type_encryption:create",
          "Create volume type encryption.",
          [("POST", "/types/{type_id}/encryption")]),
    _rule("volume_extension:volume_type_encryption:get",
          "Show a volume type's encryption type and its specs.",
          [("GET", "/types/{type_id}/encryption"),
           ("GET", "/types/{type_id}/encryption/{encryption_key}")]),
    _rule("volume_extension:volume_type_encryption:update",
          "Update volume type encryption.",
          [("PUT", "/types/{type_id}/encryption/{encryption_id}")]),
    _rule("volume_extension:volume_type_encryption:delete",
          "Delete volume type encryption.",
          [("DELETE", "/types/{type_id}/encryption/{encryption_id}")]),
    _rule("volume_extension:volume_admin_actions:migrate_volume",
          "Migrate a volume to the specified host.",
          [("POST", "/volumes/{volume_id}/action (os-migrate_volume)")]),
    _rule("volume_extension:volume_admin_actions:migrate_volume_completion",
          "Complete a volume migration.",
          [("POST", "/volumes/{volume_id}/action "
                    "(os-migrate_volume_completion)")]),
    _rule("volume_extension:volume_admin_actions:force_detach",
          "Force detach a volume.",
          [("POST", "/volumes/{volume_id}/action (os-force_detach)")]),
    _rule("volume_extension:volume_admin_actions:reset_status",
          "Reset status of a volume.",
          [("POST", "/volumes/{volume_id}/action (os-reset_status)")]),
]


def list_rules():
    return _BASE + _RULES


POLICY = wsgi_policy.Policy(list_rules)


def init(conf):
    return POLICY.init(conf)


def authorize(ctx, action, target=None):
    POLICY.authorize(ctx, action, target)


def get_enforcer():
    """``oslo.policy.enforcer`` entry point (oslopolicy-policy-generator)."""
    return wsgi_policy.enforcer_for_generator(POLICY)
