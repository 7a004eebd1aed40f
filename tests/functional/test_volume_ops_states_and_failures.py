"""Async attach, failures after the 202, a conductor too old, the server
action state machine, shelved servers and swap, in one process.

What the tempest-style scenarios cannot do over the integration suite's
fixed configuration is here: injected failures of the fake virt driver
(``[fake_driver] fail_operations``) and its latency, a compute API capped at
an old conductor (``[upgrade_levels] conductor``), shelved servers that stay
on their host (``[compute] shelved_offload_time = -1``), vm_states and
task_states that no API call reaches (resized, soft-delete, suspended,
error, a task in progress: written to the database as another service would
have), and a look inside the compute's virt driver.
"""
import contextlib
import time
import uuid

import pytest

from volattach import objects
from tests.integration import client as http_clients
from tests.tempest_style import clients
from tests.tempest_style import scenarios
from volattach import context
from volattach.conf import CONF

USER = clients.USER_TOKEN
ADMIN = clients.ADMIN_TOKEN


@pytest.fixture
def env(deployment):
    def guest_devices(server_id):
        host = _instance(server_id).host
        guest = deployment.computes[host].driver.guests.get(server_id) or {}
        return dict(guest.get("devices", {}))

    env = scenarios.Env(deployment.api_url, deployment.volume_url,
                        guest_devices=guest_devices)
    yield env
    env.cleanup()


@contextlib.contextmanager
def override(group, **values):
    for name, value in values.items():
        CONF.set_override(name, value, group=group)
    try:
        yield
    finally:
        for name in values:
            CONF.clear_override(name, group=group)


def _instance(server_id):
    return objects.Instance.get_by_uuid(context.get_admin_context(), server_id)


def _set_state(server_id, vm_state, task_state=None):
    """Put the server in a state as another service would have."""
    instance = _instance(server_id)
    instance.vm_state = vm_state
    instance.task_state = task_state
    instance.save()


def _bdms(server_id):
    return [b for b in objects.BlockDeviceMappingList.get_by_instance_uuid(
        context.get_admin_context(), server_id) if b.is_volume]


def _driver(deployment, server_id):
    return deployment.computes[_instance(server_id).host].driver


def _attach(env, server_id, volume_id, version="2.1", token=USER, **fields):
    code, body, headers = env.http(token).attach_volume(
        server_id, volume_id, microversion=version, **fields)
    return code, body, headers


def _action_of(env, server_id, request_id, version="2.101", token=ADMIN):
    code, body, _ = env.http(token).request(
        "GET", "/servers/%s/os-instance-actions/%s" % (server_id, request_id),
        microversion=version)
    assert code == 200, (code, body)
    return body["instanceAction"]


def _finished_action(env, server_id, request_id):
    # The GET reads the action, then its events: a view taken while the
    # failed event and the action's "Error" commit (one transaction) can
    # show the event finished and the action not yet; the next one agrees.
    return env.wait.until(
        lambda: _action_of(env, server_id, request_id),
        lambda a: a.get("events") and all(e["finish_time"] for e in a["events"])
        and (a.get("message") == "Error"
             or all(e.get("result") != "Error" for e in a["events"])),
        "action %s finished" % request_id)


def _action_names(env, server_id):
    code, body, _ = env.http(USER).request(
        "GET", "/servers/%s/os-instance-actions" % server_id)
    assert code == 200, (code, body)
    return [a["action"] for a in reversed(body["instanceActions"])]


def _listed(env, server_id, version="2.89"):
    code, body, _ = env.http(USER).list_volume_attachments(
        server_id, microversion=version)
    assert code == 200, (code, body)
    return {a["volumeId"]: a for a in body["volumeAttachments"]}


def _server_action(env, server_id, action, token=USER, value=None,
                   version="2.1"):
    code, body, _ = env.http(token).request(
        "POST", "/servers/%s/action" % server_id, {action: value},
        microversion=version)
    return code, body


def _wait_status(env, server_id, status):
    with clients.microversion("2.1"):
        return env.wait.server_status(env.client(), server_id, status)


def _assert_nothing_left(env, deployment, server_id, volume_id):
    """No BDM, no Cinder attachment, the volume available, nothing on the
    host or in the guest for it."""
    assert [b for b in _bdms(server_id) if b.volume_id == volume_id] == []
    assert env.cinder_attachments(volume_id) == []
    volume = env.show_volume(volume_id)
    assert (volume["status"], volume["attachments"]) == ("available", [])
    assert volume_id not in _listed(env, server_id, "2.1")
    driver = _driver(deployment, server_id)
    assert not [c for c in driver.connections.values()
                if c.get("volume_id") == volume_id]
    assert not [c for c in driver.guests[server_id]["devices"].values()
                if c.get("volume_id") == volume_id]


