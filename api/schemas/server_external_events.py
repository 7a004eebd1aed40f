"""Schemas of POST /os-server-external-events (Nova's): the event names
each microversion accepts, from the network events of the first one to
volume-reimaged at 2.93.  A missing ``tag`` where the event needs one is
not a schema error: that event alone fails with code 400 (as in Nova)."""
import copy

from volattach.objects import external_event as event_obj

create_v21 = {
    "type": "object",
    "properties": {
        "events": {
            "type": "array", "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string",
                             "enum": list(event_obj.NETWORK_EVENTS)},
                    "server_uuid": {"type": "string", "format": "uuid"},
                    "status": {"type": "string",
                               "enum": list(event_obj.EVENT_STATUSES)},
                    "tag": {"type": "string", "maxLength": 255},
                },
                "required": ["name", "server_uuid"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["events"],
    "additionalProperties": False,
}


def _with(schema, name):
    new = copy.deepcopy(schema)
    new["properties"]["events"]["items"]["properties"]["name"][
        "enum"].append(name)
    return new


create_v251 = _with(create_v21, event_obj.VOLUME_EXTENDED)
create_v276 = _with(create_v251, event_obj.POWER_UPDATE)
create_v282 = _with(create_v276, event_obj.ACCELERATOR_REQUEST_BOUND)
create_v293 = _with(create_v282, event_obj.VOLUME_REIMAGED)

CREATE = (("2.1", create_v21), ("2.51", create_v251), ("2.76", create_v276),
          ("2.82", create_v282), ("2.93", create_v293))
