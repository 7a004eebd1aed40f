"""Attachment API latency: volattach's volume service vs a real Cinder 29.0.0.

    .venv/bin/python benchmarks/cinder_latency.py [--cycles 50] [--warmup 5]

Starts both services on loopback, each in its own process with one worker
and logging at INFO (no debug):

* volattach: ``volattach-volume`` (gunicorn, 1 gthread worker) on a temporary
  SQLite database;
* real Cinder: ``tools/real-cinder/run_cinder.py`` (api + scheduler + volume
  in one eventlet process, SQLite, the fake driver), installed first by
  ``tools/real-cinder/setup.sh`` when needed; once per transport of
  ``--cinder-transports``.  ``fake:/`` (oslo.messaging in memory, what the
  conformance tests use) polls its queues every 50 ms, and Cinder's update
  and delete make an RPC call from the API to the volume service, so they
  pay that; over RabbitMQ (``rabbit://...``, the default adds
  ``$VOLATTACH_TEST_RABBIT_URL`` when it is set, as scripts/test sets it)
  real Cinder runs as it does in production.

Then, with ONE client for both (a ``requests.Session``, the same token,
headers and bodies; microversion 3.54), it runs ``--warmup`` unmeasured and
``--cycles`` measured attach cycles on one volume per service, alternating
the services cycle by cycle so that machine noise hits both alike.  A cycle:

    create    POST   /attachments            reserve, no connector  -> 200
    update    PUT    /attachments/{id}       connector (mode rw)    -> 200
    complete  POST   /attachments/{id}/action os-complete            -> 204
    delete    DELETE /attachments/{id}       X-Service-Roles: service -> 200

Each call's wall-clock latency is measured around the HTTP request.  Prints
median, p95 (nearest rank) and mean per call per service, and writes every
sample to ``benchmarks/results/cinder_latency-<UTC time>.json``.
"""
import argparse
import contextlib
import datetime
import json
import math
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

import requests  # noqa: E402

from tests.conformance import real_cinder  # noqa: E402

PROJECT_ID = real_cinder.PROJECT_ID
TOKEN = "bench:%s" % PROJECT_ID
MV = "3.54"
CALLS = ("create", "update", "complete", "delete")
CONNECTOR = {"initiator": "iqn.1993-08.org.debian:01:cad181614cec",
             "ip": "127.0.0.1", "platform": "x86_64", "host": "compute-1",
             "os_type": "linux", "multipath": False, "mountpoint": "/dev/vdb",
             "mode": "rw"}


class Client:
    """The one client: a requests.Session speaking Cinder v3."""

    def __init__(self, root_url):
        self.base = "%s/v3/%s" % (root_url, PROJECT_ID)
        self.session = requests.Session()
        self.session.trust_env = False
        self.headers = {"X-Auth-Token": TOKEN, "Accept": "application/json",
                        "Content-Type": "application/json",
                        "OpenStack-API-Version": "volume %s" % MV}

    def call(self, method, path, body=None, expect=200, headers=None):
        """(seconds, decoded body) of one request; raises on a surprise."""
        all_headers = dict(self.headers, **(headers or {}))
        data = None if body is None else json.dumps(body)
        start = time.perf_counter()
        resp = self.session.request(method, self.base + path, data=data,
                                    headers=all_headers, timeout=60)
        elapsed = time.perf_counter() - start
        if resp.status_code != expect:
            raise RuntimeError("%s %s: %d (expected %d) %s" % (
                method, path, resp.status_code, expect, resp.text[:500]))
        return elapsed, (resp.json() if resp.content else None)

    def new_volume(self):
        _, body = self.call("POST", "/volumes", {"volume": {
            "size": 1, "name": "bench-%s" % uuid.uuid4().hex[:6]}},
            expect=202)
        volume_id = body["volume"]["id"]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            _, body = self.call("GET", "/volumes/%s" % volume_id)
            if body["volume"]["status"] == "available":
                return volume_id
            time.sleep(0.1)
        raise RuntimeError("volume %s never became available" % volume_id)

    def cycle(self, volume_id, instance_id):
        """One attach cycle; returns {call: seconds}."""
        times = {}
        times["create"], body = self.call("POST", "/attachments", {
            "attachment": {"volume_uuid": volume_id,
                           "instance_uuid": instance_id}})
        attachment_id = body["attachment"]["id"]
        path = "/attachments/%s" % attachment_id
        times["update"], _ = self.call(
            "PUT", path, {"attachment": {"connector": CONNECTOR}})
        times["complete"], _ = self.call(
            "POST", path + "/action", {"os-complete": None}, expect=204)
        times["delete"], _ = self.call(
            "DELETE", path, headers={"X-Service-Roles": "service"})
        return times