# -- async attach ------------------------------------------------------------------

def test_async_attach_answers_before_the_compute_reserves(env):
    """2.101 casts: with a compute whose reserve takes 1 s the 202 comes
    back while the volume is still available and nothing is listed yet;
    then the device shows up and the volume goes in-use.  2.100 calls: the
    answer carries the device and the volume is already attached."""
    server_id = env.server(name="slow-reserve")
    fast, slow = env.volume(), env.volume()
    with override("fake_driver", reserve_latency=1.0):
        code, body, _ = _attach(env, server_id, slow, "2.101")
        assert (code, body) == (202, None)
        assert env.show_volume(slow)["status"] == "available"
        assert slow not in _listed(env, server_id, "2.101")
        att = env.wait.attachment_listed(
            lambda: _listed(env, server_id, "2.101").values(), slow)
        env.wait.volume_status(env.volumes, slow, "in-use")
        assert att["device"].startswith("/dev/vd")

        code, body, _ = _attach(env, server_id, fast, "2.100")
        assert code == 200, body
        assert body["volumeAttachment"]["device"].startswith("/dev/vd")
        assert env.show_volume(fast)["status"] == "in-use"


@pytest.mark.parametrize("version,operation,status", [
    ("2.101", "reserve", 202), ("2.101", "attach", 202),
    ("2.101", "connect", 202), ("2.100", "attach", 500)])
def test_failed_attach_leaves_nothing_and_an_error_event(env, deployment,
                                                         version, operation,
                                                         status):
    """A failure of the workflow (after the 202 at 2.101; the answer at
    2.100) leaves no BDM, no Cinder attachment, the volume available,
    nothing on the host, and an instance action with a failed
    compute_attach_volume event: the owner sees it (no traceback) from
    2.51, an admin with the traceback."""
    server_id = env.server(name="fail-%s" % operation)
    volume_id = env.volume()
    with override("fake_driver", fail_operations=[operation]):
        code, body, headers = _attach(env, server_id, volume_id, version)
        assert code == status, body
        request_id = headers["x-openstack-request-id"]
        admin_view = _finished_action(env, server_id, request_id)
    assert admin_view["action"] == "attach_volume"
    assert admin_view["message"] == "Error"
    [event] = admin_view["events"]
    assert (event["event"], event["result"]) == ("compute_attach_volume",
                                                 "Error")
    assert "injected failure" in event["traceback"]
    user_view = _action_of(env, server_id, request_id, token=USER)
    assert [(e["event"], e["result"]) for e in user_view["events"]] == [
        ("compute_attach_volume", "Error")]
    assert "traceback" not in user_view["events"][0]

    _assert_nothing_left(env, deployment, server_id, volume_id)
    assert _listed(env, server_id, "2.89") == {}
    server = _wait_status(env, server_id, "ACTIVE")
    assert server["OS-EXT-STS:task_state"] is None
    # and the volume attaches fine once the compute is healthy
    code, body, _ = _attach(env, server_id, volume_id, "2.101")
    assert code == 202
    env.wait.volume_status(env.volumes, volume_id, "in-use")


@pytest.mark.parametrize("method", ["reserve_block_device_name",
                                    "attach_volume"])
@pytest.mark.parametrize("version,status", [("2.101", 202), ("2.100", 503)])
def test_a_compute_call_whose_answer_is_lost_leaves_nothing(
        env, deployment, monkeypatch, method, version, status):
    """The compute did its part (made the record; plugged the volume),
    then its answer was lost (what a RabbitMQ restart does to a call;
    injected here): the rollback finds the record by the uuid the
    conductor sent and destroys it, and unplugs what may have been plugged,
    so the volume is not left listed on the server while it is available,
    nor plugged in the guest; it attaches again at once."""
    from volattach.compute import manager as compute_manager
    from volattach import rpc
    real = getattr(compute_manager.ComputeManager, method)
    done = []

    def answer_lost(self, *args, **kwargs):
        done.append(real(self, *args, **kwargs))
        raise rpc.RPCTimeout(topic="compute", method=method)
    server_id = env.server(name="lost-%s-%s" % (method, version))
    volume_id = env.volume()
    monkeypatch.setattr(compute_manager.ComputeManager, method, answer_lost)
    code, body, headers = _attach(env, server_id, volume_id, version)
    assert code == status, body
    _finished_action(env, server_id, headers["x-openstack-request-id"])
    monkeypatch.undo()
    assert len(done) == 1
    _assert_nothing_left(env, deployment, server_id, volume_id)
    code, body, _ = _attach(env, server_id, volume_id, "2.101")
    assert code == 202
    env.wait.volume_status(env.volumes, volume_id, "in-use")


