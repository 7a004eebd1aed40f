"""Identity headers shared by the two HTTP services.

keystonemiddleware's auth_token passes the caller's roles as comma-separated
lists (``X-Roles``, ``X-Service-Roles``); both services read them the same
way.  The noauth token ``<user>:<project>[:<roles>]`` is parsed by
``volattach.context.from_noauth_token`` for both.
"""


def roles_from_header(value):
    """``"a, b,,c"`` -> ``["a", "b", "c"]``; None or blank -> ``[]``."""
    return [role.strip() for role in (value or "").split(",")
            if role.strip()]
