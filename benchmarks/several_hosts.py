"""Attach across hosts: the latency of an attach whose volume service and
compute are on different hosts, in the several-hosts topology of
tests/several_hosts (controller and two computes in network namespaces
of their own, the real daemons over RabbitMQ and PostgreSQL, NBD over TLS
from the controller's address to each compute's).

Boots one guest on compute1 and one on compute2, then runs N cycles, on
each guest in turn, of an asynchronous attach (microversion 2.101) of a
fresh 1 GiB volume and its detach, and measures, reading the guest's
serial console log directly (not the API):

- attach: from the 202 of POST os-volume_attachments until the guest's
  init lists the disk (its serial) on the console;
- detach: from the 202 of DELETE until the guest no longer lists it.

    .venv/bin/python -m benchmarks.several_hosts --cycles 10 [--no-tls]

Needs root and what the tier needs (tests/several_hosts/README.md).
Prints a JSON summary, with the set-up phases' seconds.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from tests.guest import conftest as guest_env  # noqa: E402
from tests.guest.test_data_path import _volume  # noqa: E402
from tests.several_hosts import topology  # noqa: E402


def _pct(samples, p):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1,
                       int(round(p / 100 * (len(ordered) - 1))))]


def _summary(samples):
    return {"n": len(samples), "p50": round(_pct(samples, 50), 3),
            "p95": round(_pct(samples, 95), 3),
            "mean": round(statistics.mean(samples), 3)}


def _image(image_dir):
    from tests.guest import conftest as guest_env
    return guest_env.current_image(image_dir)


def _cycle(hosts, guest):
    """(attach seconds, detach seconds) of one fresh volume on ``guest``."""
    api, volumes = hosts.api, hosts.volumes
    volume_id = _volume(volumes)
    since = len(guest.text())
    started = time.monotonic()
    code, body, _ = api.attach_volume(guest.id, volume_id,
                                      microversion="2.101")
    assert code == 202, (code, body)
    guest.wait_disk(volume_id, since=since, timeout=60)
    attach = time.monotonic() - started
    volumes.wait_for_volume_status(volume_id, "in-use")
    since = len(guest.text())
    started = time.monotonic()
    code, body, _ = api.detach_volume(guest.id, volume_id)
    assert code == 202, (code, body)
    guest.wait_disk(volume_id, present=False, since=since, timeout=60)
    detach = time.monotonic() - started
    api.wait_for_volume_attachment_gone(guest.id, volume_id)
    volumes.wait_for_volume_status(volume_id, "available")
    code, body, _ = volumes.delete_volume(volume_id)
    assert code == 202, (code, body)
    return attach, detach


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--no-tls", action="store_true",
                        help="plain NBD ([volume] allow_insecure_nbd), to "
                             "see what TLS costs")
    parser.add_argument("--image-dir", default=os.environ.get(
        "VOLATTACH_TEST_IMAGE_DIR",
        os.path.join(REPO, ".ci-state", "images")))
    args = parser.parse_args(argv)
    args.image_dir = os.path.abspath(args.image_dir)
    image = _image(args.image_dir)
    result = {"cycles": args.cycles, "nbd_tls": not args.no_tls}
    with tempfile.TemporaryDirectory(prefix="va-bench-sh-") as work:
        started = time.monotonic()
        with topology.several_hosts(work, args.image_dir, image,
                                    nbd_tls=not args.no_tls) as hosts:
            result["setup_seconds"] = phases = hosts.timings
            booted = time.monotonic()
            guests = hosts.boot(("bench-a", "compute1"),
                                ("bench-b", "compute2"))
            phases["boot two guests"] = round(
                time.monotonic() - booted, 1)
            attaches, detaches = [], []
            for i in range(args.cycles):
                attach, detach = _cycle(hosts, guests[i % 2])
                attaches.append(attach)
                detaches.append(detach)
            result["attach_202_to_guest_sees_disk_s"] = _summary(attaches)
            result["detach_202_to_disk_gone_s"] = _summary(detaches)
            stopping = time.monotonic()
        phases["teardown"] = round(
            time.monotonic() - stopping, 1)
        result["total_seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    guest_env.BOOT_TIMEOUT = max(guest_env.BOOT_TIMEOUT, 180)
    main()
