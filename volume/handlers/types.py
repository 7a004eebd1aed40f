"""/types: volume types with extra specs (create, update and delete:
admin)."""
import falcon
from oslo_utils import strutils

from volattach import exception
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

    def on_put(self, req, resp, type_id):
        data = body(req, schemas.update)["volume_type"]
        name, description = data.get("name"), data.get("description")
        is_public = data.get("is_public")
        if is_public is not None:
            try:
                is_public = strutils.bool_from_string(is_public, strict=True)
            except ValueError:
                raise exception.InvalidInput(
                    reason="Invalid value '%s' for is_public. Accepted values: "
                           "True or False." % data["is_public"])
        if name is None and description is None and is_public is None:
            raise exception.InvalidInput(
                reason="Specify volume type name, description, is_public or "
                       "a combination thereof.")
        vtype = self.manager.type_update(context(req), type_id, name=name,
                                         description=description,
                                         is_public=is_public)
        resp.media = {"volume_type": views.volume_type(vtype, access=False)}

    def on_delete(self, req, resp, type_id):
        self.manager.type_delete(context(req), type_id)
        resp.status = falcon.HTTP_202
