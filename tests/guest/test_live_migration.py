"""Live migration of a real guest with its volumes from one libvirt daemon
to another, a refused migration that rolls back, and a kill -9 of one
compute daemon alone.

The real daemons over RabbitMQ and PostgreSQL (``conftest.libvirt_daemons``),
with the libvirt driver and the file volume backend: compute1 on the
libvirt of tools/start-libvirt.sh, compute2 on the peer libvirt of
tools/start-libvirt-peer.sh (its own mount namespace, state and host
UUID), compute3 on compute1's libvirt again, with an instance directory
of its own (a destination that libvirt refuses: the same host).

The tests run in file order on one guest: it boots on compute1, moves to
compute2 and back, fails to move to compute3, sees compute1's daemon
killed under it, then moves paused.
"""
import os
import subprocess
import time
import uuid

import pytest

from tests.guest import conftest as guest_env
from tests.guest.test_data_path import (_attach, _detach, _read, _volume,
                                        _write)

WAIT = guest_env.WAIT


@pytest.fixture(scope="module")
def hosts(image_id, tmp_path_factory):
    image_dir, image = image_id
    with guest_env.libvirt_daemons(
            str(tmp_path_factory.mktemp("live-migration")), image_dir,
            image, libvirts=("main", "peer", "main")) as hosts:
        yield hosts


@pytest.fixture(scope="module")
def server(hosts):
    """A guest booted on compute1 with a read-write and a read-only
    volume, a pattern written on the first and a mark in its memory."""
    code, body, _ = hosts.api.create_server(
        name="lm-guest", image_ref=hosts.image, flavor_ref="1",
        availability_zone="nova:compute1", config_drive=True)
    assert code == 202, (code, body)
    server_id = body["server"]["id"]
    hosts.api.wait_for_server_status(server_id, "ACTIVE", timeout=WAIT)
    guest = hosts.guest(server_id, "compute1")
    guest.wait_for("VA-READY", timeout=guest_env.BOOT_TIMEOUT)
    rw, ro = _volume(hosts.volumes), _volume(hosts.volumes)
    devs = {mode: _attach(hosts.api, hosts.volumes, guest, volume_id, mode)[0]
            for volume_id, mode in ((rw, "rw"), (ro, "ro"))}
    pattern = "before-%s" % uuid.uuid4().hex[:8]
    _write(guest, devs["rw"], pattern)
    # tmpfs: only a live guest keeps it
    assert guest.run("echo %s > /tmp/mark" % pattern)[0] == 0
    return {"id": server_id, "rw": rw, "ro": ro, "devs": devs,
            "pattern": pattern}


def _migrations(hosts, server_id):
    code, body, _ = hosts.api.request(
        "GET", "/os-migrations", params={"instance_uuid": server_id},
        microversion="2.59")
    assert code == 200, body
    return body["migrations"]


def test_live_migration_to_another_libvirt_keeps_guest_and_volumes(
        hosts, server):
    server_id, devs = server["id"], server["devs"]
    assert hosts.api.server_host(server_id) == "compute1"
    source_dir = os.path.join(hosts.instances["compute1"], server_id)

    moved = hosts.api.live_migrate(server_id, "compute2", timeout=WAIT)
    assert moved["OS-EXT-SRV-ATTR:host"] == "compute2", moved
    assert moved["status"] == "ACTIVE"
    assert [m["status"] for m in _migrations(hosts, server_id)] \
        == ["completed"]
    # the domain left the first libvirt and its files went with it
    assert server_id not in hosts.domains("compute1")
    assert server_id in hosts.domains("compute2")
    assert not os.path.exists(source_dir)

    guest = hosts.guest(server_id, "compute2")
    # the same running guest: its memory came along
    status, out = guest.run("cat /tmp/mark")
    assert status == 0 and server["pattern"] in out, out
    # the volumes, their data and their modes
    assert server["pattern"] in _read(guest, devs["rw"],
                                      len(server["pattern"]))
    for mode, ro in (("rw", "0"), ("ro", "1")):
        assert guest.run("cat /sys/block/%s/ro" % devs[mode])[1].strip() \
            == ro
    after = "after-%s" % uuid.uuid4().hex[:8]
    _write(guest, devs["rw"], after)
    assert after in _read(guest, devs["rw"], len(after))
    status, out = guest.run("echo x | dd of=/dev/%s bs=512 seek=2048 "
                            "count=1 conv=sync" % devs["ro"])
    assert status != 0 and "Operation not permitted" in out, out
    # one attachment per volume, on the destination
    for volume_id in (server["rw"], server["ro"]):
        rows = hosts.volumes.attachment_hosts(volume_id)
        assert [host for _, host in rows] == ["compute2"], rows
    # the console through the API is the destination's
    code, body, _ = hosts.api.request(
        "POST", "/servers/%s/action" % server_id,
        {"os-getConsoleOutput": {"length": 20}})
    assert code == 200 and "VA-END" in body["output"], (code, body)