def test_a_detach_whose_answer_is_lost_still_finishes(env, deployment,
                                                      monkeypatch):
    """The compute unplugged, then its answer was lost (injected once): the
    conductor asks again, the second detach is a no-op that answers, and
    the detach finishes: not rolled back to in-use with the disk gone from
    the guest."""
    from volattach.compute import manager as compute_manager
    from volattach import rpc
    real = compute_manager.ComputeManager.detach_volume
    calls = []

    def first_answer_lost(self, *args, **kwargs):
        real(self, *args, **kwargs)
        calls.append(1)
        if len(calls) == 1:
            raise rpc.RPCTimeout(topic="compute", method="detach_volume")
    server_id = env.server(name="lost-detach")
    volume_id = env.volume()
    code, body, _ = _attach(env, server_id, volume_id, "2.101")
    assert code == 202, body
    env.wait.volume_status(env.volumes, volume_id, "in-use")
    monkeypatch.setattr(compute_manager.ComputeManager, "detach_volume",
                        first_answer_lost)
    code, body, headers = env.http(USER).detach_volume(
        server_id, volume_id, microversion="2.101")
    assert code == 202, body
    action = _finished_action(env, server_id, headers["x-openstack-request-id"])
    monkeypatch.undo()
    assert len(calls) == 2
    assert [e["result"] for e in action["events"]] == ["Success"]
    env.wait.volume_status(env.volumes, volume_id, "available")
    _assert_nothing_left(env, deployment, server_id, volume_id)


# -- a conductor too old -----------------------------------------------------------

@contextlib.contextmanager
def _api_capped_at(conductor_version):
    """A second compute API in this process whose conductor task client is
    capped at ``conductor_version`` (``[upgrade_levels] conductor``)."""
    from volattach.api import wsgi as api_wsgi
    from tests import utils
    from volattach import embedded_server
    with override("upgrade_levels", conductor=conductor_version):
        app = api_wsgi.make_app(CONF)
    port = utils.free_port()
    server = embedded_server.serve_in_thread(app, "127.0.0.1", port,
                                             name="api-capped")
    try:
        yield "http://127.0.0.1:%d" % port
    finally:
        server.shutdown()


def test_conductor_too_old_is_503_and_leaves_nothing(env, deployment):
    """Capped at 1.0 (before attach_volume) the API answers attach with 503
    at 2.100 and 2.101 and records nothing; detach (1.0) still works.
    Capped at 1.1 (before the server actions and swap), attach works but
    os-stop and swap are 503 with no task_state left behind, no action
    recorded and both volumes as they were."""
    server_id = env.server(name="old-conductor")
    first, second = env.volume(), env.volume()
    with _api_capped_at("1.0") as url:
        old = http_clients.ComputeClient(url, USER, microversion=None)
        for version in ("2.100", "2.101"):
            code, body, _ = old.attach_volume(server_id, first,
                                              microversion=version)
            assert code == 503, (version, code, body)
            assert body["serviceUnavailable"]["code"] == 503
        assert "attach_volume" not in _action_names(env, server_id)
        _assert_nothing_left(env, deployment, server_id, first)

        code, body, _ = _attach(env, server_id, first, "2.1")
        assert code == 200, body
        code, body, _ = old.detach_volume(server_id, first)
        assert code == 202, body
        env.wait.volume_status(env.volumes, first, "available")
        old.close()

    with _api_capped_at("1.1") as url:
        old = http_clients.ComputeClient(url, USER, microversion=None)
        old_admin = http_clients.ComputeClient(url, ADMIN, microversion=None)
        code, body, _ = old.attach_volume(server_id, first, microversion="2.101")
        assert code == 202, body
        env.wait.volume_status(env.volumes, first, "in-use")
        before = _action_names(env, server_id)

        code, body, _ = old.request("POST", "/servers/%s/action" % server_id,
                                    {"os-stop": None})
        assert code == 503, body
        env.admin_volumes.begin_migration(first)
        code, body, _ = old_admin.request(
            "PUT", "/servers/%s/os-volume_attachments/%s" % (server_id, first),
            {"volumeAttachment": {"volumeId": second}})
        assert code == 503, body
        env.admin_volumes.begin_migration(first, "none")
        old.close()
        old_admin.close()
    assert _action_names(env, server_id) == before
    server = _wait_status(env, server_id, "ACTIVE")
    assert server["OS-EXT-STS:task_state"] is None
    assert env.show_volume(first)["status"] == "in-use"
    assert env.show_volume(second)["status"] == "available"
    assert env.cinder_attachments(second) == []


