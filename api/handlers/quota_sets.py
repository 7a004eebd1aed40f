"""/os-quota-sets/{project_id}: show, detail (with usage), defaults,
update (admin) and delete (admin: back to the defaults), for a project or,
with ``?user_id=``, one user in it; as Nova answers them (2.36 and 2.57
hide the network and personality quotas)."""
from oslo_utils import strutils

from volattach.api import common
from volattach.api import policy
from volattach.api import validation
from volattach.api.compute import quotas
from volattach.api.schemas import quota_sets as schemas
from volattach import exception

RULE = "os_compute_api:os-quota-sets:%s"


def _body(mv, project_id, values):
    hidden = schemas.filtered(mv)
    result = {"id": str(project_id)} if project_id is not None else {}
    result.update({r: values[r] for r in quotas.RESOURCES
                   if r not in hidden and r in values})
    return {"quota_set": result}


class QuotaSets(common.Resource):

    def _start(self, req, action, project_id):
        ctx = req.context.ctx
        query = validation.validate_query(req.context.microversion,
                                          schemas.QUERY, common.query(req))
        policy.authorize(ctx, RULE % action, {"project_id": project_id})
        return ctx, common.last(query, "user_id")

    def on_get(self, req, resp, tenant_id):
        ctx, user_id = self._start(req, "show", tenant_id)
        limits = self.compute.quota_limits(ctx, tenant_id, user_id)
        common.send(resp, _body(req.context.microversion, tenant_id, limits))

    def on_get_detail(self, req, resp, tenant_id):
        ctx, user_id = self._start(req, "detail", tenant_id)
        limits = self.compute.quota_limits(ctx, tenant_id, user_id)
        usages = self.compute.quota_usages(ctx, tenant_id, user_id)
        detail = {r: {"limit": limits[r], "in_use": usages.get(r, 0),
                      "reserved": 0} for r in limits}
        common.send(resp, _body(req.context.microversion, tenant_id, detail))

    def on_get_defaults(self, req, resp, tenant_id):
        ctx = req.context.ctx
        policy.authorize(ctx, RULE % "defaults", {"project_id": tenant_id})
        common.send(resp, _body(req.context.microversion, tenant_id,
                                quotas.defaults()))

    def on_put(self, req, resp, tenant_id):
        mv = req.context.microversion
        body = validation.validate_body(mv, schemas.UPDATE,
                                        common.read_body(req))["quota_set"]
        ctx, user_id = self._start(req, "update", tenant_id)
        if "networks" in body:
            raise exception.InvalidInput(
                message="The networks quota is disabled")
        force = strutils.bool_from_string(body.pop("force", False))
        values = {k: int(v) for k, v in body.items()}
        self.compute.quota_update(ctx, tenant_id, values, user_id=user_id,
                                  force=force)
        limits = self.compute.quota_limits(ctx, tenant_id, user_id)
        common.send(resp, _body(mv, None, limits))

    def on_delete(self, req, resp, tenant_id):
        ctx, user_id = self._start(req, "delete", tenant_id)
        self.compute.quota_delete(ctx, tenant_id, user_id)
        common.send(resp, None, status=202)
