"""Domain exceptions of volattach.

Nothing here knows about HTTP: the API maps each family (NotFound, Invalid,
Conflict, Forbidden, ServiceUnavailable...) to a status code at its edge
(``api/faults.py``).  These exceptions cross RPC: oslo.messaging rebuilds them
on the caller's side because this module is in ``allowed_remote_exmods``.
"""


class VolattachException(Exception):
    """Base class: ``msg_fmt`` is formatted with the keyword arguments."""

    msg_fmt = "An unknown exception occurred."

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if not message:
            try:
                message = self.msg_fmt % kwargs
            except (KeyError, TypeError):
                message = self.msg_fmt
        self.message = str(message)
        super().__init__(self.message)

    def format_message(self):
        return self.message


# -- 400 family -------------------------------------------------------------

class Invalid(VolattachException):
    msg_fmt = "Invalid input: %(reason)s"


class ValidationError(Invalid):
    msg_fmt = "Invalid input for field/attribute %(detail)s"


class InvalidInput(Invalid):
    msg_fmt = "Invalid input received: %(reason)s"


class ImageUnacceptable(Invalid):
    msg_fmt = "Image %(image_id)s is unacceptable: %(reason)s"


class InvalidKeypair(Invalid):
    msg_fmt = "Keypair data is invalid: %(reason)s"


class InvalidVolume(Invalid):
    msg_fmt = "Invalid volume: %(reason)s"


class InvalidDevicePath(Invalid):
    msg_fmt = "The supplied device path (%(path)s) is invalid."


class InvalidBDM(Invalid):
    msg_fmt = "Block Device Mapping is Invalid: %(reason)s"


class InvalidBDMVolumeNotBootable(InvalidBDM):
    msg_fmt = "Block Device %(id)s is not bootable."


class InvalidRequest(Invalid):
    msg_fmt = "The request is invalid: %(reason)s"


class MultiattachNotSupportedOldMicroversion(Invalid):
    msg_fmt = ("Multiattach volumes are only supported starting with "
               "compute API version 2.60.")


class MultiattachToShelvedNotSupported(Invalid):
    msg_fmt = ("Attaching multiattach volumes is not supported for "
               "shelved-offloaded instances.")


class VolumeTaggedAttachToShelvedNotSupported(Invalid):
    msg_fmt = ("Tagged volume attachment is not supported for "
               "shelved-offloaded instances.")


class VolumeAlreadyAttached(Invalid):
    msg_fmt = "Volume %(volume_id)s is already attached to server %(server_id)s."


class VolumeNotAttached(Invalid):
    msg_fmt = "Volume %(volume_id)s is not attached to server %(server_id)s."


class CannotDetachRootVolume(Invalid):
    msg_fmt = "Cannot detach a root device volume"


class FlavorRefInvalid(Invalid):
    msg_fmt = "Invalid flavorRef provided."


class ImageRefInvalid(Invalid):
    msg_fmt = "Invalid imageRef provided."


class TooManyTags(Invalid):
    msg_fmt = "The number of tags exceeded the per-server limit %(maximum)d"


class MultipleVolumeAttachNotAllowed(Invalid):
    msg_fmt = "Cannot attach one or more volumes to multiple instances"


# -- 401 / 403 ---------------------------------------------------------------

class NotAuthenticated(VolattachException):
    msg_fmt = "Authentication required"


class Forbidden(VolattachException):
    msg_fmt = "Forbidden"


class PolicyNotAuthorized(Forbidden):
    msg_fmt = "Policy doesn't allow %(action)s to be performed."


class QuotaError(Forbidden):
    """A quota refused the request (403, as Nova's API answers it)."""
    msg_fmt = "Quota exceeded: code=%(code)s"


class TooManyInstances(QuotaError):
    msg_fmt = ("Quota exceeded for %(overs)s: Requested %(req)s, but already "
               "used %(used)s of %(allowed)s %(overs)s")


class MetadataLimitExceeded(QuotaError):
    msg_fmt = "Maximum number of metadata items exceeds %(allowed)d"


