"""Live migration of a real guest with its volumes from one libvirt daemon
to another, a refused migration that rolls back, and a kill -9 of one
compute daemon alone.

The real daemons over RabbitMQ and PostgreSQL (the integration harness,
``running_deployment``), with the libvirt driver and the file volume
backend: compute1 on the libvirt of tools/start-libvirt.sh, compute2 on the
peer libvirt of tools/start-libvirt-peer.sh (its own mount namespace, state
and host UUID), compute3 on compute1's libvirt again, with an instance
directory of its own (a destination that libvirt refuses: the same host).

The tests run in file order on one guest: it boots on compute1, moves to
compute2, then stays there through the failed migration and the kill.
"""
import os
import shutil
import subprocess
import tempfile
import time
import uuid

import pytest

from tests.guest import conftest as guest_env
from tests.guest.test_data_path import _read, _volume, _write
from tests.integration import client as clients
from tests.integration import conftest as harness

WAIT = 120
ADMIN = "admin:admin:admin"


def _libvirt_uris():
    """(the first libvirt's URI as both daemons reach it, the peer's)."""
    result = subprocess.run(
        [os.path.join(guest_env.REPO, "tools", "start-libvirt-peer.sh")],
        capture_output=True, text=True)
    if result.returncode != 0:
        guest_env._unavailable("no second libvirt daemon: %s"
                               % result.stderr.strip())
    main, peer = result.stdout.strip().splitlines()[-2:]
    return main, peer


class Hosts:
    """The deployment, its clients and each compute's libvirt and
    instance directory."""

    def __init__(self, dep, image, uris, instances):
        self.dep = dep
        self.image = image
        self.uris = uris
        self.instances = instances
        self.api = clients.ComputeClient(dep.api_url, token=ADMIN,
                                         microversion="2.105")
        self.volumes = clients.VolumeClient(dep.volume_url)

    def guest(self, server_id, host):
        return guest_env.Guest(server_id, self.instances[host])

    def host_of(self, server_id):
        code, body, _ = self.api.show_server(server_id)
        assert code == 200, body
        return body["server"]["OS-EXT-SRV-ATTR:host"]

    def domains(self, host):
        """The uuids of the domains defined in ``host``'s libvirt."""
        out = subprocess.run(["virsh", "-c", self.uris[host], "list", "--all",
                              "--uuid"], capture_output=True, text=True,
                             check=True).stdout
        return set(out.split())


@pytest.fixture(scope="module")
def hosts(image_id, tmp_path_factory):
    image_dir, image = image_id
    main, peer = _libvirt_uris()
    uris = {"compute1": main, "compute2": peer, "compute3": main}
    work = tmp_path_factory.mktemp("live-migration")
    # a console socket's path must fit in 108 bytes: not under pytest's
    # tmp
    short = tempfile.mkdtemp(prefix="va-lm-")
    instances = {host: os.path.join(short, host) for host in uris}
    common = {
        "compute": {"virt_driver": "libvirt"},
        "libvirt": {"virt_type": "qemu", "image_dir": image_dir,
                    "max_memory_mb": 256,
                    "live_migration_inbound_addr": "127.0.0.1"},
    }

    def prepare(dep):
        for name, script in (("conductor", "volattach-conductor"),
                             ("api", "volattach-api")):
            dep.add_daemon(name, script, overrides=common)
        dep.add_daemon("volume", "volattach-volume", overrides={
            "volume": {"backend": "file", "backend_name": "file",
                       "export_port": guest_env._free_port()}})
        for host, uri in uris.items():
            dep.add_daemon(host, "volattach-compute", overrides={
                "compute": {"host": host, "virt_driver": "libvirt"},
                "libvirt": dict(common["libvirt"], connection_uri=uri,
                                instances_path=instances[host])})
        # start the API last, as the harness does
        dep.daemons["api"] = dep.daemons.pop("api")

    with harness.running_deployment(work, prepare=prepare) as dep:
        hosts = Hosts(dep, image, uris, instances)
        try:
            yield hosts
        finally:
            for server in (hosts.api.list_servers()[1] or {}).get(
                    "servers", []):
                hosts.api.delete_server(server["id"])
                hosts.api.wait_for_server_deleted(server["id"], timeout=WAIT)
            guest_env.stop_storage_daemon(str(work / "state"))
            shutil.rmtree(short, ignore_errors=True)


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
    devs = {}
    for volume_id, mode in ((rw, "rw"), (ro, "ro")):
        since = len(guest.text())
        code, body, _ = hosts.api.attach_volume(server_id, volume_id,
                                                attach_mode=mode)
        assert code == 202, (code, body)
        devs[mode] = guest.wait_disk(volume_id, since=since)[0]
        hosts.volumes.wait_for_volume_status(volume_id, "in-use")
    pattern = "before-%s" % uuid.uuid4().hex[:8]
    _write(guest, devs["rw"], pattern)
    # tmpfs: only a live guest keeps it
    assert guest.run("echo %s > /tmp/mark" % pattern)[0] == 0
    return {"id": server_id, "rw": rw, "ro": ro, "devs": devs,
            "pattern": pattern}


