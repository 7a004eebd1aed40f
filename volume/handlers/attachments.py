"""/attachments: the new attach API (3.27+; os-complete 3.44+; mode 3.54+).

Below 3.27 the resource does not exist (404, as Cinder).  GET of one
attachment (and the detail list) adds ``shared_connections_by_attachment``;
DELETE answers the volume's remaining attachments.  Bodies of POST and PUT
are the fresh state (Cinder's PUT body is stale; ours is not).
"""
import falcon

from volattach import exception
from volattach.volume import listing
from volattach.volume import microversion as mv
from volattach.volume import views
from volattach.volume.handlers import body, context, flag, require_version, version
from volattach.volume.schemas import attachments as schemas


_SORT_KEYS = ("id", "volume_id", "instance_uuid", "attach_status",
              "created_at", "updated_at", "attach_time")


def _listed(manager, req, detail=False):
    """The attachments the query asks for: filtered by ``volume_id``,
    ``instance_id`` and ``status``, sorted and paged (Cinder's
    attachment lists have no links)."""
    limit = listing.limit_param(req.get_param("limit"))
    sorted_by = [req.get_param(p) for p in ("sort", "sort_key", "sort_dir")]
    keys = listing.sort_params(*sorted_by,
                               allowed=_SORT_KEYS + ("status", "instance_id"))
    sorted_by = any(sorted_by)
    renamed = {"status": "attach_status", "instance_id": "instance_uuid"}
    keys = [(renamed.get(k, k), d) for k, d in keys]
    items = manager.attachment_list(
        context(req), detail=detail, volume_id=req.get_param("volume_id"),
        instance_id=req.get_param("instance_id"),
        all_tenants=flag(req, "all_tenants"))
    status = req.get_param("status")
    if status is not None:
        items = [a for a in items if a["attach_status"] == status]
    if sorted_by:               # else oldest first, as before
        items = listing.sort_items(items, keys)
    return listing.page(items, req.get_param("marker"), limit)


class Collection:
    def __init__(self, manager):
        self.manager = manager

    def on_get(self, req, resp):
        require_version(req, mv.NEW_ATTACH)
        items = _listed(self.manager, req)
        resp.media = {"attachments": [views.attachment_summary(a)
                                      for a in items]}

    def on_post(self, req, resp):
        require_version(req, mv.NEW_ATTACH)
        schema = (schemas.create_v354 if version(req) >= mv.ATTACHMENT_MODE
                  else schemas.create)
        data = body(req, schema)["attachment"]
        attachment = self.manager.attachment_create(
            context(req), data["volume_uuid"],
            instance_uuid=data.get("instance_uuid"),
            connector=data.get("connector") or None,
            mode=data.get("mode"))
        resp.media = {"attachment": views.attachment_detail(attachment)}


class Detail:
    def __init__(self, manager):
        self.manager = manager

    def on_get(self, req, resp):
        require_version(req, mv.NEW_ATTACH)
        items = _listed(self.manager, req, detail=True)
        resp.media = {"attachments": [views.attachment_detail(a)
                                      for a in items]}


class Item:
    def __init__(self, manager):
        self.manager = manager

    def on_get(self, req, resp, attachment_id):
        require_version(req, mv.NEW_ATTACH)
        attachment = self.manager.attachment_get(context(req), attachment_id)
        resp.media = {"attachment": views.attachment_detail(attachment)}

    def on_put(self, req, resp, attachment_id):
        require_version(req, mv.NEW_ATTACH)
        try:
            data = body(req, schemas.update)["attachment"]
        except exception.Invalid:
            # Cinder looks the attachment up first: unknown is 404,
            # whatever the body (a good body finds out below, for free).
            self.manager.attachment_get(context(req), attachment_id)
            raise
        attachment = self.manager.attachment_update(
            context(req), attachment_id, data["connector"])
        resp.media = {"attachment": views.attachment_detail(attachment)}

    def on_delete(self, req, resp, attachment_id):
        require_version(req, mv.NEW_ATTACH)
        remaining = self.manager.attachment_delete(context(req),
                                                   attachment_id)
        resp.media = {"attachments": [views.attachment_summary(a)
                                      for a in remaining]}


class Action:
    def __init__(self, manager):
        self.manager = manager

    def on_post(self, req, resp, attachment_id):
        require_version(req, mv.ATTACHMENT_COMPLETE)
        data = req.get_media(default_when_empty=None)
        if isinstance(data, dict) and len(data) == 1 and \
                "os-complete" not in data:
            raise exception.InvalidInput(
                message="There is no such action: %s" % next(iter(data)))
        body(req, schemas.complete)
        self.manager.attachment_complete(context(req), attachment_id)
        resp.status = falcon.HTTP_204