# -- the state machine -------------------------------------------------------------

VM_STATES = ("active", "building", "stopped", "paused", "suspended", "resized",
             "soft-delete", "error", "shelved", "shelved_offloaded")
# Nova's allowed vm_states (task_state None) of each operation
ALLOWED = {
    "os-stop": {"active", "error"},
    "os-start": {"stopped"},
    "pause": {"active"},
    "unpause": {"paused"},
    "shelve": {"active", "stopped", "paused", "suspended"},
    "shelveOffload": {"shelved"},
    "unshelve": {"shelved", "shelved_offloaded"},
    "attach": {"active", "paused", "stopped", "resized", "soft-delete",
               "shelved", "shelved_offloaded"},
    "detach": {"active", "paused", "stopped", "resized", "soft-delete",
               "shelved", "shelved_offloaded"},
    "swap": {"active", "paused", "resized", "shelved", "shelved_offloaded"},
}
TASK_STATES = ("powering-off", "powering-on", "pausing", "shelving",
               "unshelving", "spawning")


def _try(env, server_id, operation, attached, spare, version="2.20"):
    """Run ``operation``; (status, body)."""
    http = env.http(ADMIN if operation in ("shelveOffload", "swap") else USER)
    if operation == "attach":
        code, body, _ = http.attach_volume(server_id, spare, microversion=version)
    elif operation == "detach":
        code, body, _ = http.detach_volume(server_id, attached,
                                           microversion=version)
    elif operation == "swap":
        # the compute API swaps only during a volume migration (OSSN-0094)
        env.admin_volumes.begin_migration(attached)
        code, body, _ = http.request(
            "PUT", "/servers/%s/os-volume_attachments/%s" % (server_id, attached),
            {"volumeAttachment": {"volumeId": spare}}, microversion=version)
        if code != 202:
            env.admin_volumes.begin_migration(attached, "none")
    else:
        code, body, _ = http.request("POST", "/servers/%s/action" % server_id,
                                     {operation: None}, microversion=version)
    return code, body


def test_every_operation_in_every_state_proceeds_or_409(env, deployment):
    """Each server action and volume operation in each vm_state (task_state
    None) and in each task_state: 409 conflictingRequest where Nova refuses,
    leaving the server, its volumes and its actions as they were.  The
    volume operations Nova allows in the states only a database write
    reaches (resized, soft-delete) and in paused/stopped are run and undone
    here; the allowed server actions are run by the tempest scenario and
    the two tests below."""
    server_id = env.server(name="states")
    attached, spare = env.volume(), env.volume()
    code, body, _ = _attach(env, server_id, attached)
    assert code == 200, body
    actions_before = _action_names(env, server_id)
    refused = 0
    for vm_state in VM_STATES:
        _set_state(server_id, vm_state)
        for operation, allowed in ALLOWED.items():
            if vm_state in allowed:
                continue
            code, body = _try(env, server_id, operation, attached, spare)
            assert code == 409, (vm_state, operation, code, body)
            assert body["conflictingRequest"]["code"] == 409
            assert "vm_state %s" % vm_state in body["conflictingRequest"][
                "message"], body
            refused += 1
        instance = _instance(server_id)
        assert (instance.vm_state, instance.task_state) == (vm_state, None)
    for task_state in TASK_STATES:
        _set_state(server_id, "active", task_state)
        for operation in ALLOWED:
            code, body = _try(env, server_id, operation, attached, spare)
            assert code == 409, (task_state, operation, code, body)
            # the vm_state is checked first, as in Nova
            reason = ("task_state %s" % task_state if "active" in ALLOWED[operation]
                      else "vm_state active")
            assert reason in body["conflictingRequest"]["message"], body
            refused += 1
        assert _instance(server_id).task_state == task_state
    assert refused == (sum(len(VM_STATES) - len(a) for a in ALLOWED.values())
                       + len(ALLOWED) * len(TASK_STATES))
    _set_state(server_id, "active")
    assert _action_names(env, server_id) == actions_before
    assert env.show_volume(attached)["status"] == "in-use"
    assert env.show_volume(spare)["status"] == "available"
    assert env.cinder_attachments(spare) == []

    # volume operations where they are allowed but no API call leads
    for vm_state in ("resized", "soft-delete", "paused", "stopped"):
        _set_state(server_id, vm_state)
        code, body = _try(env, server_id, "attach", attached, spare, "2.1")
        assert code == 200, (vm_state, body)
        assert spare in _listed(env, server_id)
        code, body, _ = env.http().detach_volume(server_id, spare)
        assert code == 202, (vm_state, body)
        env.wait.volume_status(env.volumes, spare, "available")
        if vm_state in ALLOWED["swap"]:
            code, body = _try(env, server_id, "swap", attached, spare, "2.1")
            assert code == 202, (vm_state, body)
            env.wait.volume_status(env.volumes, spare, "in-use")
            env.wait.volume_status(env.volumes, attached, "available")
            attached, spare = spare, attached
    _set_state(server_id, "active")


