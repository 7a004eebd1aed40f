"""Error bodies shared by the two HTTP services.

Both the compute API and the volume service answer errors as
``{"<faultName>": {"code": N, "message": "..."}}`` with the fault names of
Nova's ``wsgi.Fault`` table (Cinder uses the same table); any status not in
the table is ``computeFault``.  ``status_for`` gives a domain exception its
HTTP status from a table of ``(exception family, status)`` pairs, the
first family that matches winning; each service passes its own table,
usually ``EXCEPTION_FAMILY_STATUS`` plus its own entries in front.
"""
from volattach import exception

FAULT_NAMES = {
    400: "badRequest",
    401: "unauthorized",
    403: "forbidden",
    404: "itemNotFound",
    405: "badMethod",
    409: "conflictingRequest",
    413: "overLimit",
    415: "badMediaType",
    429: "overLimit",
    501: "notImplemented",
    503: "serviceUnavailable",
}
DEFAULT_FAULT_NAME = "computeFault"

# The status of each domain-exception family (the domain code raises
# exceptions; only the HTTP edges turn them into statuses).  First match
# wins: most specific family first.
EXCEPTION_FAMILY_STATUS = (
    (exception.NotAuthenticated, 401),
    # PolicyNotAuthorized and TooManyDiskDevices are Forbidden
    (exception.Forbidden, 403),
    (exception.NotFound, 404),
    # ValidationError, InvalidDevicePath, InvalidBDM, ... are Invalid
    (exception.Invalid, 400),
    # InstanceInvalidState, InstanceIsLocked, DevicePathInUse, ...
    (exception.Conflict, 409),
    # ConductorTooOld, CinderConnectionFailed, NoValidHost, DatabaseUnavailable
    (exception.ServiceUnavailable, 503),
)


def fault_name(status):
    """The fault name of an HTTP status (``computeFault`` when unnamed)."""
    return FAULT_NAMES.get(status, DEFAULT_FAULT_NAME)


def fault_body(status, message):
    """The error body of ``status`` with ``message``."""
    return {fault_name(status): {"code": status, "message": message}}


def status_for(exc, table=EXCEPTION_FAMILY_STATUS):
    """The HTTP status of a domain exception by ``table`` (500 if none)."""
    for family, status in table:
        if isinstance(exc, family):
            return status
    return 500
