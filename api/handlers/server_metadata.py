"""/servers/{id}/metadata: the collection (GET, POST merge, PUT replace)
and one key (GET, PUT, DELETE), as Nova answers them."""
from volattach.api import common
from volattach.api import policy
from volattach.api import validation
from volattach.api.schemas import server_metadata as schemas
from volattach import exception

RULE = "os_compute_api:server-metadata:%s"


class ServerMetadata(common.Resource):

    def _server(self, req, server_id, action):
        ctx = req.context.ctx
        instance = self.compute.get(ctx, server_id)
        policy.authorize(ctx, RULE % action,
                         {"project_id": instance.project_id})
        return ctx, instance

    def _body(self, req, versioned):
        return validation.validate_body(req.context.microversion, versioned,
                                        common.read_body(req))

    def on_get(self, req, resp, server_id):
        _ctx, instance = self._server(req, server_id, "index")
        common.send(resp, {"metadata": dict(instance.metadata or {})})

    def on_post(self, req, resp, server_id):
        body = self._body(req, schemas.CREATE)
        ctx, instance = self._server(req, server_id, "create")
        result = self.compute.update_metadata(ctx, instance, body["metadata"])
        common.send(resp, {"metadata": result})

    def on_put(self, req, resp, server_id):
        body = self._body(req, schemas.UPDATE_ALL)
        ctx, instance = self._server(req, server_id, "update_all")
        result = self.compute.update_metadata(ctx, instance, body["metadata"],
                                              replace=True)
        common.send(resp, {"metadata": result})

    def on_get_item(self, req, resp, server_id, key):
        _ctx, instance = self._server(req, server_id, "show")
        metadata = instance.metadata or {}
        if key not in metadata:
            raise exception.NotFound(message="Metadata item was not found")
        common.send(resp, {"meta": {key: metadata[key]}})

    def on_put_item(self, req, resp, server_id, key):
        body = self._body(req, schemas.UPDATE)
        if key not in body["meta"]:
            raise exception.InvalidInput(
                message="Request body and URI mismatch")
        ctx, instance = self._server(req, server_id, "update")
        self.compute.update_metadata(ctx, instance, body["meta"])
        common.send(resp, {"meta": body["meta"]})

    def on_delete_item(self, req, resp, server_id, key):
        ctx, instance = self._server(req, server_id, "delete")
        if key not in (instance.metadata or {}):
            raise exception.NotFound(message="Metadata item was not found")
        self.compute.delete_metadata_item(ctx, instance, key)
        common.send(resp, None, status=204)