def _migrate(hosts, server_id, host):
    code, body, _ = hosts.api.request(
        "POST", "/servers/%s/action" % server_id,
        {"os-migrateLive": {"host": host, "block_migration": "auto"}})
    assert code == 202, (code, body)
    deadline = time.monotonic() + WAIT
    while True:
        code, body, _ = hosts.api.show_server(server_id)
        if body["server"]["OS-EXT-STS:task_state"] is None:
            return body["server"]
        assert time.monotonic() < deadline, body
        time.sleep(0.5)


def _attachments(hosts, volume_id):
    code, body, _ = hosts.volumes.show_volume(volume_id)
    assert code == 200, body
    return [(a["attachment_id"], a["host_name"])
            for a in body["volume"]["attachments"]]


def _migrations(hosts, server_id):
    code, body, _ = hosts.api.request(
        "GET", "/os-migrations", params={"instance_uuid": server_id},
        microversion="2.59")
    assert code == 200, body
    return body["migrations"]


def test_live_migration_to_another_libvirt_keeps_guest_and_volumes(
        hosts, server):
    server_id, devs = server["id"], server["devs"]
    assert hosts.host_of(server_id) == "compute1"
    source_dir = os.path.join(hosts.instances["compute1"], server_id)

    moved = _migrate(hosts, server_id, "compute2")
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
        rows = _attachments(hosts, volume_id)
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
    moved = _migrate(hosts, server_id, "compute1")
    assert moved["OS-EXT-SRV-ATTR:host"] == "compute1", moved
    before = {v: _attachments(hosts, v) for v in (server["rw"], server["ro"])}

    failed = _migrate(hosts, server_id, "compute3")
    assert failed["OS-EXT-SRV-ATTR:host"] == "compute1", failed
    assert failed["status"] == "ACTIVE", failed
    assert _migrations(hosts, server_id)[0]["status"] in ("failed", "error")
    # the guest still runs on compute1, with its volumes and attachments
    assert server_id in hosts.domains("compute1")
    guest = hosts.guest(server_id, "compute1")
    status, out = guest.run("cat /tmp/mark")
    assert status == 0 and server["pattern"] in out, out
    for volume_id, rows in before.items():
        assert _attachments(hosts, volume_id) == rows
    # nothing left in compute3's instance directory
    assert not os.path.exists(os.path.join(hosts.instances["compute3"],
                                           server_id))


def test_kill_9_of_one_compute_keeps_guest_and_disks(hosts, server):
    server_id, devs = server["id"], server["devs"]
    host = hosts.host_of(server_id)
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
        since = len(guest.text())
        code, body, _ = hosts.api.detach_volume(server_id, volume_id)
        assert code == 202, (code, body)
        guest.wait_disk(volume_id, present=False, since=since)
        hosts.volumes.wait_for_volume_status(volume_id, "available")
