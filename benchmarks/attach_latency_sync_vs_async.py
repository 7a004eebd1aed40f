"""Attach POST latency: synchronous (2.100) vs asynchronous (2.101) attach.

    .venv/bin/python benchmarks/attach_latency_sync_vs_async.py \
        [--count 10] [--reserve-latency 1.0] [--json FILE]

Starts the all-in-one deployment in this process (``volattach-all``'s
``AllInOne``: API, conductor, two computes and the volume service over the
in-memory transport, SQLite in a temporary directory, the compute API and
the volume service over real HTTP on loopback) with ``[fake_driver]
reserve_latency`` seconds spent by the compute choosing a device name
(reserve_block_device_name), creates one server, then for each
microversion attaches ``--count`` fresh volumes one after the other and
measures the wall-clock time of the POST only (request sent -> answer
read):

* 2.100: 200 once the conductor's call returns: reserve on the compute,
  Cinder attachment create/update, plug, complete;
* 2.101: 202 as soon as the API has checked the request and cast the
  workflow to the conductor.

Between two POSTs it waits until the previous attach is finished (the
volume in-use, the device listed), so that each POST starts on an idle
deployment.  Prints every sample and the median per microversion.
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

import volattach  # noqa: E402,F401
from tests import utils  # noqa: E402
from tests.integration import client as clients  # noqa: E402
from volattach.conf import CONF  # noqa: E402

TOKEN = "bench:bench-project"
VERSIONS = ("2.100", "2.101")


def _log(message):
    print(message, file=sys.stderr, flush=True)


def _configure(state_path, reserve_latency):
    CONF([], project="volattach", default_config_files=[])
    api_port, volume_port = utils.free_port(), utils.free_port()
    for group, name, value in (
            (None, "state_path", state_path),
            ("database", "connection", "sqlite:///%s/volattach.sqlite" % state_path),
            ("volume", "connection", "sqlite:///%s/volume.sqlite" % state_path),
            ("api", "port", api_port),
            ("volume", "port", volume_port),
            ("cinder", "endpoint", "http://127.0.0.1:%d/v3" % volume_port),
            ("fake_driver", "reserve_latency", reserve_latency)):
        CONF.set_override(name, value, group=group)
    return "http://127.0.0.1:%d" % api_port, "http://127.0.0.1:%d" % volume_port


def _wait(what, check, timeout=60.0, interval=0.05):
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError("timed out waiting for %s" % what)
        time.sleep(interval)


def _volume_status(volumes, volume_id):
    return volumes.show_volume(volume_id)[1]["volume"]["status"]


def measure(api, volumes, server_id, version, count):
    """``count`` attach POST latencies (seconds) at ``version``."""
    samples = []
    for _ in range(count):
        code, body, _ = volumes.create_volume(size=1)
        assert code == 202, body
        volume_id = body["volume"]["id"]
        _wait("volume available",
              lambda: _volume_status(volumes, volume_id) == "available")
        start = time.perf_counter()
        code, body, _ = api.attach_volume(server_id, volume_id,
                                          microversion=version)
        samples.append(time.perf_counter() - start)
        expected = 202 if version == "2.101" else 200
        assert code == expected, (version, code, body)

        def attached():
            listed = api.list_volume_attachments(server_id,
                                                 microversion=version)[1]
            return (_volume_status(volumes, volume_id) == "in-use" and any(
                a["volumeId"] == volume_id and a.get("device")
                for a in listed["volumeAttachments"]))
        _wait("attach of %s finished" % volume_id, attached)
    return samples


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=10,
                        help="attach POSTs per microversion (default 10)")
    parser.add_argument("--reserve-latency", type=float, default=1.0,
                        help="[fake_driver] reserve_latency in seconds "
                             "(default 1.0)")
    parser.add_argument("--json", help="also write the samples to this file")
    args = parser.parse_args(argv)

    from volattach.db import engine as db_engine
    from volattach.cmd.all import AllInOne

    with tempfile.TemporaryDirectory(prefix="va-attach-bench-") as state:
        api_url, volume_url = _configure(state, args.reserve_latency)
        db_engine.dispose_all()
        _log("starting the all-in-one deployment (reserve_latency %.2fs)"
             % args.reserve_latency)
        deployment = AllInOne(CONF).start()
        api = clients.ComputeClient(api_url, TOKEN, microversion=None)
        volumes = clients.VolumeClient(volume_url, TOKEN)
        try:
            code, body, _ = api.create_server(name="bench", networks="none",
                                              microversion="2.37")
            assert code == 202, body
            server_id = body["server"]["id"]
            api.wait_for_server_status(server_id, "ACTIVE", interval=0.1)
            results = {}
            for version in VERSIONS:
                _log("measuring %d attach POSTs at %s" % (args.count, version))
                results[version] = measure(api, volumes, server_id, version,
                                           args.count)
        finally:
            api.close()
            volumes.close()
            deployment.stop()
            db_engine.dispose_all()

    print("attach POST latency, [fake_driver] reserve_latency = %.2f s, "
          "%d POSTs per microversion" % (args.reserve_latency, args.count))
    for version in VERSIONS:
        samples = results[version]
        print("  %-6s median %7.1f ms   min %7.1f ms   max %7.1f ms   "
              "samples (ms): %s" % (
                  version, statistics.median(samples) * 1000,
                  min(samples) * 1000, max(samples) * 1000,
                  " ".join("%.1f" % (s * 1000) for s in samples)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"reserve_latency": args.reserve_latency,
                       "count": args.count,
                       "samples_seconds": results,
                       "median_seconds": {v: statistics.median(s)
                                          for v, s in results.items()}},
                      f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
