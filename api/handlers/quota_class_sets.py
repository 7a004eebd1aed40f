"""/os-quota-class-sets/{class}: show and update (admin) a quota class's
limits; the class ``default`` holds every project's defaults.  Before 2.50
server_groups and server_group_members are not shown; 2.50 hides the
network quotas, 2.57 the personality ones (as Nova)."""
from volattach.api import common
from volattach.api import policy
from volattach.api import validation
from volattach.api.compute import quotas
from volattach.api.schemas import quota_sets as schemas
from volattach import exception

RULE = "os_compute_api:os-quota-class-sets:%s"


def _body(mv, class_name, values):
    hidden = schemas.class_filtered(mv)
    result = {"id": str(class_name)} if class_name is not None else {}
    result.update({r: values[r] for r in quotas.RESOURCES
                   if r not in hidden and r in values})
    return {"quota_class_set": result}


class QuotaClassSets(common.Resource):

    def on_get(self, req, resp, class_name):
        ctx = req.context.ctx
        policy.authorize(ctx, RULE % "show", {"quota_class": class_name})
        common.send(resp, _body(req.context.microversion, class_name,
                                self.compute.quota_class_get(ctx, class_name)))

    def on_put(self, req, resp, class_name):
        ctx = req.context.ctx
        mv = req.context.microversion
        body = validation.validate_body(mv, schemas.CLASS_UPDATE,
                                        common.read_body(req))
        policy.authorize(ctx, RULE % "update", {"quota_class": class_name})
        if not 1 <= len(class_name) <= 255:
            raise exception.InvalidInput(
                message="quota_class_name has a length of 1 to 255 "
                        "characters")
        values = {k: int(v) for k, v in body["quota_class_set"].items()}
        self.compute.quota_class_update(ctx, class_name, values)
        common.send(resp, _body(mv, None,
                                self.compute.quota_class_get(ctx, class_name)))
