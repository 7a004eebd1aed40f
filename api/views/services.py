"""os-services bodies.

Each service: binary, host, zone ("nova" for computes, "internal" for the
other daemons), status (enabled|disabled), state (up|down), updated_at,
disabled_reason, id (the database id; the uuid from 2.53), forced_down
(2.11+).
"""
from volattach.api.views import field
from volattach.api.views import primitive_time

COMPUTE_ZONE = "nova"
INTERNAL_ZONE = "internal"


def zone(service):
    return COMPUTE_ZONE if service.binary.endswith("-compute") else INTERNAL_ZONE


def service(req, svc, is_up):
    mv = req.context.microversion
    body = {
        "id": svc.uuid if mv.matches("2.53") else svc.id,
        "binary": svc.binary,
        "host": svc.host,
        "zone": zone(svc),
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


def index(req, services):
    return {"services": [service(req, svc, is_up) for svc, is_up in services]}
