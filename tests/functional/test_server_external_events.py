"""POST /os-server-external-events (Nova 34's contract) on the all-in-one:
the per-event codes and the whole answer's (200, 207; 400 and 403 for the
request), the microversions of the event names, a compute too old for
events (422), the instance actions, and volume-extended growing the disk
of every server a (multiattach) volume is attached to, a read-only one
refusing with its reason."""
import uuid

import pytest

from tests.functional import instance_actions
from tests.functional.test_attach_detach import _new_server, _new_volume
from tests.functional.test_suspend_reboot import compute_at_version
from tests.integration import client as clients
from volattach import context
from volattach import objects

SERVICE_TOKEN = "cinder:service:service"
MISSING = "6f1e4a0e-0000-4000-8000-000000000404"
GiB = 1024 ** 3


@pytest.fixture
def service_api(deployment):
    return clients.ComputeClient(deployment.api_url, SERVICE_TOKEN)


def _post(client, events, microversion="2.93"):
    return client.request("POST", "/os-server-external-events",
                          {"events": events}, microversion=microversion)


def _guest(deployment, server_id):
    host = objects.Instance.get_by_uuid(context.get_admin_context(),
                                        server_id).host
    return deployment.computes[host].driver.guests[server_id]


def _device(api, server_id, volume_id):
    for a in api.list_volume_attachments(server_id)[1]["volumeAttachments"]:
        if a["volumeId"] == volume_id:
            return a["device"]
    raise AssertionError("%s not attached to %s" % (volume_id, server_id))


def _wait_event(admin_api, server_id, action, event):
    """The instance action's event once the compute finished it (the
    events are cast: the answer comes before the work)."""
    found = clients._wait(
        lambda: [e for e in instance_actions.action_events(
            admin_api, server_id, action, event) if e["finish_time"]],
        bool, "%s/%s of %s" % (action, event, server_id), 30, 0.05)
    return found[0]


def _extend(volumes, volume_id, new_size):
    status, body, _ = volumes.request(
        "POST", volumes._path("/volumes/%s/action" % volume_id),
        {"os-extend": {"new_size": new_size}})
    assert status == 202, body


def test_a_network_event_as_tempest_posts_it(service_api, api):
    """tempest's test_create_server_external_events."""
    server_id = _new_server(api)
    status, body, _ = _post(service_api, [{"name": "network-changed",
                                           "server_uuid": server_id}],
                            microversion=None)
    assert status == 200, body
    assert body == {"events": [{"name": "network-changed",
                                "server_uuid": server_id,
                                "status": "completed", "code": 200}]}


def test_a_member_is_refused_and_an_admin_allowed(api, admin_api):
    server_id = _new_server(api)
    events = [{"name": "network-vif-plugged", "server_uuid": server_id,
               "tag": "port"}]
    status, body, _ = _post(api, events)
    assert status == 403, body
    assert body["forbidden"]["message"] == (
        "Policy doesn't allow os_compute_api:os-server-external-events:"
        "create to be performed.")
    assert _post(admin_api, events)[0] == 200


def test_each_event_has_its_code_and_the_answer_207(service_api, api):
    server_id = _new_server(api)
    events = [
        {"name": "network-changed", "server_uuid": server_id,
         "status": "in-progress"},
        {"name": "network-vif-deleted", "server_uuid": MISSING, "tag": "p"},
        {"name": "volume-extended", "server_uuid": server_id},   # no tag
        {"name": "power-update", "server_uuid": server_id},      # no tag
    ]
    status, body, _ = _post(service_api, events)
    assert status == 207, body
    assert [(e["code"], e["status"]) for e in body["events"]] == [
        (200, "completed"), (404, "failed"), (400, "failed"),
        (400, "failed")]
    assert [e["name"] for e in body["events"]] == [e["name"] for e in events]
    assert body["events"][1]["tag"] == "p"
    # none found: 207 too (Nova since bug 1855752, never 404)
    status, body, _ = _post(service_api, [
        {"name": "network-changed", "server_uuid": MISSING}])
    assert status == 207, body
    assert body["events"][0]["code"] == 404


