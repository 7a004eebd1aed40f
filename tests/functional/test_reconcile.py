"""Drift repair in one process: each kind of drift made directly (through
the volume service and the database, as a daemon killed between two steps
would leave it), then one reconciliation pass: a large grace period leaves
everything alone, grace 0 repairs everything, and the pass after that finds
nothing.  Also ``volattach-manage attachments reconcile`` as a separate
process on the same databases, and the conductor's own periodic pass."""
import os
import re
import subprocess
import sys
import uuid

import pytest

from volattach import objects
from volattach.conductor import reconcile
from volattach.db import api as db_api
from volattach import context as volattach_context
from volattach.conf import CONF
from volattach.volume_client import cinder

CONF_OVERRIDES = {("conductor", "reconcile_interval"): 0}


@pytest.fixture
def ctx():
    return volattach_context.get_admin_context()


@pytest.fixture
def volume_api(deployment):
    return cinder.VolumeAPI()




def _attach(api, volumes, server_id, volume_id):
    status, body, _ = api.attach_volume(server_id, volume_id, microversion="2.1")
    assert status == 200, body
    volumes.wait_for_volume_status(volume_id, "in-use")


def _bdm(volume_id):
    return db_api.bdm_get_by_volume(volume_id)


def _consistent(volume_api, ctx, volume_ids):
    """{volume: (status, has a record)} for the volumes that are neither
    in-use with a record nor available without one."""
    bad = {}
    for vid in volume_ids:
        status = volume_api.get(ctx, vid)["status"]
        records = _bdm(vid)
        if not ((status == "in-use" and records)
                or (status == "available" and not records)):
            bad[vid] = (status, len(records))
    return bad


@pytest.fixture
def drift(deployment, api, volumes, volume_api, ctx):
    """One volume per kind of drift; returns {name: (volume, server)}."""
    made = {}
    server = api.create_active_server()

    # orphan_attachment: a reservation without a record (the conductor
    # died after attachment_create, before saving the record)
    vid = volumes.create_available_volume()
    volume_api.attachment_create(ctx, vid, server)
    made["orphan_attachment"] = (vid, server)

    # orphan_bdm: a record whose attachment is not in the volume service;
    # its real attachment is then an orphan too
    vid = volumes.create_available_volume()
    _attach(api, volumes, server, vid)
    bdm = _bdm(vid)[0]
    db_api.bdm_update(bdm["id"], {"attachment_id": str(uuid.uuid4())})
    made["bogus_attachment_id"] = (vid, server)

    # orphan_bdm: a record with no attachment (died after reserving the device)
    vid = volumes.create_available_volume()
    objects.BlockDeviceMapping(
        ctx, uuid=str(uuid.uuid4()), instance_uuid=server, volume_id=vid,
        source_type="volume", destination_type="volume",
        device_name="/dev/vdx", attachment_id=None).create()
    made["record_without_attachment"] = (vid, server)

    # stuck_volume: reserved with nothing behind it
    vid = volumes.create_available_volume()
    volume_api.reset_volume_status(ctx, vid, status="reserved")
    made["reserved_for_nothing"] = (vid, None)

    # stuck_volume: the attach died after attachment_update (attaching)
    vid = volumes.create_available_volume()
    att = volume_api.attachment_create(ctx, vid, server)
    objects.BlockDeviceMapping(
        ctx, uuid=str(uuid.uuid4()), instance_uuid=server, volume_id=vid,
        source_type="volume", destination_type="volume",
        device_name="/dev/vdy", attachment_id=att["id"]).create()
    volume_api.attachment_update(ctx, att["id"], {"host": "compute1",
                                                  "initiator": "iqn.x"})
    made["attach_died_attaching"] = (vid, server)

    # stuck_volume: detaching with no detach running and no detach asked
    # (no detach_volume action on the server): rolled back
    vid = volumes.create_available_volume()
    _attach(api, volumes, server, vid)
    volume_api.begin_detaching(ctx, vid)
    made["detach_lost"] = (vid, server)

    # stuck_volume: the detach the user asked for (the API's action and
    # begin_detaching went through, the cast was lost): finished
    asked = api.create_active_server()
    vid = volumes.create_available_volume()
    _attach(api, volumes, asked, vid)
    objects.InstanceAction.action_start(
        volattach_context.get_admin_context(), asked, "detach_volume")
    volume_api.begin_detaching(ctx, vid)
    made["detach_asked"] = (vid, asked)

    # orphan_attachment of a deleted server
    doomed = api.create_active_server()
    vid = volumes.create_available_volume()
    volume_api.attachment_create(ctx, vid, doomed)
    status, _, _ = api.delete_server(doomed)
    assert status == 204
    api.wait_for_server_deleted(doomed)
    made["deleted_server"] = (vid, doomed)

    # a healthy attachment, to be left alone
    vid = volumes.create_available_volume()
    _attach(api, volumes, server, vid)
    made["healthy"] = (vid, server)
    return made


