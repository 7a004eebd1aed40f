"""The instance-action events functional tests read: what a workflow
recorded, through the API as an admin (os-instance-actions at 2.84,
which shows each event's host and details)."""

MICROVERSION = "2.84"


def action_events(admin_api, server_id, action, event=None, result=None):
    """The events of every ``action`` action of the server (newest action
    first), only those named ``event`` and/or with ``result`` when given."""
    status, body, _ = admin_api.request(
        "GET", "/servers/%s/os-instance-actions" % server_id,
        microversion=MICROVERSION)
    assert status == 200, body
    events = []
    for one in body["instanceActions"]:
        if one["action"] != action:
            continue
        status, detail, _ = admin_api.request(
            "GET", "/servers/%s/os-instance-actions/%s"
            % (server_id, one["request_id"]), microversion=MICROVERSION)
        assert status == 200, detail
        events += [e for e in detail["instanceAction"]["events"]
                   if (event is None or e["event"] == event)
                   and (result is None or e["result"] == result)]
    return events
