"""Falcon middleware of the volume API other than authentication: the
request id, the body limit, the body's content type and the microversion.  The order is set in
``volume.wsgi``.
"""
import falcon

from volattach.volume import microversion as mv
from volattach.wsgi import body as body_limit
from volattach.wsgi import request_id as request_ids

REQUEST_ID_HEADER = "x-openstack-request-id"


class RequestIdMiddleware:
    """Give every request an id ``req-<uuid>``, echoed on every response;
    an inbound ``X-OpenStack-Request-ID`` becomes the global request id."""

    def process_request(self, req, resp):
        req.context.request_id = request_ids.new_request_id()
        req.context.global_request_id = request_ids.global_request_id(
            req.get_header(request_ids.INBOUND_HEADER))

    def process_response(self, req, resp, resource, req_succeeded):
        request_id = getattr(req.context, "request_id", None)
        if request_id:
            resp.set_header(REQUEST_ID_HEADER, request_id)


class BodyLimitMiddleware:
    """Refuse a body over ``[oslo_middleware] max_request_body_size`` (413
    ``overLimit``) or JSON nested too deep to parse (400), before
    authentication; an accepted body is read again from memory."""

    def __init__(self, limit):
        self.limit = limit

    def process_request(self, req, resp):
        refusal = body_limit.check(req.env, self.limit)
        req.stream = req.env["wsgi.input"]
        if refusal is None:
            return
        status, message = refusal
        if status == 413:
            raise falcon.HTTPError(falcon.HTTP_413, description=message)
        raise falcon.HTTPBadRequest(description=message)


# Cinder's SUPPORTED_CONTENT_TYPES
JSON_TYPES = ("application/json", "application/vnd.openstack.volume+json")


class ContentTypeMiddleware:
    """A request with a body in anything but JSON is 415 ``badMediaType``
    "Unsupported Content-Type", as Cinder (and the compute API) answer;
    a body without a Content-Type is read as JSON."""

    def process_request(self, req, resp):
        content_type = (req.content_type or "").split(";")[0].strip().lower()
        if not content_type or content_type in JSON_TYPES:
            return
        if (req.content_length or 0) > 0:
            raise falcon.HTTPUnsupportedMediaType(
                description="Unsupported Content-Type")


class MicroversionMiddleware:
    """Negotiate ``OpenStack-API-Version: volume X.Y`` (or the legacy
    ``OpenStack-Volume-microversion``): missing is 3.0, ``latest`` the
    maximum, a malformed value 400, one out of range 406.  The response
    echoes the version and varies on the header."""

    def process_request(self, req, resp):
        try:
            req.context.version = mv.negotiate_header_values(
                req.get_header(mv.HEADER), req.get_header(mv.LEGACY_HEADER))
        except mv.InvalidVersionString as exc:
            raise falcon.HTTPBadRequest(description=str(exc))
        except mv.VersionNotAcceptable as exc:
            raise falcon.HTTPNotAcceptable(description=str(exc))

    def process_response(self, req, resp, resource, req_succeeded):
        version = getattr(req.context, "version", None)
        if version is not None:
            resp.set_header(mv.HEADER, mv.response_header_value(version))
        resp.append_header("Vary", mv.HEADER)
