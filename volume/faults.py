"""The one fault mapper of the volume API: exceptions -> Cinder error bodies.

Every error response has Cinder's shape ``{"<faultName>": {"code": N,
"message": "..."}}``.  Domain exceptions map by family (Invalid 400,
NotAuthenticated 401, Forbidden 403, NotFound 404, Conflict 409,
ServiceUnavailable 503); falcon's own HTTP errors (unknown route, bad
method, malformed JSON, microversion errors raised by the middleware) keep
their status; anything else is logged and becomes Cinder's generic 500.
"""
import falcon
from oslo_log import log as logging

from volattach import exception
from volattach.wsgi import faults as shared_faults

LOG = logging.getLogger(__name__)


NOT_FOUND = "The resource could not be found."
NOT_AUTHENTICATED = "The request you have made requires authentication."
INTERNAL = ("The server has either erred or is incapable of performing the "
            "requested operation.")


def status_of(exc):
    return shared_faults.status_for(exc)


fault_body = shared_faults.fault_body


def _falcon_message(exc):
    if isinstance(exc, (falcon.MediaMalformedError,
                        falcon.MediaNotFoundError)):
        return "Malformed request body"
    if isinstance(exc, falcon.HTTPNotFound) and not exc.description:
        return NOT_FOUND
    if isinstance(exc, falcon.HTTPMethodNotAllowed):
        return "The method specified is not allowed for this resource."
    return exc.description or exc.title


def handle(req, resp, exc, params):
    """Falcon error handler for every exception."""
    if isinstance(exc, falcon.HTTPError):
        status, message = exc.status_code, _falcon_message(exc)
        if exc.headers:
            resp.set_headers(exc.headers)
    elif isinstance(exc, exception.VolattachException):
        status, message = status_of(exc), exc.format_message()
        if status == 500:
            LOG.error("Unexpected error on %s %s: %s", req.method, req.path,
                      message)
    else:
        LOG.exception("Unexpected error on %s %s", req.method, req.path)
        status, message = 500, INTERNAL
    resp.status = status
    resp.media = fault_body(status, message)


def install(app):
    for exc_type in (Exception, falcon.HTTPError,
                     exception.VolattachException):
        app.add_error_handler(exc_type, handle)