def test_delete_interrupts_a_power_change_but_not_a_shelve(env):
    """Delete during os-stop (task_state powering-off) proceeds: 204, the
    server goes and its volume is released.  During shelve, and during the
    unshelve of an offloaded server, it is 409 and changes nothing (it
    would race the workflow that moves the volumes); once that is over the
    delete goes through.  Before this was fixed, delete answered 204 for a
    server in powering-off and did nothing."""
    stopping, shelving, offloaded = (env.server(name="d1"), env.server(name="d2"),
                                     env.server(name="d3"))
    v1, v2, v3 = env.volume(), env.volume(), env.volume()
    for server_id, volume_id in ((stopping, v1), (shelving, v2)):
        assert _attach(env, server_id, volume_id)[0] == 200
    assert _server_action(env, offloaded, "shelve") == (202, None)
    _wait_status(env, offloaded, "SHELVED_OFFLOADED")
    assert _attach(env, offloaded, v3, "2.20")[0] == 200

    _set_state(stopping, "active", "powering-off")
    code, body, _ = env.http().delete_server(stopping)
    assert code == 204, body
    with clients.microversion("2.1"):
        env.wait.server_deleted(env.client(), stopping)
    env.wait.volume_status(env.volumes, v1, "available")
    assert env.cinder_attachments(v1) == []

    for server_id, vm_state, task_state, volume_id in (
            (shelving, "active", "shelving", v2),
            (offloaded, "shelved_offloaded", "unshelving", v3)):
        _set_state(server_id, vm_state, task_state)
        code, body, _ = env.http().delete_server(server_id)
        assert code == 409, body
        assert "task_state %s" % task_state in body["conflictingRequest"][
            "message"]
        assert _instance(server_id).task_state == task_state
        assert env.show_volume(volume_id)["status"] == "in-use"
        _set_state(server_id, vm_state)
        code, body, _ = env.http().delete_server(server_id)
        assert code == 204, body
        with clients.microversion("2.1"):
            env.wait.server_deleted(env.client(), server_id)
        env.wait.volume_status(env.volumes, volume_id, "available")
        assert env.cinder_attachments(volume_id) == []


def test_stop_from_error_and_shelve_from_suspended_proceed(env):
    """The two allowed server actions no API call leads to: os-stop of a
    server in ERROR (SHUTOFF) and shelve of a suspended one."""
    errored, suspended = env.server(name="err"), env.server(name="susp")
    _set_state(errored, "error")
    assert _server_action(env, errored, "os-stop") == (202, None)
    # (tempest's waiter gives up on ERROR, the state this stop starts from)
    env.wait.until(lambda: _instance(errored),
                    lambda i: (i.vm_state, i.task_state) == ("stopped", None),
                    "server %s stopped" % errored)
    _wait_status(env, errored, "SHUTOFF")
    _set_state(suspended, "suspended")
    assert _server_action(env, suspended, "shelve") == (202, None)
    _wait_status(env, suspended, "SHELVED_OFFLOADED")


