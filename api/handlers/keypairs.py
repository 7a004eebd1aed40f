"""/os-keypairs: create (import or generate), list, show, delete.

Keys belong to a user; from 2.10 an admin may name another user
(``user_id`` in the body or the query)."""
from volattach.api import common
from volattach.api import policy
from volattach.api import validation
from volattach.api import views
from volattach.api.schemas import keypairs as schemas

RULE = "os_compute_api:os-keypairs:%s"


def _view(mv, row, full=False, private_key=None):
    body = {"name": row["name"], "public_key": row["public_key"],
            "fingerprint": row["fingerprint"]}
    if mv.matches("2.2"):
        body["type"] = row["type"]
    if full:
        body["user_id"] = row["user_id"]
        if private_key is not None:
            body["private_key"] = private_key
    return body


def _shown(row, mv):
    body = _view(mv, row)
    body.update({"user_id": row["user_id"], "id": row["id"],
                 "created_at": views.isotime(row["created_at"]),
                 "updated_at": None, "deleted": False, "deleted_at": None})
    return body


class Keypairs(common.Resource):

    def _user(self, req, action, user_id=None):
        ctx = req.context.ctx
        mv = req.context.microversion
        if user_id is None and mv.matches("2.10"):
            user_id = common.last(common.query(req), "user_id")
        user_id = user_id or ctx.user_id
        policy.authorize(ctx, RULE % action, {"user_id": user_id})
        return ctx, user_id

    def on_post(self, req, resp):
        mv = req.context.microversion
        data = validation.validate_body(mv, schemas.CREATE,
                                        common.read_body(req))["keypair"]
        ctx, user_id = self._user(req, "create", data.get("user_id"))
        row, private = self.compute.keypair_create(
            ctx, user_id, data["name"], data.get("public_key"),
            data.get("type", "ssh"))
        common.send(resp, {"keypair": _view(mv, row, True, private)},
                    status=201 if mv.matches("2.2") else 200)

    def on_get(self, req, resp):
        mv = req.context.microversion
        ctx, user_id = self._user(req, "index")
        rows = self.compute.keypair_list(ctx, user_id)
        common.send(resp, {"keypairs": [{"keypair": _view(mv, r)}
                                        for r in rows]})

    def on_get_item(self, req, resp, name):
        mv = req.context.microversion
        ctx, user_id = self._user(req, "show")
        row = self.compute.keypair_get(ctx, user_id, name)
        common.send(resp, {"keypair": _shown(row, mv)})

    def on_delete_item(self, req, resp, name):
        mv = req.context.microversion
        ctx, user_id = self._user(req, "delete")
        self.compute.keypair_delete(ctx, user_id, name)
        common.send(resp, None, status=204 if mv.matches("2.2") else 202)
