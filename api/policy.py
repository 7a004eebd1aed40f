"""Who may call what in the compute API: oslo.policy over ``api.policies``.

``authorize(ctx, action, target)`` raises ``PolicyNotAuthorized`` (403)
unless the rule of ``action`` allows the caller; ``check`` answers True or
False instead.  ``target`` is a dict with the ``project_id`` of the resource
(the caller's own project and user when None).  ``init(conf)`` builds the
enforcer of a configuration (``api.wsgi.make_app`` calls it); overrides
come from ``[oslo_policy] policy_file``.
"""
from volattach.api import policies
from volattach.wsgi import policy as wsgi_policy

POLICY = wsgi_policy.Policy(policies.list_rules)


def init(conf):
    return POLICY.init(conf)


def check(ctx, action, target=None):
    """True when ``ctx`` may perform ``action`` on ``target``."""
    return POLICY.check(ctx, action, target)


def authorize(ctx, action, target=None):
    """Raise PolicyNotAuthorized unless ``ctx`` may perform ``action``."""
    POLICY.authorize(ctx, action, target)


def get_enforcer():
    """``oslo.policy.enforcer`` entry point (oslopolicy-policy-generator)."""
    return wsgi_policy.enforcer_for_generator(POLICY)
