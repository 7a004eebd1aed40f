"""The 404 of each route parameter of the compute API that no stored
object can have (a NUL character, which PostgreSQL refuses in a query; see
``volattach.wsgi.storable``), with the message Nova gives when the object
is missing.  ``MIDDLEWARE`` is the falcon middleware that answers it, and
400 for a NUL in the query string, before any handler reads either."""
from volattach import exception
from volattach.wsgi import storable


def _server(value, params, req):
    return exception.InstanceNotFound(instance_id=value)


def _volume(value, params, req):
    if "server_id" in params:     # /servers/{id}/os-volume_attachments/{id}
        return exception.VolumeBDMNotFound(
            message="Instance %s is not attached to volume %s"
            % (params["server_id"], value))
    return exception.VolumeNotFound(volume_id=value)


def _keypair(value, params, req):
    ctx = req.context.ctx
    return exception.KeypairNotFound(
        name=value, user_id=ctx.user_id if ctx is not None else None)


def _action(value, params, req):
    return exception.InstanceActionNotFound(message="Action %s not found"
                                            % value)


def _migration(value, params, req):
    return exception.MigrationNotFoundForInstance(
        migration_id=value, instance_id=params.get("server_id"))


def _network(value, params, req):
    return exception.NotFound(
        message="Instance is not a member of specified network")


NOT_FOUND = {
    "server_id": _server,
    "volume_id": _volume,
    "flavor_id": lambda value, params, req: exception.FlavorNotFound(
        flavor_id=value),
    "name": _keypair,
    "request_id": _action,
    "migration_id": _migration,
    "network_label": _network,
    "group_id": lambda value, params, req: exception.InstanceGroupNotFound(
        group_uuid=value),
    "aggregate_id": lambda value, params, req: exception.AggregateNotFound(
        aggregate_id=value),
    "tenant_id": lambda value, params, req: exception.NotFound(
        message="Project %s has no usage." % value),
    "service_id": lambda value, params, req: exception.ServiceNotFound(
        message="Service %s not found." % value),
    "key": lambda value, params, req: exception.NotFound(
        message="Metadata item was not found"),
    "tag": lambda value, params, req: exception.InstanceTagNotFound(
        instance_id=params.get("server_id"), tag=value),
}


# ids that are integers in the database: a larger number is no row
VALID = {"migration_id": storable.integer_id}


def middleware():
    return storable.PathAndQuery(NOT_FOUND, VALID)
