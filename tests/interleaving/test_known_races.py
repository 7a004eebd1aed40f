"""The races the interleavings found, sent on purpose, round after round,
on the all-in-one deployment: an attach racing the delete of its server,
a detach racing a live migration of its server, and a live migration sent
with a detach of one volume and an async attach of another (issue 22: the
attach went to the migration's source and stayed there).  The
invariants are those of ``engine.py``; each round starts from a fresh
server and volume."""
import time

import pytest

from tests.interleaving import engine
from tests.interleaving import test_all_in_one

CONF_OVERRIDES = test_all_in_one.CONF_OVERRIDES
ROUNDS = 6


def _attach_then_delete(version):
    def batch(run, snap, server, volume):
        return [
            ("attach", "attach_%s(%s, %s)" % (version, server, volume),
             lambda c: c.api.attach_volume(server, volume,
                                           microversion=version)),
            ("delete_server", "delete_server(%s)" % server,
             lambda c: c.api.delete_server(server)),
        ]
    return batch


def _migrate_and_detach(run, snap, server, volume):
    status, body, _ = run.clients.api.attach_volume(server, volume,
                                                    microversion="2.1")
    assert status == 200, body
    run.clients.volumes.wait_for_volume_status(volume, "in-use")
    body = {"os-migrateLive": {"host": None, "block_migration": "auto"}}
    # the detach lands somewhere in the migration, a little later each
    # round: the window is a few milliseconds wide
    delay = (run.step_no % 8) * 0.004

    def detach(c):
        time.sleep(delay)
        return c.api.detach_volume(server, volume)
    return [
        ("live_migrate", "live_migrate(%s)" % server,
         lambda c: c.admin.request("POST", "/servers/%s/action" % server,
                                   body, microversion="2.25")),
        ("detach", "detach(%s, %s) after %.3fs" % (server, volume, delay),
         detach),
    ]


def _migrate_detach_and_attach(run, snap, server, volume):
    """The batch of a randomized check: a live migration, a detach of the
    server's volume and a 2.101 attach of another, the detach a little
    later each round."""
    clients = run.clients
    status, body, _ = clients.api.attach_volume(server, volume,
                                                microversion="2.1")
    assert status == 200, body
    clients.volumes.wait_for_volume_status(volume, "in-use")
    status, body, _ = clients.volumes.create_volume(
        size=1, name="il-%s-v" % run.tag)
    assert status == 202, body
    other = body["volume"]["id"]
    clients.volumes.wait_for_volume_status(other, "available")
    body = {"os-migrateLive": {"host": None, "block_migration": "auto"}}
    delay = (run.step_no % 6) * 0.005

    def detach(c):
        time.sleep(delay)
        return c.api.detach_volume(server, volume)
    return [
        ("attach_async", "attach_async(%s, %s)" % (server, other),
         lambda c: c.api.attach_volume(server, other, microversion="2.101")),
        ("live_migrate", "live_migrate(%s)" % server,
         lambda c: c.admin.request("POST", "/servers/%s/action" % server,
                                   body, microversion="2.25")),
        ("detach", "detach(%s, %s) after %.3fs" % (server, volume, delay),
         detach),
    ]


def _run(deployment, seed, batch, rounds=ROUNDS):
    run = engine.Run(deployment.api_url, deployment.volume_url, seed,
                     test_all_in_one._inproc_dry_run, servers=0, volumes=0,
                     settle_timeout=20)
    run.race(batch, rounds)
    print("race seed %s: %s\n  %s" % (seed, run.counts.line(),
                                       run.counts.operations_line()))
    assert run.counts.interleavings == rounds or run.violations
    return run




@pytest.mark.timeout(240)
@pytest.mark.parametrize("version", ["2.101", "2.37"])
def test_attach_racing_server_delete_leaves_nothing(deployment, version):
    run = _run(deployment, 1321, _attach_then_delete(version))
    assert not run.violations, run.describe_violations()


@pytest.mark.timeout(240)
def test_detach_racing_live_migration_leaves_nothing(deployment):
    run = _run(deployment, 1322, _migrate_and_detach, rounds=16)
    assert not run.violations, run.describe_violations()


@pytest.mark.timeout(240)
def test_attach_and_detach_racing_live_migration_leave_nothing(deployment):
    run = _run(deployment, 1323, _migrate_detach_and_attach, rounds=8)
    assert not run.violations, run.describe_violations()
