"""Who may call what: a small rule table with Nova's policy names.

``authorize(ctx, action, target)`` raises ``PolicyNotAuthorized`` (403)
unless the rule of ``action`` allows the caller; ``check`` answers True or
False instead.  ``target`` is a dict with the ``project_id`` of the resource
(for ``admin_or_owner``).  The defaults follow Nova's: admin-only for
operators' APIs and other projects' data, owner (or admin) for a project's
own servers.  Roles come from the token: ``admin`` makes an admin,
``service`` a service (Cinder calling swap).
"""
from volattach import exception


def _admin(ctx, target):
    return bool(ctx.is_admin)


def _admin_or_owner(ctx, target):
    if ctx.is_admin:
        return True
    project_id = (target or {}).get("project_id", ctx.project_id)
    return project_id is not None and project_id == ctx.project_id


def _admin_or_service(ctx, target):
    return bool(ctx.is_admin or ctx.is_service)


def _anyone(ctx, target):
    return True


RULES = {
    "admin_api": _admin,
    "admin_or_owner": _admin_or_owner,
    "admin_or_service": _admin_or_service,
    "any": _anyone,
}

_SERVERS = "os_compute_api:servers:%s"
_VA = "os_compute_api:os-volumes-attachments:%s"
_IA = "os_compute_api:os-instance-actions:%s"

POLICIES = {
    "os_compute_api:os-flavor-manage:list": "any",
    "os_compute_api:os-services:list": "admin_api",
    _SERVERS % "index": "admin_or_owner",
    _SERVERS % "detail": "admin_or_owner",
    _SERVERS % "index:get_all_tenants": "admin_api",
    _SERVERS % "detail:get_all_tenants": "admin_api",
    _SERVERS % "allow_all_filters": "admin_api",
    _SERVERS % "show": "admin_or_owner",
    _SERVERS % "show:host_status": "admin_api",
    _SERVERS % "create": "admin_or_owner",
    _SERVERS % "create:forced_host": "admin_api",
    _SERVERS % "create:requested_destination": "admin_api",
    _SERVERS % "delete": "admin_or_owner",
    _SERVERS % "start": "admin_or_owner",
    _SERVERS % "stop": "admin_or_owner",
    "os_compute_api:os-extended-server-attributes": "admin_api",
    "os_compute_api:os-pause-server:pause": "admin_or_owner",
    "os_compute_api:os-console-output": "admin_or_owner",
    "os_compute_api:os-pause-server:unpause": "admin_or_owner",
    "os_compute_api:os-lock-server:lock": "admin_or_owner",
    "os_compute_api:os-lock-server:unlock": "admin_or_owner",
    "os_compute_api:os-lock-server:unlock:unlock_override": "admin_api",
    "os_compute_api:os-shelve:shelve": "admin_or_owner",
    "os_compute_api:os-shelve:shelve_offload": "admin_api",
    "os_compute_api:os-shelve:unshelve": "admin_or_owner",
    "os_compute_api:os-shelve:unshelve_to_host": "admin_api",
    "os_compute_api:os-migrate-server:migrate_live": "admin_api",
    _VA % "index": "admin_or_owner",
    _VA % "show": "admin_or_owner",
    _VA % "create": "admin_or_owner",
    _VA % "update": "admin_or_owner",
    _VA % "swap": "admin_or_service",
    _VA % "delete": "admin_or_owner",
    _IA % "list": "admin_or_owner",
    _IA % "show": "admin_or_owner",
    _IA % "events": "admin_api",
    _IA % "events:details": "admin_or_owner",
}


def check(ctx, action, target=None):
    """True when ``ctx`` may perform ``action`` on ``target``."""
    return RULES[POLICIES[action]](ctx, target)


def authorize(ctx, action, target=None):
    """Raise PolicyNotAuthorized unless ``ctx`` may perform ``action``."""
    if not check(ctx, action, target):
        raise exception.PolicyNotAuthorized(action=action)
