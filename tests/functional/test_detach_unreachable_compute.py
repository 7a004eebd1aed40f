"""A detach whose compute does not answer (issue 21): left pending, never
rolled back nor released, then finished by the reconcile pass once the
compute answers again (conductor/tasks/detach.py, conductor/reconcile.py).

Every role in this process (the functional tier).  A compute is made
unreachable by stopping its RPC server: its heartbeats go on (the API and
the servicegroup still see it up, as for a link that just went down), and
the conductor's calls get no answer (``rpc_response_timeout`` is 2 s here).
Also the races: a second DELETE of the pending attachment, a server delete
while the detach is pending, and the compute answering while the
conductor's second call is on its way (the compute's per-instance lock makes
that second unplug a no-op)."""
import contextlib
import time

import pytest
from oslo_messaging.rpc import client as messaging_client

from tests.functional import instance_actions
from tests.functional.test_attach_detach import _new_server
from volattach.conductor import reconcile
from volattach.conductor.tasks import detach as detach_task
from volattach.conf import CONF
from volattach.db import api as db_api

MV = "2.101"
RPC_TIMEOUT = 2


@pytest.fixture(scope="module", autouse=True)
def short_rpc_timeout(deployment):
    CONF.register_opts(messaging_client._client_opts)
    CONF.set_override("rpc_response_timeout", RPC_TIMEOUT)
    yield
    CONF.clear_override("rpc_response_timeout")


def _host(server_id):
    return db_api.instance_get_by_uuid(server_id)["host"]


@contextlib.contextmanager
def unreachable(deployment, host):
    """``host``'s compute gives no answer inside the block (its RPC server
    stopped, its heartbeats going on); it serves again after."""
    compute = deployment.computes[host]
    for server in compute.servers:
        server.stop()
        server.wait()
    try:
        yield compute
    finally:
        for server in compute.servers:
            server.start()


def _attached(api, volumes, server_id):
    volume_id = volumes.create_available_volume()
    status, body, _ = api.attach_volume(server_id, volume_id, microversion=MV)
    assert status == 202, body
    volumes.wait_for_volume_status(volume_id, "in-use")
    return volume_id


def _guest_devices(deployment, server_id):
    guest = deployment.computes[_host(server_id)].driver.guests.get(server_id)
    return set((guest or {}).get("devices", {}))


def _detach_events(admin_api, server_id):
    """The compute_detach_volume events of the server's detach actions."""
    return instance_actions.action_events(
        admin_api, server_id, "detach_volume", event="compute_detach_volume")