def test_large_grace_skips_then_grace_zero_repairs_everything(
        drift, volume_api, ctx, admin_api, deployment):
    volume_ids = [vid for vid, _ in drift.values()]
    before = _consistent(volume_api, ctx, volume_ids)
    # in-use with a record but pointing at nothing: invisible to the
    # status check, found by the pass
    assert set(before) == {vid for name, (vid, _) in drift.items()
                           if name not in ("healthy", "bogus_attachment_id")}

    waiting = reconcile.reconcile(ctx, volume_api, 3600)
    ours = [i for i in waiting.items if i.volume_id in volume_ids]
    assert ours and all(i.outcome == reconcile.SKIPPED for i in ours), ours
    assert _consistent(volume_api, ctx, volume_ids) == before

    dry = reconcile.reconcile(ctx, volume_api, 0, dry_run=True)
    assert _consistent(volume_api, ctx, volume_ids) == before
    dry_ours = {(i.kind, i.volume_id) for i in dry.items
                if i.volume_id in volume_ids}

    # the compute answers the unplug of the detach it finishes
    report = reconcile.reconcile(
        ctx, volume_api, 0,
        compute_rpcapi=deployment.conductor.reconciler.compute_rpcapi)
    done = {(i.kind, i.volume_id) for i in report.items
            if i.volume_id in volume_ids}
    assert not [i for i in report.items if i.outcome == reconcile.FAILED]
    assert dry_ours == done
    expected = {
        ("orphan_attachment", drift["orphan_attachment"][0]),
        ("orphan_bdm", drift["bogus_attachment_id"][0]),
        ("orphan_attachment", drift["bogus_attachment_id"][0]),
        ("orphan_bdm", drift["record_without_attachment"][0]),
        ("stuck_volume", drift["reserved_for_nothing"][0]),
        ("stuck_volume", drift["attach_died_attaching"][0]),
        ("stuck_volume", drift["detach_lost"][0]),
        ("stuck_volume", drift["detach_asked"][0]),
        ("orphan_attachment", drift["deleted_server"][0]),
    }
    assert done == expected
    assert all(i.outcome == reconcile.REPAIRED for i in report.items
               if i.volume_id in volume_ids)

    assert _consistent(volume_api, ctx, volume_ids) == {}
    status = {name: volume_api.get(ctx, vid)["status"]
              for name, (vid, _) in drift.items()}
    assert status["detach_lost"] == "in-use"        # rolled back, still attached
    assert status["detach_asked"] == "available"    # finished
    assert _bdm(drift["detach_asked"][0]) == []
    assert status["healthy"] == "in-use"
    assert status["attach_died_attaching"] == "available"
    # the next pass finds nothing of ours
    again = reconcile.reconcile(ctx, volume_api, 0)
    assert [i for i in again.items if i.volume_id in volume_ids] == []

    # the repairs are in the server's instance actions as failed events
    server = drift["orphan_attachment"][1]
    status, body, _ = admin_api.request(
        "GET", "/servers/%s/os-instance-actions" % server,
        headers={"OpenStack-API-Version": "compute 2.62"})
    assert status == 200, body
    actions = [a for a in body["instanceActions"] if a["action"] == "reconcile"]
    assert len(actions) == 1 and actions[0]["message"] == "Error"
    status, body, _ = admin_api.request(
        "GET", "/servers/%s/os-instance-actions/%s"
        % (server, actions[0]["request_id"]),
        headers={"OpenStack-API-Version": "compute 2.62"})
    events = body["instanceAction"]["events"]
    assert {e["event"] for e in events} == {"conductor_reconcile"}
    assert {e["result"] for e in events} == {"Error"}
    assert len(events) == 6     # six repairs on this server