def test_locked_server_refuses_its_owner_but_not_an_admin(env):
    """A locked server: every action and volume operation of its owner is
    409 (whatever the state allows); an admin's go through (attach, swap,
    detach, stop, start, shelve, unshelve).  The owner cannot unlock an
    admin's lock (403); the admin can."""
    server_id = env.server(name="locked")
    attached, spare = env.volume(), env.volume()
    assert _attach(env, server_id, attached)[0] == 200
    assert _server_action(env, server_id, "lock", token=ADMIN) == (202, None)
    for operation in ("os-stop", "pause", "shelve", "attach", "detach"):
        code, body = _try(env, server_id, operation, attached, spare)
        assert code == 409, (operation, body)
        assert "locked" in body["conflictingRequest"]["message"]
    code, body, _ = env.http().delete_server(server_id)
    assert code == 409, body
    assert _server_action(env, server_id, "unlock")[0] == 403

    admin = env.http(ADMIN)
    code, body, _ = admin.attach_volume(server_id, spare, microversion="2.20")
    assert code == 200, body
    env.wait.volume_status(env.volumes, spare, "in-use")
    code, body, _ = admin.detach_volume(server_id, spare)
    assert code == 202, body
    env.wait.volume_status(env.volumes, spare, "available")
    code, body = _try(env, server_id, "swap", attached, spare)
    assert code == 202, body
    env.wait.volume_status(env.volumes, spare, "in-use")
    for action, status in (("os-stop", "SHUTOFF"), ("os-start", "ACTIVE"),
                           ("shelve", "SHELVED_OFFLOADED"),
                           ("unshelve", "ACTIVE")):
        assert _server_action(env, server_id, action, token=ADMIN) == (202, None)
        _wait_status(env, server_id, status)
        if status == "SHELVED_OFFLOADED":
            for operation in ("unshelve", "detach"):
                assert _try(env, server_id, operation, spare, attached)[0] \
                    == 409
    assert _server_action(env, server_id, "unlock", token=ADMIN) == (202, None)
    assert _server_action(env, server_id, "os-stop") == (202, None)
    _wait_status(env, server_id, "SHUTOFF")
    names = _action_names(env, server_id)
    assert names[:3] == ["create", "attach_volume", "lock"]
    assert names[-3:] == ["unshelve", "unlock", "stop"]


# -- shelved servers ---------------------------------------------------------------

def test_shelve_offloads_a_volume_backed_server_even_when_never_asked(env,
                                                                      deployment):
    """[compute] shelved_offload_time = -1: an image-backed server stays
    SHELVED on its host (guest powered off), a volume-backed one is
    offloaded at once (no host, no guest, its root attachment replaced by a
    connector-less one, the volume still in-use).  Its unshelve puts the
    root back at /dev/vda on the receiving compute."""
    root = env.volume(bootable=True)
    with clients.microversion(scenarios.CREATE_MV):
        body = env.client().create_server(
            name="bfv", flavorRef="1", networks="none",
            block_device_mapping_v2=[{"boot_index": 0, "uuid": root,
                                      "source_type": "volume",
                                      "destination_type": "volume"}])
    bfv = body["server"]["id"]
    env._servers.append(bfv)
    _wait_status(env, bfv, "ACTIVE")
    image_backed = env.server(name="ib")
    with override("compute", shelved_offload_time=-1):
        for server_id in (bfv, image_backed):
            assert _server_action(env, server_id, "shelve") == (202, None)
        _wait_status(env, bfv, "SHELVED_OFFLOADED")
        _wait_status(env, image_backed, "SHELVED")
    instance = _instance(image_backed)
    assert instance.host is not None
    assert _driver(deployment, image_backed).guests[image_backed]["power"] == \
        "shutdown"
    assert _instance(bfv).host is None
    assert all(bfv not in c.driver.guests for c in deployment.computes.values())
    volume = env.show_volume(root)
    assert volume["status"] == "in-use"
    assert [(a["host_name"], a["device"]) for a in volume["attachments"]] == [
        (None, None)]

    assert _server_action(env, bfv, "unshelve") == (202, None)
    _wait_status(env, bfv, "ACTIVE")
    assert _listed(env, bfv)[root]["device"] == "/dev/vda"
    assert "/dev/vda" in env.guest_devices(bfv)
    assert env.show_volume(root)["attachments"][0]["host_name"] == \
        _instance(bfv).host


