"""The 404 of each route parameter of the volume service that no stored
object can have (a NUL character, which PostgreSQL refuses in a query; see
``volattach.wsgi.storable``), with Cinder's message for a missing object.
``middleware()`` answers it, and 400 for a NUL in the query string, before
any handler reads either."""
from volattach import exception
from volattach.wsgi import storable


def _attachment(value, params, req):
    return exception.VolumeAttachmentNotFound(
        "Volume attachment could not be found with filter: "
        "attachment_id = %s." % value, attachment_id=value)


def _extra_spec(value, params, req):
    return exception.NotFound("Volume Type %s has no extra specs with key %s."
                              % (params.get("type_id"), value))


NOT_FOUND = {
    "volume_id": lambda value, params, req: exception.VolumeNotFound(
        volume_id=value),
    "type_id": lambda value, params, req: exception.VolumeTypeNotFound(
        volume_type_id=value),
    "key": _extra_spec,
    "attachment_id": _attachment,
}


def middleware():
    return storable.PathAndQuery(NOT_FOUND)
