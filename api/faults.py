"""Domain exceptions -> HTTP status codes and Nova's error bodies.

``STATUS_BY_EXCEPTION`` is the one table that gives an HTTP status to the
domain exceptions of ``volattach.exception`` (which know nothing of HTTP):
the first family an exception belongs to wins.  Anything not in the table
is a 500 whose body names the exception class but not its message (it may
hold internals); the traceback goes to the log with the request id.

Bodies are Nova's: ``{"<name>": {"code": N, "message": "..."}}`` where the
name comes from the table shared with the volume service
(``volattach.wsgi.faults``, Nova's ``wsgi.Fault`` table) and is
``computeFault`` for every other status (406 and 500 among them).

The falcon error handlers at the end render the domain exceptions raised by
handlers, falcon's own errors (no route: 404, wrong method: 405) and
unexpected exceptions; ``wsgi_fault`` renders the same bodies for the WSGI
middleware that runs outside falcon.
"""
import http
import json
import logging

import falcon

from volattach.api import microversions
from volattach import exception
from volattach.wsgi import faults as shared_faults

LOG = logging.getLogger(__name__)

STATUS_BY_EXCEPTION = (
    (microversions.MicroversionNotAcceptable, 406),
) + shared_faults.EXCEPTION_FAMILY_STATUS


UNEXPECTED_MESSAGE = ("Unexpected API Error. Please report this to the "
                      "operators of this cloud with the request id and attach "
                      "the volattach-api log if possible.\n%s")

# webob's explanations, which Nova shows for its own bare HTTP errors
_DEFAULT_MESSAGES = {
    400: "The server could not comply with the request since it is either "
         "malformed or otherwise incorrect.",
    401: "This server could not verify that you are authorized to access the "
         "document you requested.",
    404: "The resource could not be found.",
    405: "The method is not allowed for this resource.",
    415: "Unsupported Content-Type",
}


def status_for(exc):
    """The HTTP status of a domain exception (500 when unmapped)."""
    return shared_faults.status_for(exc, STATUS_BY_EXCEPTION)


fault_body = shared_faults.fault_body


def status_line(status):
    try:
        return "%d %s" % (status, http.HTTPStatus(status).phrase)
    except ValueError:
        return "%d Error" % status


def unexpected_message(exc):
    return UNEXPECTED_MESSAGE % type(exc)


def _request_id(req):
    return req.env.get("openstack.request_id")


def _set_fault(resp, status, message):
    resp.status = status_line(status)
    resp.content_type = falcon.MEDIA_JSON
    resp.text = json.dumps(fault_body(status, message))


# -- falcon error handlers (registered by api.wsgi.make_app) --------------------

def handle_domain_exception(req, resp, ex, params):
    status = status_for(ex)
    if status == 500:
        LOG.error("Unexpected %s (request %s): %s", type(ex).__name__,
                  _request_id(req), ex, exc_info=ex)
        _set_fault(resp, 500, unexpected_message(ex))
        return
    LOG.info("%s %s returned %d: %s", req.method, req.path, status,
             ex.format_message())
    _set_fault(resp, status, ex.format_message())


def handle_http_error(req, resp, ex, params):
    status = ex.status_code
    message = ex.description or _DEFAULT_MESSAGES.get(status) or ex.title
    for name, value in (ex.headers or {}).items():
        resp.set_header(name, value)
    _set_fault(resp, status, message)


def handle_unexpected(req, resp, ex, params):
    LOG.error("Unexpected error in %s %s (request %s)", req.method, req.path,
              _request_id(req), exc_info=ex)
    _set_fault(resp, 500, unexpected_message(ex))


def register(app):
    """Install the handlers above on a falcon App."""
    app.add_error_handler(Exception, handle_unexpected)
    app.add_error_handler(falcon.HTTPError, handle_http_error)
    app.add_error_handler(exception.VolattachException, handle_domain_exception)


# -- the same bodies outside falcon ------------------------------------------------

def wsgi_fault(start_response, status, message, headers=()):
    """Answer a WSGI request with a Nova fault; returns the body iterable."""
    body = json.dumps(fault_body(status, message)).encode("utf-8")
    start_response(status_line(status),
                   [("Content-Type", "application/json"),
                    ("Content-Length", str(len(body)))] + list(headers))
    return [body]