@pytest.mark.parametrize("event,microversion,message", [
    ({"name": "bogus"}, "2.93", "Invalid input for field/attribute name."),
    ({"name": "network-changed", "status": "done"}, "2.93",
     "Invalid input for field/attribute status."),
    ({"name": "volume-extended", "tag": "v"}, "2.50",
     "Invalid input for field/attribute name."),
    ({"name": "power-update", "tag": "POWER_ON"}, "2.75",
     "Invalid input for field/attribute name."),
    ({"name": "volume-reimaged", "tag": "v"}, "2.92",
     "Invalid input for field/attribute name."),
    ({"name": "network-changed", "server_uuid": "not-a-uuid"}, "2.93",
     "Invalid input for field/attribute server_uuid."),
    ({"name": "network-changed", "extra": 1}, "2.93",
     "Additional properties are not allowed"),
    ({"name": "network-changed", "tag": "x" * 256}, "2.93",
     "Invalid input for field/attribute tag."),
])
def test_bad_events_are_400_and_nothing_is_done(service_api, admin_api, api,
                                               event, microversion, message):
    server_id = _new_server(api)
    event = dict({"server_uuid": server_id}, **event)
    good = {"name": "volume-extended", "server_uuid": server_id,
            "tag": str(uuid.uuid4())}
    status, body, _ = _post(service_api, [good, event], microversion)
    assert status == 400, body
    assert message in body["badRequest"]["message"]
    assert instance_actions.action_events(admin_api, server_id,
                                          "extend_volume") == []
    for empty in ({"events": []}, {}, {"events": {}}):
        status, body, _ = service_api.request(
            "POST", "/os-server-external-events", empty)
        assert status == 400, body


def test_volume_extended_grows_the_disk_and_records_the_action(
        service_api, admin_api, api, volumes, deployment):
    server_id = _new_server(api)
    volume_id = _new_volume(volumes)
    _extend(volumes, volume_id, 3)          # the backend grew: 3 GiB
    assert api.attach_volume(server_id, volume_id,
                             microversion="2.20")[0] == 200
    volumes.wait_for_volume_status(volume_id, "in-use")
    status, body, _ = _post(service_api, [{
        "name": "volume-extended", "server_uuid": server_id,
        "tag": volume_id}], microversion="2.51")
    assert status == 200, body
    event = _wait_event(admin_api, server_id, "extend_volume",
                        "compute_extend_volume")
    assert event["result"] == "Success", event
    device = _device(api, server_id, volume_id)
    assert _guest(deployment, server_id)["sizes"][device] == 3 * GiB
    bdm = objects.BlockDeviceMapping.get_by_volume_and_instance(
        context.get_admin_context(), volume_id, server_id)
    assert bdm.volume_size == 3


def test_every_server_of_a_multiattach_volume_gets_it(
        service_api, admin_api, api, volumes, multiattach_type, deployment):
    """One request, one event per server (as Cinder posts them): the
    read-write guests grow, the read-only one fails with QEMU's reason."""
    servers = [_new_server(api) for _ in range(3)]
    volume_id = _new_volume(volumes, volume_type=multiattach_type)
    _extend(volumes, volume_id, 2)
    for server_id, mode in zip(servers, ("rw", "rw", "ro")):
        status, body, _ = api.attach_volume(server_id, volume_id,
                                            microversion="2.105",
                                            attach_mode=mode)
        assert status == 202, body
    clients._wait(lambda: len(volumes.list_attachments(
        volume_id=volume_id)[1]["attachments"]), lambda n: n == 3,
        "three attachments", 30, 0.05)
    volumes.wait_for_volume_status(volume_id, "in-use")
    for server_id in servers:
        clients._wait(lambda: _device_or_none(api, server_id, volume_id),
                      bool, "attach", 30, 0.05)
    status, body, _ = _post(service_api, [
        {"name": "volume-extended", "server_uuid": s, "tag": volume_id}
        for s in servers])
    assert status == 200, body
    assert [e["code"] for e in body["events"]] == [200, 200, 200]
    results = [_wait_event(admin_api, s, "extend_volume",
                           "compute_extend_volume") for s in servers]
    assert [r["result"] for r in results] == ["Success", "Success", "Error"]
    assert "attached read-only" in results[2]["details"]
    for server_id in servers[:2]:
        device = _device(api, server_id, volume_id)
        assert _guest(deployment, server_id)["sizes"][device] == 2 * GiB
    assert "sizes" not in _guest(deployment, servers[2])