def test_volume_ops_on_a_shelved_server_go_through_its_compute(env, deployment):
    """SHELVED (not offloaded): 2.19 refuses attach and detach (409); 2.20
    attaches through the compute (a device name, connected on the host,
    plugged into the powered-off guest), swaps and detaches the same way.
    shelveOffload then replaces the attachments with connector-less ones and
    unshelve connects them again on the receiving compute."""
    server_id = env.server(name="shelved")
    first, second = env.volume(), env.volume()
    with override("compute", shelved_offload_time=-1):
        assert _server_action(env, server_id, "shelve") == (202, None)
        _wait_status(env, server_id, "SHELVED")
    for operation in ("attach", "detach"):
        code, body = _try(env, server_id, operation, first, first, "2.19")
        assert code == 409, (operation, body)
    code, body, _ = _attach(env, server_id, first, "2.20")
    assert code == 200, body
    device = body["volumeAttachment"]["device"]
    assert device.startswith("/dev/vd")
    env.wait.volume_status(env.volumes, first, "in-use")
    assert env.guest_devices(server_id)[device]["volume_id"] == first
    assert env.show_volume(first)["attachments"][0]["host_name"] == \
        _instance(server_id).host

    code, body = _try(env, server_id, "swap", first, second)
    assert code == 202, body
    env.wait.volume_status(env.volumes, second, "in-use")
    env.wait.volume_status(env.volumes, first, "available")
    assert env.guest_devices(server_id)[device]["volume_id"] == second
    assert _listed(env, server_id)[second]["device"] == device

    code, body, _ = _attach(env, server_id, first, "2.20")
    assert code == 200, body
    code, body, _ = env.http().detach_volume(server_id, first,
                                             microversion="2.20")
    assert code == 202, body
    env.wait.volume_status(env.volumes, first, "available")
    assert set(_listed(env, server_id)) == {second}

    assert _server_action(env, server_id, "shelveOffload", token=ADMIN) == \
        (202, None)
    _wait_status(env, server_id, "SHELVED_OFFLOADED")
    assert env.show_volume(second)["attachments"][0]["host_name"] is None
    code, body = _try(env, server_id, "swap", second, first)
    assert code == 202, body
    env.wait.volume_status(env.volumes, first, "in-use")
    env.wait.volume_status(env.volumes, second, "available")
    assert _listed(env, server_id)[first]["device"] == device
    assert _server_action(env, server_id, "unshelve") == (202, None)
    _wait_status(env, server_id, "ACTIVE")
    assert env.guest_devices(server_id)[device]["volume_id"] == first
    assert env.show_volume(first)["attachments"][0]["device"] == device


# -- swap and detach failures ------------------------------------------------------

def test_swap_outside_a_volume_migration_is_409_and_changes_nothing(env, deployment):
    """OSSN-0094: an admin's swap of a volume the volume service is not
    migrating (empty migration_status) is 409, with no attachment created
    for the new volume, the old attachment untouched, no task state and no
    action recorded."""
    server_id = env.server(name="swap-refused")
    old, new = env.volume(), env.volume()
    assert _attach(env, server_id, old)[0] == 200
    env.wait.volume_status(env.volumes, old, "in-use")
    before = _listed(env, server_id)
    actions = _action_names(env, server_id)
    old_attachments = env.cinder_attachments(old)
    for version in ("2.1", "2.85", "2.105"):
        code, body, _ = env.http(ADMIN).request(
            "PUT", "/servers/%s/os-volume_attachments/%s" % (server_id, old),
            {"volumeAttachment": {"volumeId": new}}, microversion=version)
        assert code == 409, (version, code, body)
        assert body["conflictingRequest"]["code"] == 409
        assert "migrat" in body["conflictingRequest"]["message"]
    assert _listed(env, server_id) == before
    assert _action_names(env, server_id) == actions
    assert env.cinder_attachments(new) == []
    assert env.cinder_attachments(old) == old_attachments
    assert env.show_volume(old)["status"] == "in-use"
    assert env.show_volume(new)["status"] == "available"
    server = _wait_status(env, server_id, "ACTIVE")
    assert server["OS-EXT-STS:task_state"] is None


