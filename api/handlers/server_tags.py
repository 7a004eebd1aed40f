"""/servers/{id}/tags (2.26): list, replace all, check one, add one,
delete one, delete all, as Nova answers them."""
from volattach.api import common
from volattach.api import policy
from volattach.api import validation
from volattach.api.schemas import parameter_types
from volattach.api.schemas import server_tags as schemas
from volattach import exception

RULE = "os_compute_api:os-server-tags:%s"


class ServerTags(common.Resource):

    def _server(self, req, server_id, action):
        ctx = req.context.ctx
        if not req.context.microversion.matches("2.26"):
            raise exception.NotFound(message="The resource could not be "
                                     "found.")
        instance = self.compute.get(ctx, server_id)
        policy.authorize(ctx, RULE % action,
                         {"project_id": instance.project_id})
        return ctx, instance

    def on_get(self, req, resp, server_id):
        ctx, instance = self._server(req, server_id, "index")
        common.send(resp, {"tags": self.compute.get_tags(ctx, instance)})

    def on_put(self, req, resp, server_id):
        ctx, instance = self._server(req, server_id, "update_all")
        body = validation.validate_body(req.context.microversion,
                                        schemas.UPDATE_ALL,
                                        common.read_body(req))
        tags = self.compute.set_tags(ctx, instance, body["tags"])
        common.send(resp, {"tags": tags})

    def on_delete(self, req, resp, server_id):
        ctx, instance = self._server(req, server_id, "delete_all")
        self.compute.delete_tags(ctx, instance)
        common.send(resp, None, status=204)

    def on_get_item(self, req, resp, server_id, tag):
        ctx, instance = self._server(req, server_id, "show")
        if tag not in self.compute.get_tags(ctx, instance):
            raise exception.NotFound(
                message="Server %s has no tag '%s'" % (server_id, tag))
        common.send(resp, None, status=204)

    def on_put_item(self, req, resp, server_id, tag):
        ctx, instance = self._server(req, server_id, "update")
        try:
            validation.validate(parameter_types.tag, tag)
        except exception.ValidationError as exc:
            raise exception.InvalidInput(
                message="Tag '%s' is invalid. It must be a non empty string "
                        "without characters '/' and ','. Validation error "
                        "message: %s" % (tag, exc.format_message()))
        if self.compute.add_tag(ctx, instance, tag):
            resp.set_header("Location", common.href(
                req, "servers", instance.uuid) + "/tags/" + tag)
            common.send(resp, None, status=201)
        else:
            common.send(resp, None, status=204)

    def on_delete_item(self, req, resp, server_id, tag):
        ctx, instance = self._server(req, server_id, "delete")
        self.compute.delete_tag(ctx, instance, tag)
        common.send(resp, None, status=204)