class KeypairLimitExceeded(QuotaError):
    msg_fmt = "Maximum number of key pairs exceeded"


class TooManyDiskDevices(Forbidden):
    msg_fmt = ("The maximum allowed number of disk devices (%(maximum)d) to "
               "attach to a single instance has been exceeded.")


# -- 404 ------------------------------------------------------------------------

class NotFound(VolattachException):
    msg_fmt = "Resource could not be found."


class InstanceNotFound(NotFound):
    msg_fmt = "Instance %(instance_id)s could not be found."


class InstanceTagNotFound(NotFound):
    msg_fmt = "Instance %(instance_id)s has no tag '%(tag)s'"


class FlavorNotFound(NotFound):
    msg_fmt = "Flavor %(flavor_id)s could not be found."


class KeypairNotFound(NotFound):
    msg_fmt = "Keypair %(name)s not found for user %(user_id)s"


class SnapshotNotFound(NotFound):
    msg_fmt = "Snapshot %(snapshot_id)s could not be found."


class VolumeNotFound(NotFound):
    msg_fmt = "Volume %(volume_id)s could not be found."


class VolumeAttachmentNotFound(NotFound):
    msg_fmt = "Volume attachment %(attachment_id)s could not be found."


class VolumeBDMNotFound(NotFound):
    msg_fmt = "No volume Block Device Mapping with id %(volume_id)s."


class BDMNotFound(NotFound):
    msg_fmt = "Block Device Mapping %(id)s could not be found."


class ServiceNotFound(NotFound):
    msg_fmt = "Service %(service_id)s could not be found."


class ComputeHostNotFound(NotFound):
    msg_fmt = "Compute host %(host)s could not be found."


class InstanceActionNotFound(NotFound):
    msg_fmt = "Action for request_id %(request_id)s on instance %(instance_uuid)s not found"


class VolumeTypeNotFound(NotFound):
    msg_fmt = "Volume type %(volume_type_id)s could not be found."


# -- 409 ------------------------------------------------------------------------

class Conflict(VolattachException):
    msg_fmt = "Conflict: %(reason)s"


class KeyPairExists(Conflict):
    msg_fmt = "Key pair '%(key_name)s' already exists."


class SwapOutsideMigration(Conflict):
    msg_fmt = ("Swapping volume %(volume_id)s is only allowed while the "
               "volume service migrates or retypes it (its migration_status "
               "is empty); use the volume service's retype or migrate "
               "instead.")


class InstanceNotReady(Conflict):
    msg_fmt = "Instance %(instance_id)s has not been created yet."


class ConsoleNotAvailable(NotFound):
    msg_fmt = "Guest does not have a console available."


class ReservationAbandoned(Conflict):
    """A reserve ran after the attach that asked for it gave up on it."""
    msg_fmt = ("Block device mapping %(bdm_uuid)s of instance "
               "%(instance_uuid)s was abandoned by its attach; not created")


class InstanceInvalidState(Conflict):
    msg_fmt = ("Cannot '%(method)s' instance %(instance_uuid)s while it is "
               "in %(attr)s %(state)s")


class InstanceIsLocked(Conflict):
    msg_fmt = "Instance %(instance_uuid)s is locked"


class DevicePathInUse(Conflict):
    msg_fmt = "The supplied device path (%(path)s) is in use."


class ServiceUnavailableConflict(Conflict):
    msg_fmt = "Service of host %(host)s is unavailable at this time."


class ComputeTooOldForFeature(Conflict):
    msg_fmt = ("The compute service of host %(host)s is too old for "
               "%(feature)s.")


class UnexpectedTaskState(Conflict):
    msg_fmt = "Unexpected task state: expecting %(expected)s but the actual state is %(actual)s"


class UnexpectedVMState(Conflict):
    msg_fmt = "Unexpected vm state: expecting %(expected)s but the actual state is %(actual)s"


# -- 503 ------------------------------------------------------------------------

class ServiceUnavailable(VolattachException):
    msg_fmt = "Service unavailable: %(reason)s"


class ConductorTooOld(ServiceUnavailable):
    msg_fmt = ("The conductor does not support %(method)s yet; retry once "
               "every conductor is upgraded.")


