"""/os-server-groups: create, list, show, delete.

The view: ``policies`` (a one-item list) and an always empty ``metadata``
before 2.64, ``policy`` and ``rules`` from 2.64; ``project_id`` and
``user_id`` from 2.13; ``members``: the servers created into the group and
not deleted."""
from volattach.api import common
from volattach.api import policy
from volattach.api import validation
from volattach.api.schemas import server_groups as schemas

RULE = "os_compute_api:os-server-groups:%s"


def _view(mv, group):
    body = {"id": group.uuid, "name": group.name}
    if mv.matches("2.64"):
        body["policy"] = group.policy
        body["rules"] = dict(group.rules)
    else:
        body["policies"] = group.policies
        body["metadata"] = {}
    body["members"] = list(group.members)
    if mv.matches("2.13"):
        body["project_id"] = group.project_id
        body["user_id"] = group.user_id
    return body


class ServerGroups(common.Resource):

    def on_post(self, req, resp):
        ctx = req.context.ctx
        mv = req.context.microversion
        data = validation.validate_body(mv, schemas.CREATE,
                                        common.read_body(req))["server_group"]
        policy.authorize(ctx, RULE % "create", {"project_id": ctx.project_id})
        if mv.matches("2.64"):
            name, rules = data["policy"], data.get("rules") or {}
        else:
            name, rules = data["policies"][0], {}
        group = self.compute.server_group_create(ctx, data["name"], name,
                                                 rules)
        common.send(resp, {"server_group": _view(mv, group)})

    def on_get(self, req, resp):
        ctx = req.context.ctx
        mv = req.context.microversion
        query = validation.validate_query(mv, schemas.INDEX_QUERY,
                                          common.query(req))
        policy.authorize(ctx, RULE % "index", {"project_id": ctx.project_id})
        all_projects = "all_projects" in query and ctx.is_admin
        if all_projects:
            policy.authorize(ctx, RULE % "index:all_projects",
                             {"project_id": ctx.project_id})
        groups = self.compute.server_group_list(ctx, all_projects)
        groups = common.limited(self.conf, list(groups), query)
        common.send(resp, {"server_groups": [_view(mv, g) for g in groups]})

    def _get(self, req, group_id, action):
        ctx = req.context.ctx
        group = self.compute.server_group_get(ctx, group_id)
        policy.authorize(ctx, RULE % action, {"project_id": group.project_id})
        return ctx, group

    def on_get_item(self, req, resp, group_id):
        mv = req.context.microversion
        validation.validate_query(mv, schemas.SHOW_QUERY, common.query(req))
        _, group = self._get(req, group_id, "show")
        common.send(resp, {"server_group": _view(mv, group)})

    def on_delete_item(self, req, resp, group_id):
        ctx, group = self._get(req, group_id, "delete")
        self.compute.server_group_delete(ctx, group)
        common.send(resp, None, status=204)