def test_a_migration_libvirt_refuses_rolls_back(hosts, server):
    """Back to compute1 (the other direction), then to compute3, which
    shares compute1's libvirt: libvirt refuses a migration to the host it
    comes from, and the guest stays where it runs, as it was."""
    server_id = server["id"]
    # back to compute1 first (the other direction works too)
    moved = hosts.api.live_migrate(server_id, "compute1", timeout=WAIT)
    assert moved["OS-EXT-SRV-ATTR:host"] == "compute1", moved
    before = {v: hosts.volumes.attachment_hosts(v)
              for v in (server["rw"], server["ro"])}

    failed = hosts.api.live_migrate(server_id, "compute3", timeout=WAIT)
    assert failed["OS-EXT-SRV-ATTR:host"] == "compute1", failed
    assert failed["status"] == "ACTIVE", failed
    assert _migrations(hosts, server_id)[0]["status"] in ("failed", "error")
    # the guest still runs on compute1, with its volumes and attachments
    assert server_id in hosts.domains("compute1")
    guest = hosts.guest(server_id, "compute1")
    status, out = guest.run("cat /tmp/mark")
    assert status == 0 and server["pattern"] in out, out
    for volume_id, rows in before.items():
        assert hosts.volumes.attachment_hosts(volume_id) == rows
    # nothing left in compute3's instance directory
    assert not os.path.exists(os.path.join(hosts.instances["compute3"],
                                           server_id))


def test_kill_9_of_one_compute_keeps_guest_and_disks(hosts, server):
    server_id, devs = server["id"], server["devs"]
    host = hosts.api.server_host(server_id)
    guest = hosts.guest(server_id, host)
    hosts.dep.kill(host)
    since = time.time()
    hosts.dep.start(host)
    hosts.dep.wait_until_ready(fresh=host, since=since)
    # the guest kept running with its disks
    status, out = guest.run("cat /tmp/mark")
    assert status == 0 and server["pattern"] in out, out
    for mode in ("rw", "ro"):
        assert guest.run("cat /sys/block/%s/serial" % devs[mode])[1].strip() \
            == server[mode][:20]
    # and detach works
    for volume_id in (server["rw"], server["ro"]):
        _detach(hosts.api, guest, volume_id)
        hosts.volumes.wait_for_volume_status(volume_id, "available")


def test_a_paused_guest_arrives_paused(hosts, server):
    server_id = server["id"]
    source = hosts.api.server_host(server_id)
    dest = "compute2" if source == "compute1" else "compute1"
    code, body, _ = hosts.api.request(
        "POST", "/servers/%s/action" % server_id, {"pause": None})
    assert code == 202, (code, body)
    hosts.api.wait_for_server_status(server_id, "PAUSED", timeout=WAIT)

    moved = hosts.api.live_migrate(server_id, dest, timeout=WAIT)
    assert (moved["OS-EXT-SRV-ATTR:host"], moved["status"]) \
        == (dest, "PAUSED"), moved
    state = subprocess.run(["virsh", "-c", hosts.uris[dest], "domstate",
                            server_id], capture_output=True, text=True,
                           check=True).stdout.strip()
    assert state == "paused", state

    code, body, _ = hosts.api.request(
        "POST", "/servers/%s/action" % server_id, {"unpause": None})
    assert code == 202, (code, body)
    hosts.api.wait_for_server_status(server_id, "ACTIVE", timeout=WAIT)
    status, out = hosts.guest(server_id, dest).run("cat /tmp/mark")
    assert status == 0 and server["pattern"] in out, out
