"""/os-volumes[/detail|/{volume_id}]: Nova's deprecated volume proxy.

Served below microversion 2.36 as Nova serves it: list, show, create and
delete volumes of the block storage API in the caller's name (the facade's
Cinder client).  From 2.36 every call is 404.  Lists page by ``offset``
and ``limit`` (at most ``[api] max_limit``).  Create answers 200 with the
volume while it is still ``creating``; delete answers 202.  An empty volume
id (``/os-volumes/``) is 404, as in Nova.
"""
from volattach.api import common
from volattach.api import policy
from volattach.api import validation
from volattach.api.schemas import os_volumes as schemas
from volattach.api.views import os_volumes as view
from volattach import exception

POLICY = "os_compute_api:os-volumes:%s"
MAX_VERSION = "2.35"


def _natural(req, name, default):
    """A paging parameter: an integer >= 0 (Nova's common.limited)."""
    value = common.last(common.query(req), name)
    if value in (None, ""):
        return default
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0:
        raise exception.InvalidInput(
            message="%s param must be an integer" % name)
    return number


class OsVolumes(common.Resource):

    def _check(self, req, action):
        mv = req.context.microversion
        if not mv.matches("2.1", MAX_VERSION):
            raise exception.NotFound(
                message="API version %s is not supported on this method." % mv)
        policy.authorize(req.context.ctx, POLICY % action,
                         {"project_id": req.context.ctx.project_id})
        return req.context.ctx

    def _get(self, ctx, volume_id):
        try:
            return self.compute.volume_api.get(ctx, volume_id)
        except exception.VolumeNotFound:
            raise exception.VolumeNotFound(volume_id=volume_id)

    def _list(self, req, action):
        if req.env.get("PATH_INFO", "").endswith("/"):
            # GET /os-volumes/: a volume without an id
            raise exception.NotFound(message="Volume could not be found.")
        ctx = self._check(req, action)
        offset = _natural(req, "offset", 0)
        limit = min(_natural(req, "limit", self.conf.api.max_limit),
                    self.conf.api.max_limit)
        volumes = self.compute.volume_api.list_volumes(ctx, detail=True)
        return {"volumes": [view.volume(v)
                            for v in volumes[offset:offset + limit]]}

    def on_get(self, req, resp):
        common.send(resp, self._list(req, "list"))

    def on_get_detail(self, req, resp):
        common.send(resp, self._list(req, "detail"))

    def on_delete(self, req, resp):
        raise exception.NotFound(message="Volume could not be found.")

    def on_get_item(self, req, resp, volume_id):
        ctx = self._check(req, "show")
        common.send(resp, {"volume": view.volume(self._get(ctx, volume_id))})

    def on_delete_item(self, req, resp, volume_id):
        ctx = self._check(req, "delete")
        try:
            self.compute.volume_api.delete_volume(ctx, volume_id)
        except exception.VolumeNotFound:
            raise exception.VolumeNotFound(volume_id=volume_id)
        common.send(resp, None, status=202)

    def on_post(self, req, resp):
        ctx = self._check(req, "create")
        body = validation.validate_body(req.context.microversion,
                                        schemas.CREATE, common.read_body(req))
        vol = body["volume"]
        if vol.get("snapshot_id"):
            # the block storage service keeps no snapshots
            raise exception.NotFound(
                message="Snapshot %s could not be found." % vol["snapshot_id"])
        created = self.compute.volume_api.create_volume(
            ctx, int(vol["size"]), name=vol.get("display_name"),
            description=vol.get("display_description"),
            volume_type=vol.get("volume_type"),
            availability_zone=vol.get("availability_zone"),
            metadata=vol.get("metadata"))
        common.send(resp, {"volume": view.volume(created)})