class ImageServiceUnavailable(ServiceUnavailable):
    # Glance's address and answer go to the log, not to the client
    msg_fmt = "The image service is unavailable at this time; retry later."


class DatabaseUnavailable(ServiceUnavailable):
    # the driver's error (hosts, ports) goes to the log, not to the client
    msg_fmt = "The database is unavailable at this time; retry later."


class CinderConnectionFailed(ServiceUnavailable):
    msg_fmt = "Connection to cinder host failed: %(reason)s"


class NoValidHost(ServiceUnavailable):
    msg_fmt = "No valid host was found. %(reason)s"


# -- 500 and internal -----------------------------------------------------------

class CinderAPIError(VolattachException):
    msg_fmt = "Block storage API error (HTTP %(code)s): %(reason)s"


class VirtDriverError(VolattachException):
    msg_fmt = "Virt driver failed to %(operation)s: %(reason)s"


class ObjectActionError(VolattachException):
    msg_fmt = "Object action %(action)s failed because: %(reason)s"


class DBError(VolattachException):
    msg_fmt = "Database error: %(reason)s"


# -- volume service (volattach-volume) ----------------------------------------

class VolumeTypeExists(Conflict):
    msg_fmt = "Volume Type %(name)s already exists."


class VolumeTypeInUse(Invalid):
    msg_fmt = ("Volume Type %(volume_type_id)s deletion is not allowed with "
               "volumes present with the type.")


# -- migrations (os-migrations, /servers/{id}/migrations) ----------------------

class MigrationNotFound(NotFound):
    msg_fmt = "Migration %(migration_id)s could not be found."


class MigrationNotFoundForInstance(MigrationNotFound):
    msg_fmt = ("Migration %(migration_id)s not found for instance "
               "%(instance_id)s")


class MarkerNotFound(Invalid):
    msg_fmt = "Marker %(marker)s could not be found."



# -- server groups, aggregates (issue 34) --------------------------------------

class InstanceGroupNotFound(NotFound):
    msg_fmt = "Instance group %(group_uuid)s could not be found."


class AggregateNotFound(NotFound):
    msg_fmt = "Aggregate %(aggregate_id)s could not be found."


class AggregateNameExists(Conflict):
    msg_fmt = "Aggregate %(aggregate_name)s already exists."


class AggregateHostExists(Conflict):
    msg_fmt = "Aggregate %(aggregate_id)s already has host %(host)s."


class AggregateHostNotFound(NotFound):
    msg_fmt = "Aggregate %(aggregate_id)s has no host %(host)s."


class InvalidAggregateActionAdd(Conflict):
    msg_fmt = ("Cannot add host to aggregate %(aggregate_id)s. Reason: "
               "%(reason)s.")


class InvalidAggregateActionRemoveHost(Conflict):
    msg_fmt = ("Cannot remove host from aggregate %(aggregate_id)s. Reason: "
               "%(reason)s.")


class InvalidAggregateActionDelete(Invalid):
    msg_fmt = ("Cannot remove host from aggregate %(aggregate_id)s. Reason: "
               "%(reason)s.")


class InvalidAggregateActionUpdate(Invalid):
    msg_fmt = "Cannot update aggregate %(aggregate_id)s. Reason: %(reason)s."


class InvalidAggregateActionUpdateMeta(Invalid):
    msg_fmt = ("Cannot update metadata of aggregate %(aggregate_id)s. "
               "Reason: %(reason)s.")


class NoValidHostRequest(Invalid):
    """NoValidHost where the API refuses the request itself (400): a live
    migration's named destination that breaks the server's group."""
    msg_fmt = "No valid host was found. %(reason)s"


# -- the caller's fault -------------------------------------------------------

# Refusals of a request as it was made (the 4xx families, and whatever
# subclass joins them): an RPC server declares them expected
# (``volattach.rpc``) and logs them at INFO without a traceback, not as
# errors of its own.
CLIENT_FAULTS = (Invalid, NotAuthenticated, Forbidden, NotFound, Conflict)
