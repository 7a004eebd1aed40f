"""/os-services (admin): list the daemons and whether they are up; update
a compute (enable, disable with a reason, force down; by uuid from 2.53,
by host and binary in the body before: ``PUT /os-services/disable``...);
delete a service.

The ``binary`` filter also takes Nova's names of the daemons
(``nova-compute``, ``nova-conductor``), which tempest's host pickers,
openstackclient's ``--service`` and hypervisor counts use: it then lists
the services registered under either name, so computes of every release
are found while they are rolled, shown under the name asked for.
"""
from volattach.api import common
from volattach.api import policy
from volattach.api import validation
from volattach.api.schemas import services as schemas
from volattach.api.views import services as view
from volattach import exception
from oslo_utils import strutils
from oslo_utils import uuidutils

POLICY = "os_compute_api:os-services:list"
RULE = "os_compute_api:os-services:%s"

# Not RPC services: their state is not reported, Nova leaves them out too.
API_BINARIES = ("volattach-api", "nova-osapi_compute", "nova-metadata")

# Nova's name of a daemon -> every name it may be registered under
BINARY_ALIASES = {
    "nova-compute": ("nova-compute", "volattach-compute"),
    "nova-conductor": ("nova-conductor", "volattach-conductor"),
}


class Services(common.Resource):

    def on_get(self, req, resp):
        ctx = req.context.ctx
        query = validation.validate_query(req.context.microversion,
                                          schemas.INDEX_QUERY, common.query(req))
        policy.authorize(ctx, POLICY)
        binary = common.last(query, "binary") or None
        binaries = BINARY_ALIASES.get(binary)
        services = self.compute.service_list(
            ctx, binary=None if binaries else binary,
            host=common.last(query, "host") or None)
        services = [(svc, up) for svc, up in services
                    if svc.binary not in API_BINARIES
                    and (not binaries or svc.binary in binaries)]
        zones = self.compute.service_zones([svc for svc, _ in services])
        body = view.index(req, services, zones)
        if binaries:
            # listed by Nova's name of the daemon: shown under that name
            # (tempest's and openstackclient's filters compare it)
            for shown in body["services"]:
                shown["binary"] = binary
        common.send(resp, body)

    def on_put_item(self, req, resp, service_id):
        ctx = req.context.ctx
        mv = req.context.microversion
        body = validation.validate_body(mv, schemas.UPDATE,
                                        common.read_body(req))
        if mv.matches("2.53"):
            if not uuidutils.is_uuid_like(service_id):
                raise exception.InvalidInput(
                    message="Invalid uuid %s" % service_id)
            policy.authorize(ctx, RULE % "update", {})
            service = self.compute.service_find(ctx, service_id, True)
            changes = _changes_v253(body)
            service = self.compute.service_update(ctx, service, changes)
            up = self.compute.service_is_up(service)
            zone = self.compute.service_zones([service])[0][1]
            common.send(resp, {"service": view.service(req, service, up,
                                                       zone)})
            return
        policy.authorize(ctx, RULE % "update", {})
        action = _ACTIONS_V211 if mv.matches("2.11") else _ACTIONS
        if service_id not in action:
            raise exception.NotFound(message="Unknown action")
        changes, answer = action[service_id](body)
        service = self.compute.service_find_compute(ctx, body["host"],
                                                    body["binary"])
        self.compute.service_update(ctx, service, changes)
        common.send(resp, {"service": dict(
            {"host": body["host"], "binary": body["binary"]}, **answer)})

    def on_delete_item(self, req, resp, service_id):
        ctx = req.context.ctx
        mv = req.context.microversion
        policy.authorize(ctx, RULE % "delete", {})
        by_uuid = mv.matches("2.53")
        if by_uuid and not uuidutils.is_uuid_like(service_id):
            raise exception.InvalidInput(message="Invalid uuid %s" % service_id)
        if not by_uuid and not service_id.lstrip("-").isdigit():
            raise exception.InvalidInput(
                message="Invalid input received: id must be an integer")
        service = self.compute.service_find(ctx, service_id, by_uuid)
        self.compute.service_delete(ctx, service)
        common.send(resp, None, status=204)


def _changes_v253(body):
    changes = {}
    if body.get("status") == "enabled":
        if body.get("disabled_reason"):
            raise exception.InvalidInput(
                message="Specifying 'disabled_reason' with status 'enabled' "
                        "is invalid.")
        changes.update(disabled=False, disabled_reason=None)
    elif body.get("status") == "disabled":
        changes.update(disabled=True,
                       disabled_reason=body.get("disabled_reason"))
    if "forced_down" in body:
        changes["forced_down"] = strutils.bool_from_string(
            body["forced_down"], strict=True)
    if not changes:
        raise exception.InvalidInput(
            message="No updates were requested. Fields 'status' or "
                    "'forced_down' should be specified.")
    return changes


def _enable(body):
    return ({"disabled": False, "disabled_reason": None},
            {"status": "enabled"})


def _disable(body):
    return ({"disabled": True, "disabled_reason": None},
            {"status": "disabled"})


def _disable_log_reason(body):
    reason = body.get("disabled_reason")
    if not reason:
        raise exception.InvalidInput(message="Missing disabled reason field")
    return ({"disabled": True, "disabled_reason": reason},
            {"status": "disabled", "disabled_reason": reason})


def _force_down(body):
    if "forced_down" not in body:
        raise exception.InvalidInput(message="Missing forced_down field")
    forced = strutils.bool_from_string(body["forced_down"])
    return {"forced_down": forced}, {"forced_down": forced}


_ACTIONS = {"enable": _enable, "disable": _disable,
            "disable-log-reason": _disable_log_reason}
_ACTIONS_V211 = dict(_ACTIONS, **{"force-down": _force_down})