def start_volattach(state_dir):
    """volattach-volume in a subprocess; returns (root URL, Popen)."""
    port = real_cinder.free_port()
    conf = os.path.join(state_dir, "volattach.conf")
    with open(conf, "w") as f:
        f.write("[DEFAULT]\nstate_path = %s\n\n[volume]\nlisten = 127.0.0.1\n"
                "port = %d\nworkers = 1\nconnection = sqlite:///%s\n"
                % (state_dir, port, os.path.join(state_dir, "volume.sqlite")))
    exe = os.path.join(os.path.dirname(sys.executable), "volattach-volume")
    log = open(os.path.join(state_dir, "volattach-volume.log"), "w")
    proc = subprocess.Popen([exe, "--config-file", conf], stdout=log,
                            stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    url = "http://127.0.0.1:%d" % port
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            if requests.get(url + "/", timeout=2).status_code < 500:
                return url, proc
        except requests.RequestException:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError("volattach-volume did not start; see %s" % log.name)


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def percentile(samples, fraction):
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def summarize(samples):
    return {service: {call: {
        "n": len(values),
        "median_ms": statistics.median(values) * 1000,
        "p95_ms": percentile(values, 0.95) * 1000,
        "mean_ms": statistics.fmean(values) * 1000,
    } for call, values in calls.items()} for service, calls in
        samples.items()}


def print_table(summary, cycles):
    services = list(summary)
    print("\nattachment API latency, %d cycles per service (ms)" % cycles)
    print("%-9s" % "" + "".join("  %-26s" % s for s in services))
    print("%-9s" % "call" + "".join("  %-26s" % "median / p95"
                                    for _ in services))
    for call in CALLS:
        row = "%-9s" % call
        for service in services:
            stats = summary[service][call]
            row += "  %-26s" % ("%7.2f / %7.2f" % (stats["median_ms"],
                                                    stats["p95_ms"]))
        print(row)


def git_revision():
    try:
        return subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"],
                              capture_output=True, text=True,
                              timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    default_transports = ["fake:/"]
    if os.environ.get("VOLATTACH_TEST_RABBIT_URL"):
        default_transports.append(os.environ["VOLATTACH_TEST_RABBIT_URL"])
    parser.add_argument("--cinder-transports", default=",".join(
        default_transports), help="comma-separated oslo.messaging URLs; one "
        "real Cinder per URL (default: %(default)s)")
    parser.add_argument("--output", default=None,
                        help="JSON file (default benchmarks/results/"
                             "cinder_latency-<time>.json)")
    args = parser.parse_args(argv)

    def unavailable(message):
        raise SystemExit("real Cinder unavailable: %s" % message)

    transports = [t for t in args.cinder_transports.split(",") if t]
    state = tempfile.mkdtemp(prefix="cinder-latency-")
    with contextlib.ExitStack() as stack:
        volattach_url, volattach_proc = start_volattach(state)
        stack.callback(stop, volattach_proc)
        clients = {"volattach": Client(volattach_url)}
        for transport in transports:
            cinder_dir = os.path.join(state, "cinder-%d" % len(clients))
            os.makedirs(cinder_dir)
            cinder_url = stack.enter_context(real_cinder.start_real_cinder(
                cinder_dir, on_unavailable=unavailable,
                transport_url=transport))
            clients["cinder-29 %s" % transport.split(":")[0]] = Client(
                cinder_url)
        volumes = {name: c.new_volume() for name, c in clients.items()}
        instance = str(uuid.uuid4())
        samples = {name: {call: [] for call in CALLS} for name in clients}
        for i in range(args.warmup + args.cycles):
            for name, client in clients.items():
                times = client.cycle(volumes[name], instance)
                if i >= args.warmup:
                    for call, seconds in times.items():
                        samples[name][call].append(seconds)

    summary = summarize(samples)
    print_table(summary, args.cycles)
    result = {
        "benchmark": "cinder_latency",
        "time": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "command": re.sub(r"//[^/@\s]*@", "//", " ".join(
            [os.path.relpath(sys.argv[0], REPO)]
            + (sys.argv[1:] if argv is None else argv))),
        "cycles": args.cycles, "warmup": args.warmup,
        "microversion": MV,
        "machine": {"python": platform.python_version(),
                    "cpus": os.cpu_count(), "platform": platform.platform()},
        "volattach_revision": git_revision(),
        "services": dict(
            {"volattach": "volattach-volume (gunicorn, 1 gthread worker), "
                          "SQLite"},
            **{"cinder-29 %s" % t.split(":")[0]:
               "cinder 29.0.0: api+scheduler+volume in one process "
               "(eventlet), SQLite, fake driver, transport %s"
               % t.split("@")[-1] for t in transports}),
        "summary": summary,
        "samples_ms": {s: {c: [v * 1000 for v in values]
                           for c, values in calls.items()}
                       for s, calls in samples.items()},
    }
    output = args.output or os.path.join(
        REPO, "benchmarks", "results", "cinder_latency-%s.json"
        % datetime.datetime.now(datetime.timezone.utc).strftime(
            "%Y%m%dT%H%M%SZ"))
    os.makedirs(os.path.dirname(output), exist_ok=True)
    with open(output, "w") as f:
        json.dump(result, f, indent=2)
    print("\nwritten: %s" % os.path.relpath(output, REPO))
    return 0


if __name__ == "__main__":
    sys.exit(main())
