"""Live migration of a real guest with volumes between two libvirt daemons.

The real daemons over RabbitMQ and PostgreSQL (``tests/guest/conftest.py``
``libvirt_daemons``: compute1 on the libvirt of tools/start-libvirt.sh,
compute2 on the one of tools/start-libvirt-peer.sh), one TCG test guest
(256 MiB) with a read-write and a read-only volume, migrated N times back
and forth.  Per migration:

- api: from the 202 of os-migrateLive until the server's task_state is
  None again (the conductor's whole workflow: destination attachments,
  pre_live_migration, libvirt's migration, the switch);
- libvirt: the migration job as the destination's libvirt recorded it
  (``virDomainGetJobStats``, completed job): total time and the guest's
  downtime.

The same migrations with the fake driver (the daemons' default computes)
give the workflow's own cost.

    .venv/bin/python -m benchmarks.guest_live_migration --migrations 10

Needs the guest tier's packages, RabbitMQ and PostgreSQL
(``VOLATTACH_TEST_RABBIT_URL``/``VOLATTACH_TEST_PG_URL``, as scripts/test
sets them).  Prints a JSON summary.
"""
import argparse
import json
import os
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from benchmarks import guest_attach  # noqa: E402
from tests.guest import conftest as guest_env  # noqa: E402
from tests.integration import client as clients  # noqa: E402
from tests.integration import conftest as harness  # noqa: E402


def _volume(volumes):
    code, body, _ = volumes.create_volume(size=1)
    assert code == 202, (code, body)
    volumes.wait_for_volume_status(body["volume"]["id"], "available")
    return body["volume"]["id"]


def _server_with_volumes(hosts, **fields):
    """An ACTIVE server on compute1 with a read-write and a read-only
    volume attached; its id."""
    code, body, _ = hosts.api.create_server(
        name="lm-bench", availability_zone="nova:compute1", **fields)
    assert code == 202, (code, body)
    server_id = body["server"]["id"]
    hosts.api.wait_for_server_status(server_id, "ACTIVE")
    for mode in ("rw", "ro"):
        volume_id = _volume(hosts.volumes)
        code, body, _ = hosts.api.attach_volume(server_id, volume_id,
                                                attach_mode=mode)
        assert code == 202, (code, body)
        hosts.volumes.wait_for_volume_status(volume_id, "in-use")
    return server_id


def _migrate(hosts, server_id, host, api_times):
    t0 = time.monotonic()
    server = hosts.api.live_migrate(server_id, host,
                                    timeout=guest_env.WAIT)
    api_times.append(time.monotonic() - t0)
    assert server["OS-EXT-SRV-ATTR:host"] == host, server


def run_libvirt(migrations, image_dir, image):
    import libvirt
    work = tempfile.mkdtemp(prefix="lm-bench-")
    with guest_env.libvirt_daemons(work, image_dir, image) as hosts:
        server_id = _server_with_volumes(hosts, image_ref=image)
        hosts.guest(server_id, "compute1").wait_for(
            "VA-READY", timeout=guest_env.BOOT_TIMEOUT)
        api_times, total, downtime = [], [], []
        for i in range(migrations):
            dest = "compute2" if i % 2 == 0 else "compute1"
            _migrate(hosts, server_id, dest, api_times)
            conn = libvirt.open(hosts.uris[dest])
            try:
                stats = conn.lookupByUUIDString(server_id).jobStats(
                    libvirt.VIR_DOMAIN_JOB_STATS_COMPLETED)
            finally:
                conn.close()
            total.append(stats.get("time_elapsed", 0) / 1000.0)
            downtime.append(stats.get("downtime", 0) / 1000.0)
        return {"api_s": guest_attach._summary(api_times),
                "libvirt_job_s": guest_attach._summary(total),
                "guest_downtime_s": guest_attach._summary(downtime)}


def run_fake(migrations):
    work = tempfile.mkdtemp(prefix="lm-bench-fake-")
    with harness.running_deployment(work) as dep:
        hosts = guest_env.LibvirtHosts(dep, clients.DEFAULT_IMAGE, {}, {})
        server_id = _server_with_volumes(hosts)
        api_times = []
        for i in range(migrations):
            _migrate(hosts, server_id,
                     "compute2" if i % 2 == 0 else "compute1", api_times)
        return {"api_s": guest_attach._summary(api_times)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--migrations", type=int, default=10)
    guest_attach.add_image_dir_argument(parser)
    parser.add_argument("--skip-fake", action="store_true")
    args = parser.parse_args(argv)
    result = {"migrations": args.migrations,
              "libvirt": run_libvirt(args.migrations, args.image_dir,
                                     guest_attach.first_image(args.image_dir))}
    print(json.dumps(result), file=sys.stderr, flush=True)
    if not args.skip_fake:
        result["fake"] = run_fake(args.migrations)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