def _device_or_none(api, server_id, volume_id):
    try:
        return _device(api, server_id, volume_id)
    except AssertionError:
        return None


def test_a_volume_the_server_does_not_have_is_a_no_op(
        service_api, admin_api, api, volumes):
    server_id = _new_server(api)
    volume_id = _new_volume(volumes)
    assert _post(service_api, [{"name": "volume-extended",
                                "server_uuid": server_id,
                                "tag": volume_id}])[0] == 200
    event = _wait_event(admin_api, server_id, "extend_volume",
                        "compute_extend_volume")
    assert event["result"] == "Success"       # Nova: logged, nothing to do
    # a volume the volume service does not know: the action says why
    assert _post(service_api, [{"name": "volume-extended",
                                "server_uuid": server_id,
                                "tag": MISSING}])[0] == 200
    failed = instance_actions.action_events(
        admin_api, server_id, "extend_volume", "compute_extend_volume",
        result="Error")
    assert len(failed) == 1 and MISSING in failed[0]["details"], failed


def test_power_update_as_nova_treats_a_server_not_on_ironic(
        service_api, admin_api, api):
    server_id = _new_server(api)
    # one request each: a compute records its event under the newest
    # action of the request (as Nova's wrap_instance_event does)
    for tag in ("POWER_OFF", "POWER_ON", "SIDEWAYS"):   # ON: active, no-op
        status, body, _ = _post(service_api, [
            {"name": "power-update", "server_uuid": server_id, "tag": tag}],
            microversion="2.76")
        assert status == 200, body
    stop = _wait_event(admin_api, server_id, "stop", "compute_power_update")
    assert stop["result"] == "Error"
    assert "bare-metal" in stop["details"]
    start = _wait_event(admin_api, server_id, "start",
                        "compute_power_update")
    assert start["result"] == "Success"
    server = api.show_server(server_id)[1]["server"]
    assert (server["status"], server["OS-EXT-STS:task_state"]) == (
        "ACTIVE", None)
    actions = api.request("GET", "/servers/%s/os-instance-actions"
                          % server_id)[1]["instanceActions"]
    assert sorted(a["action"] for a in actions) == ["create", "start", "stop"]


def test_a_compute_too_old_gets_422(service_api, admin_api, api, volumes):
    """The old compute's events are 422; while it runs, the compute RPC is
    capped below 1.11 ([upgrade_levels] compute = auto: the oldest
    compute's), so the other computes' are too."""
    from volattach.api.compute import external_events
    old, new = _new_server(api), _new_server(api)
    volume_id = _new_volume(volumes)
    rpcapi = external_events.shared_compute_rpcapi()
    try:
        with compute_at_version(old, 12):
            rpcapi._cap = None                 # read the versions now
            status, body, _ = _post(service_api, [
                {"name": "volume-extended", "server_uuid": s,
                 "tag": volume_id} for s in (old, new)])
    finally:
        rpcapi._cap = None      # not the 1.10 cached for _CAP_TTL seconds
    assert status == 207, body
    assert [(e["code"], e["status"]) for e in body["events"]] == [
        (422, "failed"), (422, "failed")]
    for server_id in (old, new):
        assert instance_actions.action_events(admin_api, server_id,
                                              "extend_volume") == []
    # every compute upgraded: accepted
    assert _post(service_api, [{"name": "volume-extended",
                                "server_uuid": old, "tag": volume_id}])[
        0] == 200


def _host(server_id):
    return objects.Instance.get_by_uuid(context.get_admin_context(),
                                        server_id).host


