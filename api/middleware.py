"""The WSGI middleware of the compute API (their order is in ``api.wsgi``).

- ``RequestId``: gives every request an id ``req-<uuid4>`` (environ
  ``openstack.request_id``) and answers it in ``x-openstack-request-id`` and
  ``x-compute-request-id``; a valid inbound ``X-OpenStack-Request-ID``
  becomes the global request id (environ ``openstack.global_request_id``).
- ``FaultWrapper``: any exception that escapes the layers inside it becomes
  a logged 500 ``computeFault`` (falcon renders the errors of handlers
  itself: see ``api.faults``).
- ``BodyLimit``: refuses a body over ``[oslo_middleware]
  max_request_body_size`` (413 ``overLimit``) or nested too deep to parse
  (400), before authentication (``volattach.wsgi.body``).
- ``Microversion``: negotiates the microversion (``api.microversions``),
  stores it in environ ``volattach.microversion``, answers 400/406 for bad
  requests, and adds the version headers and ``Vary`` to every response of
  the versioned API (errors too).  ``GET /`` is not versioned.
"""
import logging

from volattach.api import faults
from volattach.api import microversions
from volattach.wsgi import body as body_limit
from volattach.wsgi import request_id as request_ids

LOG = logging.getLogger(__name__)

ENV_REQUEST_ID = "openstack.request_id"
ENV_GLOBAL_REQUEST_ID = "openstack.global_request_id"
ENV_MICROVERSION = "volattach.microversion"

REQUEST_ID_HEADERS = ("x-openstack-request-id", "x-compute-request-id")

# Paths outside the versioned API (the root version document).
UNVERSIONED_PATHS = ("", "/")


def _add_headers(start_response, headers):
    def _start_response(status, response_headers, exc_info=None):
        names = {name.lower() for name, _value in headers}
        kept = [(n, v) for n, v in response_headers if n.lower() not in names]
        return start_response(status, kept + list(headers), exc_info)
    return _start_response


class RequestId:

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        request_id = request_ids.new_request_id()
        environ[ENV_REQUEST_ID] = request_id
        inbound = request_ids.global_request_id(
            environ.get(request_ids.ENVIRON_KEY))
        if inbound:
            environ[ENV_GLOBAL_REQUEST_ID] = inbound
        headers = [(name, request_id) for name in REQUEST_ID_HEADERS]
        return self.application(environ, _add_headers(start_response, headers))


class FaultWrapper:

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        try:
            return self.application(environ, start_response)
        except Exception as exc:
            LOG.exception("Unexpected error in %s %s (request %s)",
                          environ.get("REQUEST_METHOD"),
                          environ.get("PATH_INFO"),
                          environ.get(ENV_REQUEST_ID))
            return faults.wsgi_fault(start_response, 500,
                                     faults.unexpected_message(exc))


class BodyLimit:

    def __init__(self, application, conf):
        self.application = application
        self.limit = conf.oslo_middleware.max_request_body_size

    def __call__(self, environ, start_response):
        refusal = body_limit.check(environ, self.limit)
        if refusal is not None:
            return faults.wsgi_fault(start_response, *refusal)
        return self.application(environ, start_response)


class Microversion:

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO", "") in UNVERSIONED_PATHS:
            return self.application(environ, start_response)
        try:
            version = microversions.negotiate(environ)
        except microversions.InvalidMicroversion as exc:
            return faults.wsgi_fault(start_response, 400, exc.format_message())
        except microversions.MicroversionNotAcceptable as exc:
            return faults.wsgi_fault(start_response, 406, exc.format_message())
        environ[ENV_MICROVERSION] = version
        return self.application(
            environ, _add_headers(start_response,
                                  microversions.response_headers(version)))
