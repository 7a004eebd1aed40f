"""/os-availability-zone (anyone) and /os-availability-zone/detail
(admin): the zones of the services, Nova's way.

A zone is available when one of its services is enabled, not available
when all are disabled; the plain list leaves the internal zone (the
services that are not computes) out; the detail lists, for each
available zone, its hosts and their enabled services (up or not, enabled
or not, last update)."""
from volattach.api import common
from volattach.api import policy
from volattach.api import validation
from volattach.api.handlers import services as services_handler
from volattach.api.schemas import aggregates as query_schemas
from volattach import availability_zones as az
from volattach import servicegroup

RULE = "os_compute_api:os-availability-zone:%s"


def _zones(compute, ctx):
    services = [s for s, _up in compute.service_list(ctx.elevated())
                if s.binary not in services_handler.API_BINARIES]
    pairs = compute.service_zones(services)
    available = sorted({z for s, z in pairs if not s.disabled})
    unavailable = sorted({z for s, z in pairs if s.disabled} - set(available))
    return pairs, available, unavailable


def _entry(zone, available, hosts=None):
    return {"zoneName": zone, "zoneState": {"available": available},
            "hosts": hosts}


class AvailabilityZones(common.Resource):

    def on_get(self, req, resp):
        ctx = req.context.ctx
        mv = req.context.microversion
        validation.validate_query(mv, query_schemas.QUERY, common.query(req))
        policy.authorize(ctx, RULE % "list", {})
        _pairs, available, unavailable = _zones(self.compute, ctx)
        info = ([_entry(z, True) for z in available if z != az.INTERNAL_ZONE]
                + [_entry(z, False) for z in unavailable
                   if z != az.INTERNAL_ZONE])
        common.send(resp, {"availabilityZoneInfo": info})

    def on_get_detail(self, req, resp):
        ctx = req.context.ctx
        mv = req.context.microversion
        validation.validate_query(mv, query_schemas.QUERY, common.query(req))
        policy.authorize(ctx, RULE % "detail", {})
        pairs, available, unavailable = _zones(self.compute, ctx)
        hosts = {}
        for service, zone in pairs:
            if service.disabled:
                continue
            hosts.setdefault(zone, {}).setdefault(service.host, {})[
                service.binary] = {
                    "available": servicegroup.is_up(service),
                    "active": not service.disabled,
                    # the last heartbeat, as the services list shows it
                    "updated_at": common_time(service.last_seen_up
                                              or service.updated_at)}
        info = ([_entry(z, True, hosts.get(z, {})) for z in available]
                + [_entry(z, False) for z in unavailable])
        common.send(resp, {"availabilityZoneInfo": info})


def common_time(value):
    """A service's updated_at as Nova shows it here (naive ISO 8601)."""
    if value is None:
        return None
    return value.replace(tzinfo=None).isoformat()
