"""Request ids of the two HTTP services.

Every request gets an id ``req-<uuid4>``, answered in the service's
request-id headers; an inbound ``X-OpenStack-Request-ID`` of the same form
becomes the global request id (anything else is ignored, as in
oslo.middleware).
"""
import re
import uuid

INBOUND_HEADER = "X-OpenStack-Request-ID"
# INBOUND_HEADER as a key of a WSGI environ
ENVIRON_KEY = "HTTP_X_OPENSTACK_REQUEST_ID"

_GLOBAL_ID_RE = re.compile(r"^req-[a-f0-9]{8}(-[a-f0-9]{4}){3}-[a-f0-9]{12}$")


def new_request_id():
    """A fresh request id ``req-<uuid4>``."""
    return "req-%s" % uuid.uuid4()


def global_request_id(inbound):
    """The inbound header value if it is a valid request id, else None."""
    if inbound and _GLOBAL_ID_RE.match(inbound):
        return inbound
    return None
