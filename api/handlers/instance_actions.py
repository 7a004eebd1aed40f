"""/servers/{server_id}/os-instance-actions[/{request_id}].

Actions are listed newest first.  From 2.58 the list pages by ``limit`` and
``marker`` (a request id) and filters by ``changes-since`` /
``changes-before`` (2.66) on the action's ``updated_at``.  Events are shown
to admins (with tracebacks) at every version and, from 2.51, to the owner
without tracebacks.  From 2.21 a deleted server's actions are listed too.
"""
import datetime


from volattach.api import common
from volattach.api import policy
from volattach.api import validation
from volattach.api.schemas import instance_actions as schemas
from volattach.api.views import instance_actions as view
from volattach import exception

POLICY = "os_compute_api:os-instance-actions:%s"

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def _aware(value):
    if value is None:
        return _EPOCH
    if value.tzinfo is None:
        return value.replace(tzinfo=datetime.timezone.utc)
    return value


def _updated(action):
    return _aware(action.updated_at or action.start_time)


class InstanceActions(common.Resource):

    def _instance(self, req, server_id, action):
        ctx = req.context.ctx
        # from 2.21 the actions of a deleted server are listed too
        instance = self.compute.get(
            ctx, server_id,
            read_deleted=req.context.microversion.matches("2.21"))
        policy.authorize(ctx, POLICY % action,
                         {"project_id": instance.project_id})
        return instance

    def on_get(self, req, resp, server_id):
        mv = req.context.microversion
        query = validation.validate_query(mv, schemas.INDEX_QUERY,
                                          common.query(req))
        instance = self._instance(req, server_id, "list")
        actions = sorted(self.compute.get_instance_actions(req.context.ctx,
                                                           instance),
                         key=lambda a: (_aware(a.start_time), a.id or 0),
                         reverse=True)
        if mv.matches("2.58"):
            actions = self._filter(query, actions)
        common.send(resp, view.index(req, self.conf, server_id, actions,
                                     query))

    def _filter(self, query, actions):
        since, before = common.changes_range(query)
        if since:
            actions = [a for a in actions if _updated(a) >= since]
        if before:
            actions = [a for a in actions if _updated(a) <= before]
        limit, marker = common.limit_and_marker(self.conf, query)
        if marker is not None:
            ids = [a.request_id for a in actions]
            if marker not in ids:
                raise exception.InvalidInput(
                    message="Marker %s could not be found." % marker)
            actions = actions[ids.index(marker) + 1:]
        return actions[:limit]

    def on_get_item(self, req, resp, server_id, request_id):
        ctx = req.context.ctx
        mv = req.context.microversion
        validation.validate_query(mv, schemas.SHOW_QUERY, common.query(req))
        instance = self._instance(req, server_id, "show")
        try:
            action, events = self.compute.get_instance_action(ctx, instance,
                                                              request_id)
        except exception.InstanceActionNotFound:
            raise exception.InstanceActionNotFound(
                message="Action %s not found" % request_id)
        target = {"project_id": instance.project_id}
        body = view.action(req, action)
        show_events = show_traceback = show_host = False
        if policy.check(ctx, POLICY % "events", target):
            show_events = show_traceback = True
            show_host = mv.matches("2.62")
        elif mv.matches("2.51"):
            show_events = True
        if show_events:
            show_details = (mv.matches("2.84") and
                            policy.check(ctx, POLICY % "events:details",
                                         target))
            project_id = action.project_id or instance.project_id
            body["events"] = [
                view.event(req, evt, project_id, show_traceback, show_host,
                           show_details)
                for evt in events]
        common.send(resp, {"instanceAction": body})
