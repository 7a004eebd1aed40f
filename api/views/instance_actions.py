"""os-instance-actions bodies.

Action: action, instance_uuid, request_id, user_id, project_id, start_time,
message; updated_at 2.58+.  Event (show only, when allowed): event,
start_time, finish_time, result, traceback (only for admins: all events
were admin-only before 2.51), host (admins, 2.62+), hostId (2.62+), details
(2.84+).
"""
from volattach.api import common
from volattach.api.views import primitive_time
from volattach.api.views import servers as servers_view


def action(req, act):
    body = {
        "action": act.action,
        "instance_uuid": act.instance_uuid,
        "request_id": act.request_id,
        "user_id": act.user_id,
        "project_id": act.project_id,
        "start_time": primitive_time(act.start_time),
        "message": act.message,
    }
    if req.context.microversion.matches("2.58"):
        body["updated_at"] = primitive_time(act.updated_at or act.start_time)
    return body


def event(req, evt, project_id, show_traceback, show_host, show_details):
    mv = req.context.microversion
    body = {
        "event": evt.event,
        "start_time": primitive_time(evt.start_time),
        "finish_time": primitive_time(evt.finish_time),
        "result": evt.result,
    }
    if show_traceback:
        body["traceback"] = evt.traceback
    if show_host:
        body["host"] = evt.host
    if mv.matches("2.62"):
        body["hostId"] = servers_view.host_id(project_id, evt.host)
    if show_details:
        body["details"] = evt.details
    return body


def index(req, conf, server_id, actions, query_dict):
    body = {"instanceActions": [action(req, a) for a in actions]}
    if req.context.microversion.matches("2.58"):
        next_links = common.collection_links(
            req, conf, body["instanceActions"],
            "servers/%s/os-instance-actions" % server_id, id_key="request_id",
            query_dict=query_dict)
        if next_links:
            body["links"] = next_links
    return body
