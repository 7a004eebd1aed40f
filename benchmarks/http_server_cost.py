"""CPU per request of the in-process HTTP server alone (waitress and options).

``python -m benchmarks.http_server_cost [--requests N] [--rounds R]
[--variant NAME ...]``

Serves a trivial WSGI application (a JSON body of the size of a volume view,
with Content-Length) with ``volattach.embedded_server`` in a child process,
and sends it ``--requests`` sequential GETs over one keep-alive connection
(``http.client``) from this process, then reads the child's CPU time and
context switches (all its threads, ``psutil``).  The figures are the
server's own per-request cost: parsing, the hand-off to a task thread,
the channel events, writing, with no application work.  Variants change
waitress's adjustments (``--variant`` repeated; default: all) and are run
alternately, ``--rounds`` times each; medians are printed.
"""
import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

# name -> (threads, adjustments overrides)
VARIANTS = {
    "default": (8, {}),
    "threads1": (1, {}),
    "select": (8, {"asyncore_use_poll": False}),
    "lookahead0": (8, {"channel_request_lookahead": 0}),
    "bufs": (8, {"recv_bytes": 65536, "send_bytes": 1}),
}

BODY = json.dumps({"volume": {"id": "0" * 36, "status": "in-use",
                              "attachments": [{"server_id": "1" * 36}],
                              "metadata": {}, "name": "x" * 40,
                              "description": None, "size": 1}}).encode()

_CHILD = r"""
import sys, json, threading, logging
logging.getLogger("waitress.queue").setLevel(logging.ERROR)
sys.path.insert(0, %(repo)r)
from volattach import conf as volattach_conf
from volattach import embedded_server
threads, extra = json.loads(sys.argv[1])
conf = volattach_conf.CONF
conf([], project="volattach", default_config_files=[])
conf.set_override("threads", threads, "wsgi")
orig = embedded_server._adjustments
def patched(conf, host, port, sock=None):
    adj = orig(conf, host, port, sock)
    for k, v in extra.items():
        setattr(adj, k, v)
    return adj
embedded_server._adjustments = patched
body = %(body)r
headers = [("Content-Type", "application/json"),
           ("Content-Length", str(len(body))),
           ("x-openstack-request-id", "req-00000000-0000-0000-0000-000000000000")]
def app(environ, start_response):
    start_response("200 OK", headers)
    return [body]
server = embedded_server.serve_in_thread(app, "127.0.0.1", 0, conf=conf)
print(server.port, flush=True)
sys.stdin.read()
server.shutdown()
"""


def _cpu(proc):
    """CPU seconds and context switches of every thread of ``proc``
    (psutil counts the switches of the main thread only)."""
    t = proc.cpu_times()
    switches = 0
    task_dir = "/proc/%d/task" % proc.pid
    for tid in os.listdir(task_dir):
        try:
            with open(os.path.join(task_dir, tid, "status")) as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt", "nonvoluntary_ctxt")):
                        switches += int(line.split()[1])
        except FileNotFoundError:
            pass
    return t.user + t.system, switches


def run_variant(name, requests):
    import psutil
    threads, extra = VARIANTS[name]
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD % {"repo": REPO, "body": BODY},
         json.dumps([threads, extra])],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        port = int(child.stdout.readline())
        proc = psutil.Process(child.pid)
        conn = http.client.HTTPConnection("127.0.0.1", port)
        headers = {"X-Auth-Token": "alice:demo", "Accept": "application/json"}

        def one():
            conn.request("GET", "/v3/demo/volumes/" + "0" * 36,
                         headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            if resp.status != 200 or data != BODY:
                raise RuntimeError("bad answer %s" % resp.status)
        for _ in range(200):    # warm-up
            one()
        cpu0, sw0 = _cpu(proc)
        lat = []
        for _ in range(requests):
            t0 = time.perf_counter()
            one()
            lat.append(time.perf_counter() - t0)
        cpu1, sw1 = _cpu(proc)
        conn.close()
    finally:
        child.stdin.close()
        child.wait(10)
    return {"cpu_us": 1e6 * (cpu1 - cpu0) / requests,
            "switches": (sw1 - sw0) / requests,
            "median_us": 1e6 * statistics.median(lat)}


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.http_server_cost",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--requests", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--variant", action="append", choices=sorted(VARIANTS))
    args = p.parse_args(argv)
    names = args.variant or list(VARIANTS)
    results = {n: [] for n in names}
    for r in range(args.rounds):
        for n in names:
            results[n].append(run_variant(n, args.requests))
        print("round %d done, load %.1f" % (r + 1, os.getloadavg()[0]),
              file=sys.stderr)
    print("| variant | server CPU us/request | switches/request | median latency us |")
    print("|---|---:|---:|---:|")
    for n in names:
        rows = results[n]
        print("| %s | %.0f | %.2f | %.0f |" % (
            n, statistics.median(r["cpu_us"] for r in rows),
            statistics.median(r["switches"] for r in rows),
            statistics.median(r["median_us"] for r in rows)))


if __name__ == "__main__":
    main()
