"""Authentication middleware: who is calling (``[api] auth_strategy``).

Both strategies put a ``volattach.context.RequestContext`` in environ
``volattach.context`` (with the request id of ``api.middleware.RequestId``)
or answer 401.  The version documents (``GET /``, ``GET /v2.1`` and
``GET /v2.1/``) need no authentication under either.

- ``noauth``: ``X-Auth-Token: <user>:<project>[:<role>,<role>]``; the role
  ``admin`` makes an admin (``volattach.context.from_noauth_token``).
- ``keystone``: keystonemiddleware's ``auth_token`` (options in
  ``[keystone_authtoken]``) validates the token and sets the ``X-User-Id``,
  ``X-Project-Id``, ``X-Roles`` and ``X-Service-Roles`` headers, from which
  ``KeystoneContext`` builds the context.  keystonemiddleware answers
  invalid tokens itself (its own 401 body, as in front of Nova).
"""
import logging

from volattach.api import faults
from volattach.api import middleware
from volattach import context as volattach_context
from volattach.wsgi import identity

LOG = logging.getLogger(__name__)

ENV_CONTEXT = "volattach.context"

# Reachable without a token.
PUBLIC_PATHS = ("", "/", "/v2.1", "/v2.1/", "/v2", "/v2/")

AUTH_REQUIRED = "Authentication required"


def _unauthorized(start_response):
    return faults.wsgi_fault(start_response, 401, AUTH_REQUIRED,
                             headers=[("WWW-Authenticate",
                                       "X-Auth-Token realm=volattach")])


def _ids(environ):
    return (environ.get(middleware.ENV_REQUEST_ID),
            environ.get(middleware.ENV_GLOBAL_REQUEST_ID))


class NoAuth:
    """``X-Auth-Token: <user>:<project>[:<roles>]`` -> RequestContext."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO", "") in PUBLIC_PATHS:
            return self.application(environ, start_response)
        request_id, global_request_id = _ids(environ)
        ctx = volattach_context.from_noauth_token(
            environ.get("HTTP_X_AUTH_TOKEN"), request_id=request_id)
        if ctx is None:
            return _unauthorized(start_response)
        ctx.global_request_id = global_request_id
        environ[ENV_CONTEXT] = ctx
        return self.application(environ, start_response)


def _roles(environ, key):
    return identity.roles_from_header(environ.get(key))


class KeystoneContext:
    """Builds the RequestContext from the headers auth_token has set."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        user_id = environ.get("HTTP_X_USER_ID") or environ.get("HTTP_X_USER")
        if not user_id:
            LOG.debug("neither X-User-Id nor X-User in the request")
            return _unauthorized(start_response)
        request_id, global_request_id = _ids(environ)
        ctx = volattach_context.RequestContext(
            user_id=user_id,
            project_id=(environ.get("HTTP_X_PROJECT_ID")
                        or environ.get("HTTP_X_TENANT_ID")),
            roles=_roles(environ, "HTTP_X_ROLES"),
            service_roles=_roles(environ, "HTTP_X_SERVICE_ROLES"),
            auth_token=environ.get("HTTP_X_AUTH_TOKEN"),
            request_id=request_id, global_request_id=global_request_id)
        environ[ENV_CONTEXT] = ctx
        return self.application(environ, start_response)


class Keystone:
    """keystonemiddleware auth_token + KeystoneContext, except on PUBLIC_PATHS."""

    def __init__(self, application, conf):
        from keystonemiddleware import auth_token
        self.application = application
        self.protected = auth_token.AuthProtocol(
            KeystoneContext(application), {"oslo_config_config": conf})

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO", "") in PUBLIC_PATHS:
            return self.application(environ, start_response)
        return self.protected(environ, start_response)


def middleware_for(conf):
    """The auth middleware factory of ``[api] auth_strategy``."""
    if conf.api.auth_strategy == "keystone":
        return lambda app: Keystone(app, conf)
    return NoAuth
