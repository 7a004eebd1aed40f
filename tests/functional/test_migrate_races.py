"""An attach racing a live migration of its server (issue 22, item 8), in
one process with two computes.

The compute API refuses an attach while the server is ``migrating``; these
are the attaches that passed its checks just before.  Found by a randomized
check (a live migration, a detach of one volume and a 2.101 attach of
another, sent together): the attach workflow sent its reserve and its plug
to the host the API had read, the migration's source, after (or while) the
guest left it.  The volume ended attached on the source (its attachment's
host) while the server ran on the destination without the device, and the
fake driver's plug made a guest on the source again.  Now the attach reads
the server again before its reserve and once its record exists, and the
migration waits for an attach whose record it finds to finish.  The end
state in every case: attachments only on the server's actual host, the
records matching them, nothing left ``reserved``/``attaching``.
"""
import threading
import time

import pytest

from tests.functional import instance_actions
from tests.functional.test_attach_detach import _new_server, _new_volume
from tests.functional.test_live_migration import _wait_done
from tests.integration import client as clients
from volattach import context
from volattach import objects
from volattach.conductor import api as conductor_api
from volattach.conf import CONF

CONF_OVERRIDES = {("conductor", "reconcile_interval"): 0}
MIGRATE = {"os-migrateLive": {"host": None, "block_migration": "auto"}}


def _instance(server_id):
    return objects.Instance.get_by_uuid(context.get_admin_context(), server_id)


def _volume_records(server_id):
    return {b.volume_id: b for b in objects.BlockDeviceMappingList.get_by_instance_uuid(
        context.get_admin_context(), server_id) if b.is_volume}


def _migrate(admin_api, server_id):
    status, body, _ = admin_api.request(
        "POST", "/servers/%s/action" % server_id, MIGRATE, microversion="2.25")
    assert status == 202, body


def _server_with_volume(api, volumes):
    server_id = _new_server(api, name="race")
    attached = _new_volume(volumes)
    status, body, _ = api.attach_volume(server_id, attached, microversion="2.1")
    assert status == 200, body
    volumes.wait_for_volume_status(attached, "in-use")
    return server_id, attached


def _assert_on_host(deployment, volumes, server_id, host, attached, gone=()):
    """Every attachment of ``attached`` on ``host``, the server's, with its
    record naming it and its device in the guest there; ``gone``: volumes
    available, with no attachment and no record."""
    assert _instance(server_id).host == host
    records = _volume_records(server_id)
    guest = deployment.computes[host].driver.guests[server_id]
    for volume_id in attached:
        assert volumes.show_volume(volume_id)[1]["volume"]["status"] == "in-use"
        [(attachment_id, on)] = volumes.attachment_hosts(volume_id)
        assert on == host, (volume_id, on)
        assert records[volume_id].attachment_id == attachment_id
        assert records[volume_id].device_name in guest["devices"]
    for volume_id in gone:
        assert volumes.show_volume(volume_id)[1]["volume"]["status"] == "available"
        assert volumes.attachment_hosts(volume_id) == []
        assert volume_id not in records
    # the guest is on one host only
    others = [h for h, c in deployment.computes.items()
              if h != host and server_id in c.driver.guests]
    assert others == []


def _failed_attach_events(admin_api, server_id):
    return instance_actions.action_events(admin_api, server_id,
                                          "attach_volume", result="Error")


def test_an_attach_the_api_checked_before_a_finished_migration_goes_to_the_new_host(
        api, admin_api, volumes, deployment):
    """The attach reached the conductor after the migration had finished:
    the workflow reads where the server is now, instead of the source the
    API read (which got the reserve and the plug before)."""
    server_id, first = _server_with_volume(api, volumes)
    second = _new_volume(volumes)
    as_the_api_read_it = _instance(server_id)
    source = as_the_api_read_it.host
    _migrate(admin_api, server_id)
    _wait_done(admin_api, server_id)
    dest = _instance(server_id).host
    assert dest != source

    device = conductor_api.ComputeTaskAPI().attach_volume(
        context.get_admin_context(), as_the_api_read_it, second)

    assert device == _volume_records(server_id)[second].device_name
    _assert_on_host(deployment, volumes, server_id, dest, [first, second])


