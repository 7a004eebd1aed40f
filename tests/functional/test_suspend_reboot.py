"""suspend, resume and reboot (compute RPC 1.6): the states Nova allows,
409 elsewhere and on a compute too old for them, the instance actions, and
a delete of a suspended server."""
import contextlib

from tests.functional.test_attach_detach import _new_server, _new_volume
from volattach import context
from volattach import objects


def _action(api, server_id, name, value=None):
    return api.request("POST", "/servers/%s/action" % server_id,
                       {name: value})


def _status(api, server_id, status, timeout=30):
    return api.wait_for_server_status(server_id, status, timeout=timeout)


def _actions(api, server_id):
    status, body, _ = api.request(
        "GET", "/servers/%s/os-instance-actions" % server_id)
    assert status == 200, body
    return [a["action"] for a in body["instanceActions"]]


def test_suspend_resume_and_the_states_they_refuse(api, volumes):
    server_id = _new_server(api, name="sleeper")
    volume_id = _new_volume(volumes)
    assert api.attach_volume(server_id, volume_id,
                             microversion="2.20")[0] == 200
    status, body, _ = _action(api, server_id, "resume")
    assert status == 409, body
    assert "vm_state active" in body["conflictingRequest"]["message"]
    status, body, _ = _action(api, server_id, "suspend")
    assert (status, body) == (202, None)
    server = _status(api, server_id, "SUSPENDED")
    assert server["OS-EXT-STS:power_state"] == 7
    assert server["OS-EXT-STS:task_state"] is None
    status, body, _ = _action(api, server_id, "suspend")
    assert status == 409, body
    status, body, _ = _action(api, server_id, "reboot", {"type": "SOFT"})
    assert status == 409, body          # soft reboot: active only
    status, body, _ = _action(api, server_id, "resume")
    assert (status, body) == (202, None)
    server = _status(api, server_id, "ACTIVE")
    assert server["OS-EXT-STS:power_state"] == 1
    assert _actions(api, server_id)[:2] == ["resume", "suspend"]
    volumes.wait_for_volume_status(volume_id, "in-use")


def test_reboot_soft_and_hard(api):
    server_id = _new_server(api, name="rebooted")
    status, body, _ = _action(api, server_id, "reboot", {"type": "soft"})
    assert (status, body) == (202, None)
    _status(api, server_id, "ACTIVE")
    assert _action(api, server_id, "os-stop")[0] == 202
    _status(api, server_id, "SHUTOFF")
    # a hard reboot starts a stopped server, as in Nova
    status, body, _ = _action(api, server_id, "reboot", {"type": "HARD"})
    assert (status, body) == (202, None)
    _status(api, server_id, "ACTIVE")
    assert _actions(api, server_id)[:3] == ["reboot", "stop", "reboot"]
    for bad in (None, {}, {"type": "WARM"}, {"type": "HARD", "x": 1}):
        status, body, _ = _action(api, server_id, "reboot", bad)
        assert status == 400, (bad, body)


def test_delete_of_a_suspended_server(api, volumes):
    server_id = _new_server(api, name="deleted-asleep")
    volume_id = _new_volume(volumes)
    assert api.attach_volume(server_id, volume_id,
                             microversion="2.20")[0] == 200
    assert _action(api, server_id, "suspend")[0] == 202
    _status(api, server_id, "SUSPENDED")
    assert api.delete_server(server_id)[0] == 204
    api.wait_for_server_deleted(server_id, timeout=30)
    volumes.wait_for_volume_status(volume_id, "available")


@contextlib.contextmanager
def compute_at_version(server_id, version):
    """The server's compute reports service version ``version`` meanwhile
    (a compute of an older release, as the API sees it)."""
    ctx = context.get_admin_context()
    host = objects.Instance.get_by_uuid(ctx, server_id).host
    service = objects.Service.get_by_host_and_binary(ctx, host,
                                                     "volattach-compute")
    actual = service.version
    service.version = version
    service.save()
    try:
        yield
    finally:
        service.version = actual
        service.save()


def test_a_compute_too_old_refuses_with_409_and_changes_nothing(api):
    server_id = _new_server(api, name="old-compute")
    with compute_at_version(server_id, 6):
        before = _actions(api, server_id)
        for name, value in (("suspend", None), ("reboot", {"type": "HARD"})):
            status, body, _ = _action(api, server_id, name, value)
            assert status == 409, (name, body)
            assert "too old" in body["conflictingRequest"]["message"]
        server = api.show_server(server_id)[1]["server"]
        assert server["OS-EXT-STS:task_state"] is None
        assert _actions(api, server_id) == before
