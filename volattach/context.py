"""The request context: who is calling, in which project, with which request id.

Built by the API's auth middleware from the token, serialized into every RPC
message (``to_dict``/``from_dict``) so that the conductor and the computes act
for the same caller, and forwarded to the volume service by the Cinder client.

oslo.log prefixes each line with the request id and caller of the context in
oslo.context's thread-local store.  The contexts of a request (the HTTP
services' auth middleware, ``from_dict`` in an RPC server's thread) replace
whatever a previous request left there, and ``clear_current`` empties it
between requests (``volattach.wsgi.access_log``), so that each line names
its own request.  Admin contexts of service bookkeeping leave it alone.
"""
import copy

from oslo_context import context as oslo_context


class RequestContext(oslo_context.RequestContext):

    def __init__(self, *args, service_roles=None, **kwargs):
        kwargs.setdefault("is_admin", None)
        super().__init__(*args, **kwargs)
        if self.is_admin is None:
            self.is_admin = "admin" in (self.roles or [])
        self.service_roles = list(service_roles or [])

    @property
    def is_service(self):
        return "service" in (self.roles or []) or "service" in self.service_roles

    def to_dict(self):
        values = super().to_dict()
        values["roles"] = list(self.roles or [])
        values["is_admin"] = self.is_admin
        values["service_roles"] = list(self.service_roles)
        return values

    @classmethod
    def from_dict(cls, values):
        return cls(user_id=values.get("user") or values.get("user_id"),
                   project_id=values.get("project_id") or values.get("tenant"),
                   roles=values.get("roles", []),
                   is_admin=values.get("is_admin"),
                   auth_token=values.get("auth_token"),
                   request_id=values.get("request_id"),
                   global_request_id=values.get("global_request_id"),
                   read_only=values.get("read_only", False),
                   show_deleted=values.get("show_deleted", False),
                   service_roles=values.get("service_roles", []))

    def elevated(self):
        """A copy of this context with admin rights (for internal reads)."""
        ctx = copy.copy(self)
        ctx.roles = list(self.roles or [])
        if "admin" not in ctx.roles:
            ctx.roles.append("admin")
        ctx.is_admin = True
        return ctx


def get_admin_context(request_id=None):
    """A context for periodic tasks and service bookkeeping."""
    return RequestContext(user_id="volattach", project_id="service",
                          roles=["admin", "service"], is_admin=True,
                          request_id=request_id, overwrite=False)


# the user_id and project_id columns of both databases
ID_MAX_LENGTH = 255


def from_noauth_token(token, request_id=None):
    """``<user>:<project>[:<role>,<role>]`` -> RequestContext, or None."""
    if not token:
        return None
    parts = token.split(":")
    if len(parts) < 2 or not parts[0] or not parts[1] or len(parts) > 3:
        return None
    if max(len(parts[0]), len(parts[1])) > ID_MAX_LENGTH:
        return None     # no row could hold it (user_id, project_id)
    roles = ["member", "reader"]
    if len(parts) == 3 and parts[2]:
        roles = [r.strip() for r in parts[2].split(",") if r.strip()]
    return RequestContext(user_id=parts[0], project_id=parts[1], roles=roles,
                          auth_token=token, request_id=request_id)


def clear_current():
    """Empty this thread's context store (oslo.context has no public call
    for it; ``get_current`` reads the same attribute)."""
    oslo_context._request_store.context = None
