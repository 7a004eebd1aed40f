"""The volume's multiattach flag travels with the attach (conductor task RPC
1.8, issues 20 and 23): the compute still gets a connection with
``multiattach`` True for a multiattach volume and none for a plain one, and
the volume service serves one GET of the volume per attach fewer than with
a conductor client capped at 1.7 (where the conductor reads the volume
again for the flag).  Both the call (2.60) and the cast (2.101) paths.

Counted on the volume service's side: its ``VolumeManager.volume_get``,
what GET /volumes/{id} runs, for the attached volume only (the test polls
no volume while it counts: it waits on the instance action through the
compute API, which reads no volume)."""
import collections
import time

import pytest

from tests.functional.test_attach_detach import _new_server
from tests.functional.test_read_only_attach import _facade
from volattach.conf import CONF



@pytest.fixture
def served_gets(monkeypatch):
    """{volume id: GETs of it the volume service served} from now on."""
    from volattach.volume import manager as volume_manager
    counts = collections.Counter()
    real = volume_manager.VolumeManager.volume_get

    def volume_get(self, ctx, volume_id):
        counts[volume_id] += 1
        return real(self, ctx, volume_id)
    monkeypatch.setattr(volume_manager.VolumeManager, "volume_get", volume_get)
    return counts


@pytest.fixture
def conductor_capped_at_1_7(deployment):
    """The API's conductor client capped at 1.7 (as during an upgrade, an
    API beside conductors that do not take the flag)."""
    from volattach.conductor import rpcapi as conductor_rpcapi
    facade = _facade(deployment)
    original = facade.compute_task_api.rpcapi
    CONF.set_override("conductor", "1.7", group="upgrade_levels")
    try:
        facade.compute_task_api.rpcapi = conductor_rpcapi.ComputeTaskAPI()
        assert not facade.compute_task_api.rpcapi.client.can_send_version("1.8")
        yield
    finally:
        CONF.clear_override("conductor", group="upgrade_levels")
        facade.compute_task_api.rpcapi = original


def _volume(volumes, **fields):
    status, body, _ = volumes.create_volume(size=1, **fields)
    assert status == 202, body
    volumes.wait_for_volume_status(body["volume"]["id"], "available")
    return body["volume"]["id"]


def _attach_finished(api, server_id, count):
    """Wait until the server has ``count`` finished attach actions (the
    cast's workflow is over): the compute API's records, no volume read."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status, body, _ = api.request(
            "GET", "/servers/%s/os-instance-actions" % server_id)
        assert status == 200, body
        finished = 0
        for action in body["instanceActions"]:
            if action["action"] != "attach_volume":
                continue
            status, detail, _ = api.request(
                "GET", "/servers/%s/os-instance-actions/%s"
                % (server_id, action["request_id"]), microversion="2.51")
            events = detail["instanceAction"].get("events") or []
            if events and all(e["finish_time"] for e in events):
                assert [e["result"] for e in events] == ["Success"], events
                finished += 1
        if finished == count:
            return
        time.sleep(0.05)
    raise AssertionError("the attach did not finish")


def _attach(api, deployment, server_id, volume_id, microversion, attached):
    """Attach and wait for the workflow's end; the connection the compute
    got for the device."""
    from volattach import context
    from volattach import objects
    status, body, _ = api.attach_volume(server_id, volume_id,
                                        microversion=microversion)
    if microversion == "2.101":
        assert status == 202, body
        _attach_finished(api, server_id, attached)
        status, body, _ = api.show_volume_attachment(
            server_id, volume_id, microversion=microversion)
        assert status == 200, body
    else:
        assert status == 200, body
    device = body["volumeAttachment"]["device"]
    host = objects.Instance.get_by_uuid(context.get_admin_context(),
                                        server_id).host
    driver = deployment.computes[host].driver
    return driver.guests[server_id]["devices"][device]


def _attach_both(api, volumes, deployment, multiattach_type, served_gets,
                 microversion):
    """Attach a multiattach and a plain volume to a new server; the GETs of
    each the volume service served during its attach."""
    server_id = _new_server(api, name="ma-flag")
    shared = _volume(volumes, volume_type=multiattach_type)
    plain = _volume(volumes)
    served_gets.clear()
    connection = _attach(api, deployment, server_id, shared, microversion, 1)
    assert connection["multiattach"] is True
    connection = _attach(api, deployment, server_id, plain, microversion, 2)
    assert "multiattach" not in connection
    return served_gets[shared], served_gets[plain]


@pytest.mark.parametrize("microversion", ["2.60", "2.101"])
def test_one_get_of_the_volume_fewer_per_attach(
        api, volumes, deployment, multiattach_type, served_gets,
        microversion, request):
    with_flag = _attach_both(api, volumes, deployment, multiattach_type,
                             served_gets, microversion)
    request.getfixturevalue("conductor_capped_at_1_7")
    without_flag = _attach_both(api, volumes, deployment, multiattach_type,
                                served_gets, microversion)
    # the compute API's check reads each volume once; the conductor of 1.7
    # read it again for the flag
    assert with_flag == (1, 1)
    assert without_flag == (2, 2)