@pytest.fixture
def latency():
    names = []

    def set_latency(name, seconds):
        CONF.set_override(name, seconds, group="fake_driver")
        names.append(name)
    yield set_latency
    for name in names:
        CONF.clear_override(name, group="fake_driver")


def test_an_attach_whose_reserve_ran_as_the_migration_started_gives_way(
        api, admin_api, volumes, deployment, latency):
    """The attach's reserve is under way (2 s in the driver) when the
    migration is accepted: the attach reads ``migrating`` once its record
    exists and rolls back (an Error event, the volume available); the
    migration moves the server with its other volume."""
    server_id, first = _server_with_volume(api, volumes)
    second = _new_volume(volumes)
    source = _instance(server_id).host
    latency("reserve_latency", 2.0)
    status, body, _ = api.attach_volume(server_id, second, microversion="2.101")
    assert status == 202, body
    time.sleep(0.3)           # the reserve sleeps in the driver
    _migrate(admin_api, server_id)
    _wait_done(admin_api, server_id)
    volumes.wait_for_volume_status(second, "available")
    dest = _instance(server_id).host
    assert dest != source

    _assert_on_host(deployment, volumes, server_id, dest, [first], gone=[second])
    [event] = _failed_attach_events(admin_api, server_id)
    assert "migrating" in event["traceback"]


def test_a_migration_waits_for_an_attach_it_finds_under_way(
        api, admin_api, volumes, deployment, latency):
    """The attach's plug is under way (1 s in the driver) when the
    migration lists the server's volumes: it waits for the attach to finish
    and moves that volume too."""
    server_id, first = _server_with_volume(api, volumes)
    second = _new_volume(volumes)
    source = _instance(server_id).host
    latency("attach_latency", 1.0)
    status, body, _ = api.attach_volume(server_id, second, microversion="2.101")
    assert status == 202, body
    volumes.wait_for_volume_status(second, "attaching", interval=0.02)
    _migrate(admin_api, server_id)
    _wait_done(admin_api, server_id)
    dest = _instance(server_id).host
    assert dest != source

    _assert_on_host(deployment, volumes, server_id, dest, [first, second])
    assert _failed_attach_events(admin_api, server_id) == []
    status, body, _ = admin_api.request(
        "GET", "/os-migrations", microversion="2.59",
        params={"instance_uuid": server_id})
    assert status == 200, body
    assert [m["status"] for m in body["migrations"]] == ["completed"]


def test_attach_detach_and_migration_sent_together_end_on_one_host(
        api, admin_api, volumes, deployment):
    """The batch of the randomized check, round after round with the
    detach a little later each time: whatever wins, every attachment ends
    on the server's host with its record, and nothing is left in flight."""
    for round_no in range(6):
        server_id, first = _server_with_volume(api, volumes)
        second = _new_volume(volumes)
        delay = round_no * 0.01
        calls = [
            lambda c: c.attach_volume(server_id, second, microversion="2.101"),
            lambda c: c.request("POST", "/servers/%s/action" % server_id,
                                MIGRATE, microversion="2.25"),
            lambda c: (time.sleep(delay), c.detach_volume(server_id, first))[1],
        ]
        tokens = ["alice:demo", "admin:demo:admin", "alice:demo"]
        results = [None] * 3

        def run(i):
            client = clients.ComputeClient(deployment.api_url, tokens[i])
            results[i] = calls[i](client)[0]
        threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert all(code in (202, 409) for code in results), results
        _wait_done(admin_api, server_id)
        for volume_id in (first, second):
            clients._wait(
                lambda: volumes.show_volume(volume_id)[1]["volume"]["status"],
                lambda s: s in ("in-use", "available"), "volume settled",
                timeout=30, interval=0.1)
        host = _instance(server_id).host
        attached = [v for v in (first, second)
                    if volumes.attachment_hosts(v)]
        _assert_on_host(deployment, volumes, server_id, host, attached,
                        gone=[v for v in (first, second) if v not in attached])
