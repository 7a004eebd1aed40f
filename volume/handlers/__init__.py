"""HTTP handlers of the volume API, one module per resource.

Each responder is thin: context -> validate -> call the manager ->
serialize with ``volume.views``.  Helpers shared by the modules live here.
"""
import falcon

from volattach.volume import faults
from volattach.volume import validation


def context(req):
    return req.context.ctx


def version(req):
    return req.context.version


def require_version(req, minimum):
    """Below ``minimum`` the resource does not exist (Cinder: 404)."""
    if req.context.version < minimum:
        raise falcon.HTTPNotFound(description=faults.NOT_FOUND)


def body(req, schema):
    """The JSON body, validated against ``schema``."""
    data = req.get_media(default_when_empty=None)
    validation.validate(schema, data)
    return data


def flag(req, name):
    """A boolean query parameter (``all_tenants=1`` / ``true``)."""
    value = req.get_param(name)
    return value is not None and value.strip().lower() in (
        "1", "true", "yes", "on", "t", "y", "")