def _manage(deployment, tmp_path, *args):
    conf = tmp_path / "manage.conf"
    conf.write_text(
        "[DEFAULT]\nstate_path = %s\n[database]\nconnection = %s\n"
        "[volume]\nconnection = %s\n"
        "[cinder]\nauth_strategy = noauth\nendpoint = %s\n" % (
            CONF.state_path, CONF.database.connection, CONF.volume.connection,
            CONF.cinder.endpoint))
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "volattach-manage"),
         "--config-file", str(conf), "attachments", "reconcile", *args],
        capture_output=True, text=True, timeout=120, env=env)


def test_manage_command_dry_run_then_repair(deployment, api, volumes,
                                            volume_api, ctx, tmp_path):
    server = api.create_active_server()
    vid = volumes.create_available_volume()
    att = volume_api.attachment_create(ctx, vid, server)

    result = _manage(deployment, tmp_path, "--dry-run", "--no-unplug")
    assert result.returncode == 0, result.stderr
    assert "orphan_attachment" in result.stdout and att["id"] in result.stdout
    assert "would repair" in result.stdout
    # its summary once, on stdout; log lines (if any) on stderr only
    summary = result.stdout.splitlines()[-1]
    assert summary.startswith("dry run (grace "), result.stdout
    report = summary.split("): ", 1)[1]
    assert (result.stdout + result.stderr).count(report) == 1, result
    assert not re.search(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\S+ \d+ [A-Z]+ ",
                         result.stdout, re.M), result.stdout
    assert volume_api.get(ctx, vid)["status"] == "reserved"

    # default grace (600 s): too young
    result = _manage(deployment, tmp_path, "--no-unplug")
    assert result.returncode == 0, result.stderr
    assert "skipped (younger than the grace period)" in result.stdout
    assert volume_api.get(ctx, vid)["status"] == "reserved"

    result = _manage(deployment, tmp_path, "--grace-seconds", "0", "--no-unplug")
    assert result.returncode == 0, result.stderr
    assert "repaired" in result.stdout and "grace 0s" in result.stdout
    assert volume_api.get(ctx, vid)["status"] == "available"

    result = _manage(deployment, tmp_path, "--grace-seconds", "0", "--no-unplug")
    assert result.returncode == 0, result.stderr
    assert att["id"] not in result.stdout


def test_conductor_periodic_pass_repairs_when_leading(deployment, api, volumes,
                                                      volume_api, ctx):
    reconciler = deployment.conductor.reconciler
    assert reconciler._thread is None       # interval 0: no thread
    server = api.create_active_server()
    vid = volumes.create_available_volume()
    volume_api.attachment_create(ctx, vid, server)
    reconciler.grace_seconds = 0
    try:
        report = reconciler.run_once()
    finally:
        reconciler.grace_seconds = CONF.conductor.reconcile_grace_period
    assert report is not None                # the only conductor leads
    assert [(i.kind, i.outcome) for i in report.items if i.volume_id == vid] \
        == [("orphan_attachment", reconcile.REPAIRED)]
    assert volume_api.get(ctx, vid)["status"] == "available"


def test_periodic_thread_runs_passes(deployment, volume_api):
    import threading
    ran = threading.Event()
    periodic = reconcile.PeriodicReconciler("nobody", volume_api, None,
                                            interval=0.05, grace_seconds=3600)
    periodic.run_once = lambda: ran.set()
    periodic.start()
    try:
        assert ran.wait(5)
    finally:
        periodic.stop()
    assert not periodic._thread.is_alive()
