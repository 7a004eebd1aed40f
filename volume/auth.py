"""Authentication of volume API callers into a RequestContext.

``[volume] auth_strategy = noauth``: ``X-Auth-Token: <user>:<project>
[:<role>,<role>]`` (role ``admin`` makes an admin), the project's stable
noauth token.  Unlike Cinder's noauth (which answers 204 to a request
without a token and makes everyone admin), a missing or malformed token is a
401 in Cinder's error format.

``keystone``: keystonemiddleware's auth_token (``[keystone_authtoken]``)
wraps the application and this middleware reads the identity headers it
sets.

Either way ``X-Service-Roles`` (e.g. ``service``, what Cinder requires for
deleting a connected attachment) is recorded on the context.

Project id in the URL (``/v3/{project_id}/...``): it must be the caller's
project, else 403 (Cinder would answer 400/404 depending on the policy; a
403 says what is wrong).  Admins may use any project id in the URL.
Version documents (``/``, ``/v3/``) need no authentication.
"""
from volattach import context as volattach_context
from volattach import exception
from volattach.wsgi import identity

PUBLIC_PATHS = frozenset(["/", "/v3", "/v3/"])


def _roles(req, header):
    return identity.roles_from_header(req.get_header(header))


class AuthMiddleware:

    def __init__(self, strategy):
        self.strategy = strategy

    def _noauth_context(self, req):
        ctx = volattach_context.from_noauth_token(
            req.get_header("X-Auth-Token"),
            request_id=req.context.request_id)
        if ctx is None:
            raise exception.NotAuthenticated(
                "The request you have made requires authentication.")
        return ctx

    def _keystone_context(self, req):
        if (req.get_header("X-Identity-Status") != "Confirmed"
                or not req.get_header("X-User-Id")
                or not req.get_header("X-Project-Id")):
            raise exception.NotAuthenticated(
                "The request you have made requires authentication.")
        return volattach_context.RequestContext(
            user_id=req.get_header("X-User-Id"),
            project_id=req.get_header("X-Project-Id"),
            roles=_roles(req, "X-Roles"),
            auth_token=req.get_header("X-Auth-Token"),
            request_id=req.context.request_id)

    def process_request(self, req, resp):
        if req.path in PUBLIC_PATHS:
            req.context.ctx = None
            return
        if self.strategy == "keystone":
            ctx = self._keystone_context(req)
        else:
            ctx = self._noauth_context(req)
        ctx.service_roles = _roles(req, "X-Service-Roles")
        ctx.global_request_id = req.context.global_request_id
        req.context.ctx = ctx

    def process_resource(self, req, resp, resource, params):
        project_id = params.pop("project_id", None)
        ctx = getattr(req.context, "ctx", None)
        if (project_id is not None and ctx is not None
                and project_id != ctx.project_id and not ctx.is_admin):
            raise exception.Forbidden(
                "Project %s in the URL is not the project of the token (%s)."
                % (project_id, ctx.project_id))


def keystone_wrap(app, conf):
    """Put keystonemiddleware's auth_token in front of ``app``."""
    from keystonemiddleware import auth_token
    # delay_auth_decision: the version documents stay public; this
    # middleware answers 401 for everything else without a valid token.
    return auth_token.AuthProtocol(app, {"oslo_config_config": conf,
                                         "delay_auth_decision": True})
