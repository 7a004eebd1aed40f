"""Guest-visible attach and detach latency with the libvirt driver.

Boots one test guest (tools/build-test-image.sh, TCG) under volattach-all
with the libvirt driver and the file volume backend (NBD exports), or with
``--backend rbd`` the rbd backend on the Ceph of tools/start-ceph.sh
(QEMU's rbd client), or with ``--backend iscsi`` the iscsi backend's tgt
targets (tools/start-tgt.sh; QEMU's libiscsi), then runs N cycles of
an asynchronous attach (microversion 2.101) and a detach of one volume,
and measures, reading the guest's serial console log directly (not the
API):

- attach: from the 202 of POST os-volume_attachments until the guest's
  init lists the disk (its serial) on the console;
- detach: from the 202 of DELETE until the guest no longer lists it.

The same cycles run against volattach-all with the fake driver and fake
backend for comparison (attach: until the API lists the attachment and the
volume is in-use; detach: until the volume is available), and the CPU
seconds per cycle of the volattach-all process are reported for both.

    .venv/bin/python -m benchmarks.guest_attach --cycles 30
    .venv/bin/python -m benchmarks.guest_attach --backend rbd --skip-fake

Needs what the guest tier needs (tools/start-libvirt.sh, the
volattach[libvirt] extra).  Prints a JSON summary.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import psutil

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from tests.guest import conftest as guest_env  # noqa: E402
from tests.integration import client as clients  # noqa: E402


def _pct(samples, p):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def _summary(samples):
    return {"n": len(samples), "p50": round(_pct(samples, 50), 3),
            "p95": round(_pct(samples, 95), 3),
            "mean": round(statistics.mean(samples), 3)}


def _cpu(proc):
    p = psutil.Process(proc.pid)
    t = p.cpu_times()
    return t.user + t.system


class FakeDeployment(guest_env.Deployment):
    """volattach-all on the fake driver and fake backend."""

    def __init__(self, tmp):
        super().__init__(tmp, tmp)
        with open(self.conf, "w") as f:
            f.write("[DEFAULT]\nstate_path = %s\n[api]\nport = %d\n"
                    "[cinder]\nendpoint = http://127.0.0.1:%d/v3\n"
                    "[volume]\nport = %d\n[all]\ncompute_hosts = compute1\n"
                    % (self.state, self.api_port, self.volume_port,
                       self.volume_port))


def _wait(predicate, timeout=60):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.01)


def _deployment(tmp, image_dir, backend):
    if backend == "rbd":
        from tests.guest import test_rbd
        reason = test_rbd.ceph_unavailable()
        if reason:
            sys.exit(reason)
        return test_rbd.RBDDeployment(tmp, image_dir)
    if backend == "iscsi":
        from tests.guest import test_iscsi
        reason = test_iscsi.tgt_unavailable()
        if reason:
            sys.exit(reason)
        return test_iscsi.ISCSIDeployment(tmp, image_dir)
    return guest_env.Deployment(tmp, image_dir)


def run_libvirt(cycles, image_dir, image, backend="file"):
    tmp = tempfile.mkdtemp(prefix="guest-bench-")
    d = _deployment(tmp, image_dir, backend)
    d.start()
    try:
        api = clients.ComputeClient(d.api_url, microversion="2.101")
        volumes = clients.VolumeClient(d.volume_url)
        (guest,) = guest_env.boot(api, d, image, ["bench"])
        code, body, _ = volumes.create_volume(size=1)
        volume_id = body["volume"]["id"]
        volumes.wait_for_volume_status(volume_id, "available")
        attach, detach = [], []
        cpu0 = _cpu(d.proc)
        for _ in range(cycles):
            since = len(guest.text())
            t0 = time.monotonic()
            code, _, _ = api.attach_volume(guest.id, volume_id)
            assert code == 202, code
            guest.wait_disk(volume_id, since=since, interval=0.005)
            attach.append(time.monotonic() - t0)
            volumes.wait_for_volume_status(volume_id, "in-use", interval=0.05)
            since = len(guest.text())
            t0 = time.monotonic()
            code, _, _ = api.detach_volume(guest.id, volume_id)
            assert code == 202, code
            guest.wait_disk(volume_id, present=False, since=since,
                            interval=0.005)
            detach.append(time.monotonic() - t0)
            volumes.wait_for_volume_status(volume_id, "available",
                                           interval=0.05)
            api.wait_for_volume_attachment_gone(guest.id, volume_id,
                                                interval=0.05)
        cpu = _cpu(d.proc) - cpu0
        api.delete_server(guest.id)
        api.wait_for_server_deleted(guest.id)
        volumes.delete_volume(volume_id)        # an rbd image goes too
        volumes.wait_for_volume_deleted(volume_id)
        return {"backend": backend,
                "attach_to_guest_s": _summary(attach),
                "detach_to_guest_s": _summary(detach),
                "cpu_s_per_cycle": round(cpu / cycles, 4)}
    finally:
        d.stop()
        d.stop_storage_daemon()


def run_fake(cycles):
    d = FakeDeployment(tempfile.mkdtemp(prefix="guest-bench-fake-"))
    d.start()
    try:
        api = clients.ComputeClient(d.api_url, microversion="2.101")
        volumes = clients.VolumeClient(d.volume_url)
        code, body, _ = api.create_server(name="bench", image_ref=clients.DEFAULT_IMAGE)
        server_id = body["server"]["id"]
        api.wait_for_server_status(server_id, "ACTIVE")
        code, body, _ = volumes.create_volume(size=1)
        volume_id = body["volume"]["id"]
        volumes.wait_for_volume_status(volume_id, "available")

        def status():
            return volumes.show_volume(volume_id)[1]["volume"]["status"]

        attach, detach = [], []
        cpu0 = _cpu(d.proc)
        for _ in range(cycles):
            t0 = time.monotonic()
            code, body, _ = api.attach_volume(server_id, volume_id)
            assert code == 202, (code, body)
            _wait(lambda: status() == "in-use")
            attach.append(time.monotonic() - t0)
            t0 = time.monotonic()
            assert api.detach_volume(server_id, volume_id)[0] == 202
            _wait(lambda: status() == "available")
            detach.append(time.monotonic() - t0)
            # the server's mapping goes just after the volume is available
            api.wait_for_volume_attachment_gone(server_id, volume_id,
                                                interval=0.01)
        cpu = _cpu(d.proc) - cpu0
        return {"attach_to_in_use_s": _summary(attach),
                "detach_to_available_s": _summary(detach),
                "cpu_s_per_cycle": round(cpu / cycles, 4)}
    finally:
        d.stop()


def add_image_dir_argument(parser):
    parser.add_argument("--image-dir", default=os.environ.get(
        "VOLATTACH_TEST_IMAGE_DIR", os.path.join(REPO, ".ci-state", "images")))


def first_image(image_dir):
    """The id of the guest tier's test image under ``image_dir`` (built
    there when it has none of the current generation)."""
    return guest_env.current_image(image_dir)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cycles", type=int, default=30)
    add_image_dir_argument(parser)
    parser.add_argument("--backend", choices=["file", "rbd", "iscsi"],
                        default="file",
                        help="volume backend of the libvirt run: file "
                             "(NBD), rbd (Ceph, tools/start-ceph.sh) or "
                             "iscsi (tgt, tools/start-tgt.sh)")
    parser.add_argument("--skip-fake", action="store_true")
    parser.add_argument("--skip-libvirt", action="store_true")
    args = parser.parse_args(argv)
    image = first_image(args.image_dir)
    result = {"cycles": args.cycles}
    if not args.skip_libvirt:
        result["libvirt"] = run_libvirt(args.cycles, args.image_dir, image,
                                        args.backend)
        print(json.dumps(result), file=sys.stderr, flush=True)
    if not args.skip_fake:
        result["fake"] = run_fake(args.cycles)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
