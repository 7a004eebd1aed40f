"""/types: volume types with extra specs (create and delete: admin)."""
import falcon
from oslo_utils import strutils

from volattach.volume import views
from volattach.volume.handlers import body, context
from volattach.volume.schemas import types as schemas


class Collection:
    def __init__(self, manager):
        self.manager = manager

    def on_get(self, req, resp):
        vtypes = self.manager.type_list(context(req))
        resp.media = {"volume_types": [views.volume_type(t) for t in vtypes]}

    def on_post(self, req, resp):
        data = body(req, schemas.create)["volume_type"]
        is_public = strutils.bool_from_string(
            data.get("os-volume-type-access:is_public", True), default=True)
        vtype = self.manager.type_create(
            context(req), data["name"], description=data.get("description"),
            is_public=is_public, extra_specs=data.get("extra_specs"))
        resp.media = {"volume_type": views.volume_type(vtype)}


class Item:
    def __init__(self, manager):
        self.manager = manager

    def on_get(self, req, resp, type_id):
        vtype = self.manager.type_get(context(req), type_id)
        resp.media = {"volume_type": views.volume_type(vtype)}

    def on_delete(self, req, resp, type_id):
        self.manager.type_delete(context(req), type_id)
        resp.status = falcon.HTTP_202
