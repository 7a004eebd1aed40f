"""Response bodies, one module per resource.

Views decide which fields a body has from the request's microversion
(``req.context.microversion.matches("X.Y")``, written next to each field, in
the order Nova added them) and, for the few policy-guarded fields, from
``api.policy.check``.  They never call the compute facade: handlers load
what a view needs and pass it in.
"""
import datetime


def _utc(value):
    if value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return value


def isotime(value):
    """Nova's ``utils.isotime``: ``2026-08-21T21:01:48Z`` (None stays None)."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return _utc(value).strftime("%Y-%m-%dT%H:%M:%SZ")


def primitive_time(value):
    """How Nova's JSON serializer writes a datetime: ``...T21:01:48.000000``."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return _utc(value).strftime("%Y-%m-%dT%H:%M:%S.%f")


def field(obj, name, default=None):
    """An object's field, or ``default`` when the field is missing or unset."""
    try:
        if hasattr(obj, "obj_attr_is_set") and name in getattr(obj, "fields", {}):
            return getattr(obj, name) if obj.obj_attr_is_set(name) else default
        return getattr(obj, name, default)
    except NotImplementedError:  # an unset field without a lazy loader
        return default
