"""os-services bodies.

Each service: binary, host, zone (a compute's host zone: its aggregate's,
or "nova"; "internal" for the other daemons), status (enabled|disabled),
state (up|down), updated_at, disabled_reason, id (the database id; the uuid from 2.53), forced_down
(2.11+).
"""
from volattach.api.views import field
from volattach.api.views import primitive_time


def service(req, svc, is_up, zone):
    """``zone``: the service's availability zone (the facade's
    ``service_zones``)."""
    mv = req.context.microversion
    body = {
        "id": svc.uuid if mv.matches("2.53") else svc.id,
        "binary": svc.binary,
        "host": svc.host,
        "zone": zone,
        "status": "disabled" if field(svc, "disabled") else "enabled",
        "state": "up" if is_up else "down",
        "updated_at": primitive_time(field(svc, "last_seen_up")
                                     or field(svc, "updated_at")
                                     or field(svc, "created_at")),
        "disabled_reason": field(svc, "disabled_reason"),
    }
    if mv.matches("2.11"):
        body["forced_down"] = bool(field(svc, "forced_down", False))
    return body


def index(req, services, zones):
    """``services``: [(service, is up)]; ``zones``: [(service, zone)] in
    the same order."""
    return {"services": [service(req, svc, is_up, zone)
                         for (svc, is_up), (_, zone) in zip(services, zones)]}