def _wait_pending(admin_api, server_id, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pending = [e for e in _detach_events(admin_api, server_id)
                   if e.get("finish_time")]
        if pending:
            return pending
        time.sleep(0.2)
    raise AssertionError("the detach of %s never ended" % server_id)


def _pending_detach(deployment, api, admin_api, volumes, server_id, caplog):
    """Attach a volume, detach it while the compute does not answer: the
    detach is left pending.  Returns the volume and its record."""
    volume_id = _attached(api, volumes, server_id)
    [record] = db_api.bdm_get_by_volume(volume_id)
    with unreachable(deployment, _host(server_id)):
        with caplog.at_level("INFO"):
            status, body, _ = api.detach_volume(server_id, volume_id,
                                                microversion=MV)
            assert status == 202, body
            [event] = _wait_pending(admin_api, server_id)
        # nothing reached the compute
        assert record["device_name"] in _guest_devices(deployment, server_id)
    # (the calls it missed may reach it now, as queued messages would once
    # a link is back: the records must not care)
    assert event["result"] == "Error"
    assert (detach_task.PENDING_MARK + volume_id) in event["details"]
    assert "does not answer" in event["details"]
    # stays detaching: the record and the attachment are there
    time.sleep(0.5)
    volume = volumes.wait_for_volume_status(volume_id, "detaching")
    assert [a["attachment_id"] for a in volume["attachments"]] \
        == [record["attachment_id"]]
    assert [r["id"] for r in db_api.bdm_get_by_volume(volume_id)] \
        == [record["id"]]
    # no task state left on the server
    assert db_api.instance_get_by_uuid(server_id)["task_state"] is None
    # said once at WARNING
    warnings = [r for r in caplog.records if r.levelname == "WARNING"
                and "pending" in r.getMessage() and volume_id in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    return volume_id, record


def _reconcile(deployment):
    reconciler = deployment.conductor.reconciler
    reconciler.grace_seconds = 0
    try:
        report = reconciler.run_once()
    finally:
        reconciler.grace_seconds = CONF.conductor.reconcile_grace_period
    assert report is not None
    return report


def test_pending_detach_is_finished_by_the_reconcile_pass(
        deployment, api, admin_api, volumes, caplog):
    server_id = _new_server(api, name="pending-detach")
    volume_id, record = _pending_detach(deployment, api, admin_api, volumes,
                                        server_id, caplog)

    # still unreachable: the pass skips it, with the reason, and changes
    # nothing
    with unreachable(deployment, _host(server_id)):
        report = _reconcile(deployment)
    [item] = [i for i in report.items if i.volume_id == volume_id]
    assert item.outcome == reconcile.SKIPPED, item
    assert "does not answer" in item.error
    volumes.wait_for_volume_status(volume_id, "detaching")
    assert len(db_api.bdm_get_by_volume(volume_id)) == 1

    # the compute answers: the pass unplugs and releases
    report = _reconcile(deployment)
    [item] = [i for i in report.items if i.volume_id == volume_id]
    assert item.outcome == reconcile.REPAIRED, item
    assert "pending on an unreachable compute" in item.found
    volume = volumes.wait_for_volume_status(volume_id, "available")
    assert volume["attachments"] == []
    assert db_api.bdm_get_by_volume(volume_id) == []
    assert record["device_name"] not in _guest_devices(deployment, server_id)
    status, body, _ = api.show_volume_attachment(server_id, volume_id)
    assert status == 404, body
    # and the next pass finds nothing of it
    assert [i for i in _reconcile(deployment).items
            if i.volume_id == volume_id] == []


def test_a_second_detach_of_a_pending_one_is_refused_without_an_unplug(
        deployment, api, admin_api, volumes, caplog):
    server_id = _new_server(api, name="pending-twice")
    volume_id, record = _pending_detach(deployment, api, admin_api, volumes,
                                        server_id, caplog)
    manager = deployment.computes[_host(server_id)].manager
    time.sleep(1)               # what the compute missed has reached it
    before = len(_detach_events(admin_api, server_id))
    unplugs = []
    real = manager.detach_volume
    manager.detach_volume = lambda *a, **kw: unplugs.append(a) or real(*a, **kw)
    try:
        status, body, _ = api.detach_volume(server_id, volume_id,
                                            microversion=MV)
        # Nova's answer to a detach of a volume already detaching
        assert status == 400, body
        assert "badRequest" in body
        time.sleep(1)
        # no second detach workflow, no unplug: still pending
        assert unplugs == []
        assert len(_detach_events(admin_api, server_id)) == before
        volumes.wait_for_volume_status(volume_id, "detaching")
        assert len(db_api.bdm_get_by_volume(volume_id)) == 1
        report = _reconcile(deployment)
        assert len(unplugs) == 1        # the pass's, confirmed
    finally:
        del manager.detach_volume
    assert [(i.kind, i.outcome) for i in report.items
            if i.volume_id == volume_id] == [("stuck_volume",
                                              reconcile.REPAIRED)]
    volumes.wait_for_volume_status(volume_id, "available")


def test_a_server_deleted_while_its_detach_is_pending_cleans_up(
        deployment, api, admin_api, volumes, caplog):
    server_id = _new_server(api, name="pending-delete")
    volume_id, _ = _pending_detach(deployment, api, admin_api, volumes,
                                   server_id, caplog)
    status, body, _ = api.delete_server(server_id)
    assert status == 204, body
    api.wait_for_server_deleted(server_id)
    volume = volumes.wait_for_volume_status(volume_id, "available")
    assert volume["attachments"] == []
    assert db_api.bdm_get_by_volume(volume_id) == []
    # nothing left for the pass
    assert [i for i in _reconcile(deployment).items
            if i.volume_id == volume_id] == []


def test_a_server_deleted_while_its_compute_is_still_away_cleans_up(
        deployment, api, admin_api, volumes, caplog):
    """The compute never came back and is now seen down: the API deletes
    the server locally, pending detach included."""
    server_id = _new_server(api, name="pending-delete-down")
    host = _host(server_id)
    volume_id, _ = _pending_detach(deployment, api, admin_api, volumes,
                                   server_id, caplog)
    service = db_api.service_get_by_host_and_binary(host, "volattach-compute")
    with unreachable(deployment, host):
        db_api.service_update(service["id"], {"forced_down": True})
        try:
            time.sleep(4)       # past the API's up cache
            status, body, _ = api.delete_server(server_id)
            assert status == 204, body
            api.wait_for_server_deleted(server_id)
        finally:
            db_api.service_update(service["id"], {"forced_down": False})
    volume = volumes.wait_for_volume_status(volume_id, "available")
    assert volume["attachments"] == []
    assert db_api.bdm_get_by_volume(volume_id) == []


def test_the_compute_answering_during_the_second_call_finishes_the_detach(
        deployment, api, admin_api, volumes):
    """The first call outlives its timeout on a slow compute: the second
    waits on the server's lock, then finds nothing left to unplug, and
    answers: the detach finishes (not pending, not rolled back)."""
    server_id = _new_server(api, name="slow-detach")
    volume_id = _attached(api, volumes, server_id)
    [record] = db_api.bdm_get_by_volume(volume_id)
    compute = deployment.computes[_host(server_id)]
    unplugs = []
    real = compute.driver.detach_volume

    def slow_first(instance, connection_info, device_name):
        plugged = device_name in compute.driver.guests[instance.uuid]["devices"]
        unplugs.append(plugged)
        if len(unplugs) == 1:
            time.sleep(RPC_TIMEOUT + 1)     # past the first call's timeout
        return real(instance, connection_info, device_name)
    compute.driver.detach_volume = slow_first
    try:
        status, body, _ = api.detach_volume(server_id, volume_id,
                                            microversion=MV)
        assert status == 202, body
        volume = volumes.wait_for_volume_status(volume_id, "available",
                                                timeout=4 * RPC_TIMEOUT + 10)
    finally:
        del compute.driver.detach_volume
    assert volume["attachments"] == []
    assert db_api.bdm_get_by_volume(volume_id) == []
    # two unplugs, the second of a device already gone
    assert unplugs == [True, False]
    assert record["device_name"] not in _guest_devices(deployment, server_id)
    [event] = _detach_events(admin_api, server_id)
    assert event["result"] == "Success", event

