"""The HTTP status of each domain-exception family, shared by the two HTTP
edges (the compute API and the volume service): the domain code raises
exceptions, only these edges turn them into status codes."""
from volattach import exception

# first match wins: order from the most specific family
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
