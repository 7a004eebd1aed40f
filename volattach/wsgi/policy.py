"""oslo.policy plumbing shared by the compute API and the volume service.

Each service lists its documented defaults (``api.policies``,
``volume.policies``) and keeps one ``Enforcer`` per process, built from
the configuration (``[oslo_policy] policy_file``, reloaded by oslo.policy
when the file changes).  ``authorize`` raises the domain's
``PolicyNotAuthorized`` (403 at the API edge); ``check`` answers a bool.
The credentials are the RequestContext's policy values plus ``is_admin``
and ``service_roles``, so that check strings such as ``is_admin:True`` and
``service_roles:service`` can be written.
"""
import threading
import time

from oslo_config import cfg
from oslo_context import context as oslo_context
from oslo_policy import policy as oslo_policy

from volattach import exception

# Remembered answers per process (cleared when full or on a rule reload).
MEMO_SIZE = 4096
# How often a changed policy file is looked for.
RELOAD_SECONDS = 1.0


class Policy:
    """One service's enforcer over its rule list."""

    def __init__(self, list_rules):
        self.list_rules = list_rules
        self.enforcer = None
        self._lock = threading.Lock()
        self._memo = {}
        self._memo_rules = None
        self._loaded_at = float("-inf")

    def init(self, conf):
        """(Re)build the enforcer for ``conf``; returns it."""
        enforcer = oslo_policy.Enforcer(conf)
        enforcer.register_defaults(self.list_rules())
        enforcer.load_rules()
        self.enforcer = enforcer
        self._loaded_at = time.monotonic()
        return enforcer

    def get(self):
        if self.enforcer is None:
            with self._lock:
                if self.enforcer is None:
                    from volattach import conf as volattach_conf
                    self.init(volattach_conf.CONF)
        return self.enforcer

    def check(self, ctx, action, target=None):
        """True when ``ctx`` may perform ``action`` on ``target`` (the
        caller's own project and user when None)."""
        if target is None:
            target = {"project_id": ctx.project_id, "user_id": ctx.user_id}
        enforcer = self.get()
        # oslo.policy looks for a changed policy file (a search of the
        # configuration directories) at most every RELOAD_SECONDS; the
        # answer depends only on the rules, the action, the target and the
        # credentials: remembered until the rules are reloaded (a changed
        # policy file gives a new Rules object)
        now = time.monotonic()
        if now - self._loaded_at >= RELOAD_SECONDS:
            enforcer.load_rules()
            self._loaded_at = now
        if enforcer.rules is not self._memo_rules:
            self._memo, self._memo_rules = {}, enforcer.rules
        try:
            key = (action, _freeze(target), _caller_key(ctx))
            hash(key)
        except TypeError:
            key = None
        if key is not None:
            allowed = self._memo.get(key)
            if allowed is not None:
                return allowed
        creds = credentials(ctx)
        try:
            allowed = bool(enforcer.enforce(action, target, creds,
                                            do_raise=False))
        except oslo_policy.InvalidScope:
            allowed = False
        if key is not None:
            if len(self._memo) >= MEMO_SIZE:
                self._memo = {}
            self._memo[key] = allowed
        return allowed

    def authorize(self, ctx, action, target=None):
        """Raise PolicyNotAuthorized unless ``ctx`` may do ``action``."""
        if not self.check(ctx, action, target):
            raise exception.PolicyNotAuthorized(action=action)


def _freeze(values):
    return tuple(sorted(
        (k, tuple(v) if isinstance(v, list) else v) for k, v in values.items()))


# What oslo.context's RequestContext.to_policy_values reads, plus what
# ``credentials`` adds: the memo key of a caller, read straight from the
# context (building and sorting the credentials dict cost more than the
# rest of a remembered check; benchmarks/README.md, 2026-11-26 afternoon).
_CALLER_ATTRS = (
    "user_id", "user_domain_id", "system_scope", "domain_id", "project_id",
    "project_domain_id", "roles", "is_admin_project", "service_user_id",
    "service_user_domain_id", "service_project_id",
    "service_project_domain_id", "service_roles", "is_admin")
_BASE_POLICY_VALUES = oslo_context.RequestContext.to_policy_values


def _caller_key(ctx):
    """The part of the memo key that depends on the caller."""
    if type(ctx).to_policy_values is not _BASE_POLICY_VALUES:
        # a context class with credentials of its own: key on them
        return ("creds",) + _freeze(credentials(ctx))
    return tuple(tuple(v) if isinstance(v, list) else v
                 for v in [getattr(ctx, a, None) for a in _CALLER_ATTRS])


def credentials(ctx):
    creds = dict(ctx.to_policy_values())
    creds["is_admin"] = bool(ctx.is_admin)
    creds["service_roles"] = list(getattr(ctx, "service_roles", []) or [])
    return creds


def enforcer_for_generator(policy, argv=None):
    """What the ``oslo.policy.enforcer`` entry points return: an enforcer
    over a private configuration that reads volattach's configuration
    files (``[oslo_policy] policy_file``); the oslopolicy tools have
    parsed the global one already."""
    conf = cfg.ConfigOpts()
    conf([] if argv is None else argv, project="volattach")
    return policy.init(conf)