def test_failed_swap_rolls_back_to_the_old_volume(env, deployment):
    """The driver's swap fails: the old volume stays attached at its device
    (same Cinder attachment, in-use, still in the guest), the new one is
    available with no attachment and nothing on the host; the swap_volume
    action has a failed compute_swap_volume event."""
    server_id = env.server(name="swap-fail")
    old, new = env.volume(), env.volume()
    assert _attach(env, server_id, old)[0] == 200
    before = _listed(env, server_id)[old]
    env.admin_volumes.begin_migration(old)
    with override("fake_driver", fail_operations=["swap"]):
        code, body, headers = env.http(ADMIN).request(
            "PUT", "/servers/%s/os-volume_attachments/%s" % (server_id, old),
            {"volumeAttachment": {"volumeId": new}})
        assert code == 202, body
        action = _finished_action(env, server_id,
                                  headers["x-openstack-request-id"])
    assert action["action"] == "swap_volume"
    assert [(e["event"], e["result"]) for e in action["events"]] == [
        ("compute_swap_volume", "Error")]
    assert _listed(env, server_id) == {old: before}
    assert env.show_volume(old)["status"] == "in-use"
    assert [a["id"] for a in env.cinder_attachments(old)] == [
        before["attachment_id"]]
    _assert_nothing_left(env, deployment, server_id, new)
    assert env.guest_devices(server_id)[before["device"]]["volume_id"] == old


def test_failed_detach_keeps_the_volume_attached(env, deployment):
    """The driver's detach fails: the volume goes back to in-use, stays
    listed and in the guest; compute_detach_volume failed."""
    server_id = env.server(name="detach-fail")
    volume_id = env.volume()
    assert _attach(env, server_id, volume_id)[0] == 200
    before = _listed(env, server_id)[volume_id]
    with override("fake_driver", fail_operations=["detach"]):
        code, body, headers = env.http().detach_volume(server_id, volume_id)
        assert code == 202, body
        action = _finished_action(env, server_id,
                                  headers["x-openstack-request-id"])
    assert [(e["event"], e["result"]) for e in action["events"]] == [
        ("compute_detach_volume", "Error")]
    env.wait.volume_status(env.volumes, volume_id, "in-use")
    assert _listed(env, server_id) == {volume_id: before}
    assert before["device"] in env.guest_devices(server_id)


# -- 2.89 and attachments in progress -----------------------------------------------

def test_2_89_hides_an_attachment_still_in_progress(env):
    """A BDM whose Cinder attachment is not made yet (what the compute's
    reserve_block_device_name leaves for a moment): listed and shown up to
    2.88, left out of the list and 404 on show from 2.89; detach refuses it
    (409) instead of racing the attach."""
    server_id = env.server(name="in-progress")
    volume_id = env.volume()
    bdm = objects.BlockDeviceMapping(
        context.get_admin_context(), uuid=str(uuid.uuid4()),
        instance_uuid=server_id, source_type="volume",
        destination_type="volume", volume_id=volume_id,
        device_name="/dev/vdq", boot_index=None)
    bdm.create()
    try:
        assert _listed(env, server_id, "2.88")[volume_id]["device"] == "/dev/vdq"
        code, _, _ = env.http().show_volume_attachment(server_id, volume_id,
                                                       microversion="2.88")
        assert code == 200
        assert _listed(env, server_id, "2.89") == {}
        code, body, _ = env.http().show_volume_attachment(
            server_id, volume_id, microversion="2.89")
        assert code == 404, body
        code, body, _ = env.http().detach_volume(server_id, volume_id)
        assert code == 409, body
    finally:
        bdm.destroy()


def test_delete_during_a_swap_leaves_neither_volume_attached(env, deployment):
    """A server delete sent while the compute swaps (the fake driver's swap
    takes a while, as a block copy does): the delete's terminate waits for
    the compute's per-instance lock, so the swap saves the record first
    and the delete, which read the record before, releases only the old
    attachment.  The swap sees the delete and gives the new volume back:
    both volumes end available with no attachment and no record."""
    server_id = env.server(name="swap-vs-delete")
    old, new = env.volume(), env.volume()
    assert _attach(env, server_id, old)[0] == 200
    env.wait.volume_status(env.volumes, old, "in-use")
    env.admin_volumes.begin_migration(old)
    with override("fake_driver", swap_latency=1.5):
        code, body, _ = env.http(ADMIN).request(
            "PUT", "/servers/%s/os-volume_attachments/%s" % (server_id, old),
            {"volumeAttachment": {"volumeId": new}})
        assert code == 202, body
        time.sleep(0.5)                 # the compute is inside the swap
        code, body, _ = env.http().delete_server(server_id)
        assert code == 204, body
        env.http().wait_for_server_deleted(server_id, timeout=30)
    for volume in (old, new):
        env.wait.volume_status(env.volumes, volume, "available")
        assert env.cinder_attachments(volume) == [], volume
    assert _bdms(server_id) == []