def test_a_thousand_events_are_each_answered(service_api, api):
    servers = [_new_server(api) for _ in range(2)]
    events = [{"name": "network-vif-plugged", "server_uuid": servers[i % 2],
               "tag": "port-%d" % i} for i in range(998)]
    events += [{"name": "network-changed", "server_uuid": MISSING},
               {"name": "volume-extended", "server_uuid": servers[0]}]
    status, body, _ = _post(service_api, events)
    assert status == 207, body
    codes = [e["code"] for e in body["events"]]
    assert codes == [200] * 998 + [404, 400]
    assert [e["tag"] for e in body["events"][:998]] == [
        "port-%d" % i for i in range(998)]


# -- volume-reimaged: the 2.93 rebuild waits for it ---------------------------

def test_a_rebuild_waits_for_volume_reimaged_and_errors_without_it(
        api, admin_api, volumes, deployment):
    """The volume service posts volume-reimaged after os-reimage (the
    success path is test_tempest_gaps_servers'); when it cannot reach the
    compute API, the rebuild waits reimage_timeout_per_gb and the server
    goes to ERROR, its root volume still reserved for it."""
    from tests.functional.test_tempest_gaps_servers import (
        _rebuild, _volume_backed_server)
    from volattach.conf import CONF
    server_id, root, _ = _volume_backed_server(api, volumes, deployment,
                                               data_volume=False)
    CONF.set_override("compute_endpoint", "http://127.0.0.1:9/v2.1",
                      group="volume")
    CONF.set_override("reimage_timeout_per_gb", 1)
    try:
        assert _rebuild(api, server_id, "2.93")[0] == 202
        api.wait_for_server_status(server_id, "ERROR")
    finally:
        CONF.clear_override("compute_endpoint", group="volume")
        CONF.clear_override("reimage_timeout_per_gb")
    failed = instance_actions.action_events(
        admin_api, server_id, "rebuild", "compute_rebuild_instance",
        result="Error")
    assert failed and "volume-reimaged" in failed[0]["details"], failed
    assert volumes.show_volume(root)[1]["volume"]["status"] == "reserved"
    # an event that comes late wakes nothing and harms nothing
    service = clients.ComputeClient(deployment.api_url, SERVICE_TOKEN)
    status, body, _ = _post(service, [{"name": "volume-reimaged",
                                       "server_uuid": server_id,
                                       "tag": root}])
    assert status == 200, body
    assert api.delete_server(server_id)[0] == 204
    api.wait_for_server_deleted(server_id, timeout=30)
    volumes.wait_for_volume_status(root, "available")


def test_a_disk_not_plugged_any_more_is_left_alone(
        service_api, admin_api, api, volumes, deployment):
    """volume-extended racing a detach that already unplugged the disk
    (its record still there): the size is recorded, nothing is resized,
    and the event succeeds; the detach then ends as usual."""
    server_id = _new_server(api)
    volume_id = _new_volume(volumes)
    assert api.attach_volume(server_id, volume_id,
                             microversion="2.20")[0] == 200
    volumes.wait_for_volume_status(volume_id, "in-use")
    device = _device(api, server_id, volume_id)
    guest = _guest(deployment, server_id)
    unplugged = guest["devices"].pop(device)       # the detach's unplug
    assert _post(service_api, [{"name": "volume-extended",
                                "server_uuid": server_id,
                                "tag": volume_id}])[0] == 200
    event = _wait_event(admin_api, server_id, "extend_volume",
                        "compute_extend_volume")
    assert event["result"] == "Success", event
    assert "sizes" not in guest
    guest["devices"][device] = unplugged
    assert api.detach_volume(server_id, volume_id)[0] == 202
    volumes.wait_for_volume_status(volume_id, "available")


def test_an_event_racing_the_delete_of_its_server(service_api, api):
    """No 500 and no half-done work: a server being deleted is answered
    200 (its compute finds nothing to do) or, once gone, 404."""
    server_id = _new_server(api)
    assert api.delete_server(server_id)[0] == 204
    status, body, _ = _post(service_api, [{"name": "network-changed",
                                           "server_uuid": server_id}])
    assert (status, body["events"][0]["code"]) in ((200, 200), (207, 404))
    api.wait_for_server_deleted(server_id, timeout=30)
    status, body, _ = _post(service_api, [{"name": "network-changed",
                                           "server_uuid": server_id}])
    assert (status, body["events"][0]["code"]) == (207, 404)
