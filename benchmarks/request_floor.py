"""What one read request costs a client when nothing else runs.

``python -m benchmarks.request_floor --tree base=/path/to/old --tree new=.
[--requests 500] [--pause 0.003]``

Issue 23 compares the GET os-volume_attachments median of two trees while
cycles run; part of any request's latency is not the application's: the
client's own code, the HTTP server, the hand-offs between threads.  This
measures those floors per checkout (each tree's ``volattach-all``, from
its own ``.venv``, on its own SQLite files, one after the other):

- one server with one attached volume, no cycle running;
- ``--requests`` sequential GET os-volume_attachments (2.101) and GET
  /volumes/{id}, ``--pause`` seconds apart, each through ``http.client``
  (a bare keep-alive connection: the server's floor) and through the
  benchmark's own client (``load.Http``, ``requests``: what ``ab``
  measures);
- the application's own time for the same requests, from the access log's
  ``time:`` field (the span of the WSGI application, the HTTP server
  apart), when the tree writes one.

Medians of the last 90 % of each series, in ms.
"""
import argparse
import glob
import http.client
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks import deploy  # noqa: E402
from benchmarks import load  # noqa: E402

_LOGGED = re.compile(r'"GET (\S+)" status: 200 .* time: ([\d.]+)')


def _series(call, count, pause):
    latencies = []
    for _ in range(count):
        latencies.append(call())
        time.sleep(pause)
    return 1000 * statistics.median(latencies[count // 10:])


def _bare_get(client, path, headers):
    """A GET over one kept-alive ``http.client`` connection: seconds."""
    url = urllib.parse.urlsplit(client.base_url)
    conn = http.client.HTTPConnection(url.hostname, url.port)
    headers = dict(headers, **{"X-Auth-Token": client.token,
                               "Accept": "application/json"})

    def call():
        t0 = time.perf_counter()
        conn.request("GET", url.path + path, headers=headers)
        answer = conn.getresponse()
        answer.read()
        elapsed = time.perf_counter() - t0
        if answer.status != 200:
            raise SystemExit("GET %s: %s" % (path, answer.status))
        return elapsed
    return call


def _client_get(client, path, microversion):
    def call():
        status, body, latency = client.call("GET", path, microversion=microversion)
        if status != 200:
            raise SystemExit("GET %s: %s %s" % (path, status, body))
        return latency
    return call


def measure(tree, requests, pause):
    workdir = tempfile.mkdtemp(prefix="volattach-floor-")
    dep = deploy.AllInOneProcess(workdir, script=deploy.tree_script(tree))
    dep.start()
    figures = {}
    try:
        server = load.create_servers(dep.api_url, 1)[0]
        volumes = load.create_volumes(dep.volume_url, 2)
        load.run_cycles(dep.api_url, dep.volume_url, [(server, volumes)], cycles=20)
        api = load.compute_client(dep.api_url)
        vol = load.volume_client(dep.volume_url)
        status, body, _ = api.call("POST", "/servers/%s/os-volume_attachments" % server,
                                   {"volumeAttachment": {"volumeId": volumes[0]}},
                                   microversion="2.101")
        if status != 202:
            raise SystemExit("attach: %s %s" % (status, body))
        load._Poller(vol).until(volumes[0], "in-use")
        reads = (
            ("GET os-volume_attachments", api,
             "/servers/%s/os-volume_attachments" % server, "2.101",
             {"OpenStack-API-Version": "compute 2.101"}),
            ("GET /volumes/{id}", vol, "/volumes/%s" % volumes[0], None, {}))
        for name, client, path, microversion, headers in reads:
            figures[name] = {
                "http.client": _series(_bare_get(client, path, headers), requests, pause),
                "load.Http (requests)": _series(
                    _client_get(client, path, microversion), requests, pause)}
    finally:
        dep.stop()
    logged = {"GET os-volume_attachments": [], "GET /volumes/{id}": []}
    try:
        for path in glob.glob(os.path.join(workdir, "**", "*.log"), recursive=True):
            with open(path, errors="replace") as f:
                for line in f:
                    m = _LOGGED.search(line)
                    if not m:
                        continue
                    key = ("GET os-volume_attachments"
                           if "os-volume_attachments" in m.group(1)
                           else "GET /volumes/{id}" if "/volumes/" in m.group(1)
                           else None)
                    if key:
                        logged[key].append(1000 * float(m.group(2)))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    for name, times in logged.items():
        # the last 2 x requests lines are this run's (the cycles' come first)
        times = times[-2 * requests:]
        if times:
            figures[name]["application (access log)"] = statistics.median(times)
    return figures


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.request_floor",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tree", action="append", required=True, metavar="NAME=PATH")
    p.add_argument("--requests", type=int, default=500)
    p.add_argument("--pause", type=float, default=0.003,
                   help="seconds between two requests (default 0.003)")
    args = p.parse_args(argv)
    rows = []
    for spec in args.tree:
        name, tree = spec.split("=", 1)
        for read, figures in measure(tree, args.requests, args.pause).items():
            for how, ms in figures.items():
                rows.append((name, read, how, ms))
    print("| tree | request | measured through | median ms |")
    print("|---|---|---|---:|")
    for name, read, how, ms in rows:
        print("| %s | %s | %s | %.3f |" % (name, read, how, ms))


if __name__ == "__main__":
    main()
