"""/types/{id}/extra_specs: a volume type's extra specs (writes: admin).

POST adds or replaces the given keys; PUT of one key needs a body of
exactly that key; DELETE of an unknown key is 404, as in Cinder.
"""
import falcon

from volattach import exception
from volattach.volume import validation
from volattach.volume.handlers import body, context
from volattach.volume.schemas import types as schemas


class Collection:
    def __init__(self, manager):
        self.manager = manager

    def on_get(self, req, resp, type_id):
        vtype = self.manager.type_get(context(req), type_id)
        resp.media = {"extra_specs": vtype["extra_specs"]}

    def on_post(self, req, resp, type_id):
        specs = body(req, schemas.extra_specs_create)["extra_specs"]
        resp.media = {"extra_specs": self.manager.type_specs_set(
            context(req), type_id, specs)}


class Item:
    def __init__(self, manager):
        self.manager = manager

    def on_get(self, req, resp, type_id, key):
        specs = self.manager.type_get(context(req), type_id)["extra_specs"]
        if key not in specs:
            raise exception.NotFound(
                "Volume Type %s has no extra specs with key %s."
                % (type_id, key))
        resp.media = {key: specs[key]}

    def on_put(self, req, resp, type_id, key):
        data = req.get_media(default_when_empty=None)
        validation.validate(schemas.extra_spec_update, data)
        if len(data) > 1:
            raise exception.InvalidInput(
                message="Request body contains too many items.")
        if key not in data:
            raise exception.InvalidInput(
                message="Request body and URI mismatch")
        resp.media = self.manager.type_specs_set(context(req), type_id,
                                                 data)

    def on_delete(self, req, resp, type_id, key):
        self.manager.type_spec_delete(context(req), type_id, key)
        resp.status = falcon.HTTP_202
