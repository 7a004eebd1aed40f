"""/os-aggregates (admin): list, create, show, update, delete, and the
actions add_host, remove_host and set_metadata.

The view is Nova's: id, name, availability_zone, hosts, metadata, the
timestamps, deleted (false), and from 2.41 the uuid; a create answers
without hosts and metadata.  An id that is not an integer is 400."""
from volattach.api import common
from volattach.api import policy
from volattach.api import validation
from volattach.api.schemas import aggregates as schemas
from volattach import exception

RULE = "os_compute_api:os-aggregates:%s"


def _time(value):
    """Nova's aggregate timestamps: naive ISO 8601 with microseconds."""
    if value is None:
        return None
    return value.replace(tzinfo=None).strftime("%Y-%m-%dT%H:%M:%S.%f")


def _view(mv, agg, short=False):
    body = {"id": agg.id, "name": agg.name,
            "availability_zone": agg.availability_zone,
            "created_at": _time(agg.created_at),
            "updated_at": _time(agg.updated_at),
            "deleted_at": None, "deleted": False}
    if not short:
        body["hosts"] = list(agg.hosts)
        body["metadata"] = dict(agg.metadata)
    if mv.matches("2.41"):
        body["uuid"] = agg.uuid
    return body


def _id(aggregate_id):
    try:
        value = int(aggregate_id)
    except ValueError:
        raise exception.InvalidInput(
            message="Invalid input received: id must be an integer")
    if not -2 ** 31 <= value < 2 ** 31:
        raise exception.InvalidInput(
            message="Invalid input received: id must be an integer")
    return value


class Aggregates(common.Resource):

    def _authorize(self, req, action):
        ctx = req.context.ctx
        policy.authorize(ctx, RULE % action, {})
        return ctx, req.context.microversion

    def on_get(self, req, resp):
        ctx, mv = self._authorize(req, "index")
        validation.validate_query(mv, schemas.QUERY, common.query(req))
        common.send(resp, {"aggregates": [
            _view(mv, a) for a in self.compute.aggregate_list(ctx)]})

    def on_post(self, req, resp):
        ctx, mv = self._authorize(req, "create")
        data = validation.validate_body(mv, schemas.CREATE,
                                        common.read_body(req))["aggregate"]
        agg = self.compute.aggregate_create(ctx, data["name"].strip(),
                                            data.get("availability_zone"))
        common.send(resp, {"aggregate": _view(mv, agg, short=True)})

    def on_get_item(self, req, resp, aggregate_id):
        ctx, mv = self._authorize(req, "show")
        validation.validate_query(mv, schemas.QUERY, common.query(req))
        agg = self.compute.aggregate_get(ctx, _id(aggregate_id))
        common.send(resp, {"aggregate": _view(mv, agg)})

    def on_put_item(self, req, resp, aggregate_id):
        ctx, mv = self._authorize(req, "update")
        data = validation.validate_body(mv, schemas.UPDATE,
                                        common.read_body(req))["aggregate"]
        agg = self.compute.aggregate_update(ctx, _id(aggregate_id), data)
        common.send(resp, {"aggregate": _view(mv, agg)})

    def on_delete_item(self, req, resp, aggregate_id):
        ctx, _mv = self._authorize(req, "delete")
        self.compute.aggregate_delete(ctx, _id(aggregate_id))
        common.send(resp, None, status=200)


class AggregateAction(common.Resource):
    """POST /os-aggregates/{id}/action: add_host, remove_host,
    set_metadata."""

    _SCHEMAS = {"add_host": schemas.ADD_HOST,
                "remove_host": schemas.REMOVE_HOST,
                "set_metadata": schemas.SET_METADATA}

    def on_post(self, req, resp, aggregate_id):
        ctx = req.context.ctx
        mv = req.context.microversion
        body = common.read_body(req)
        action = next(iter(body), None) if isinstance(body, dict) and len(
            body) == 1 else None
        if action not in self._SCHEMAS:
            raise exception.InvalidInput(
                message="There is no such action: %s" % (
                    ", ".join(sorted(body)) if isinstance(body, dict)
                    else body))
        validation.validate_body(mv, self._SCHEMAS[action], body)
        policy.authorize(ctx, RULE % action, {})
        agg_id = _id(aggregate_id)
        if action == "add_host":
            agg = self.compute.aggregate_add_host(ctx, agg_id,
                                                  body[action]["host"])
        elif action == "remove_host":
            agg = self.compute.aggregate_remove_host(ctx, agg_id,
                                                     body[action]["host"])
        else:
            agg = self.compute.aggregate_set_metadata(
                ctx, agg_id, body[action]["metadata"])
        common.send(resp, {"aggregate": _view(mv, agg)})
