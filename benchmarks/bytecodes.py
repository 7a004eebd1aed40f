"""Python bytecodes executed per attach+detach cycle: a load-independent cost.

``python -m benchmarks.bytecodes [--cycles 20] [--poll-wait 0.5]
[--output FILE.json] [--compare OTHER.json]``

CPU time on a shared machine moves by 30-50 % with the load; the number of
bytecodes the interpreter runs for the same work does not.  Every role of
``volattach-all`` runs in this process (as in ``benchmarks.profile_d``); a
trace function on every thread counts the bytecodes each function runs
(``sys.settrace`` with ``f_trace_opcodes``) while ``--cycles`` sequential
cycles run, the benchmark client's own threads excluded.  The client polls
the volume ``--poll-wait`` seconds after each request (instead of B/D's
short backoff), so that every cycle makes the same requests (2 polls) however
slowly the traced process runs.  It is a count of interpreted work, not of
time: C code (SQLite, the json module, regular expressions, system calls,
thread switches) counts as the one bytecode that calls it, so compare it
with CPU time from ``benchmarks.ab``, not instead of it.

Run it from the root of the checkout to measure, with that checkout's
venv (it imports ``benchmarks`` and ``volattach`` from there); for a
checkout without this file: ``cd ../other && .venv/bin/python
/path/to/benchmarks/bytecodes.py --output other.json``.  ``--output`` keeps
the counts per function; ``--compare`` prints, per module and per
function, what changed from another run.
"""
import argparse
import collections
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import warnings

# the checkout measured is the current directory (not necessarily this
# file's): its benchmarks package and its volattach
REPO = os.getcwd()
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks import deploy  # noqa: E402
from benchmarks import load  # noqa: E402


class _FixedPoller:
    """Polls a volume ``wait`` seconds after each request until it has a
    status: the same requests per cycle at any speed."""

    wait = 0.5

    def __init__(self, client):
        self.client = client

    def until(self, volume_id, wanted, timeout=600.0):
        polls = 0
        deadline = time.monotonic() + timeout
        while True:
            time.sleep(self.wait)
            status, body, _ = self.client.call("GET", "/volumes/%s" % volume_id,
                                               microversion=load.VOLUME_MV)
            polls += 1
            if status == 200 and body["volume"]["status"] == wanted:
                return time.perf_counter(), polls
            if time.monotonic() > deadline:
                raise load.BenchError("volume %s not %s" % (volume_id, wanted))


class Counter:
    """Bytecodes and calls per code object, on every thread but the
    client's (this process's main thread, which drives it, and
    ``load.run_cycles``' ``cycle-N`` threads), while ``on``."""

    def __init__(self):
        self.ops = collections.Counter()
        self.calls = collections.Counter()
        self.on = False
        self._local = threading.local()

    def _is_client(self):
        client = getattr(self._local, "client", None)
        if client is None:
            thread = threading.current_thread()
            client = self._local.client = (
                thread is threading.main_thread()
                or thread.name.startswith("cycle-"))
        return client

    def _opcodes(self, frame, event, arg):
        if event == "opcode":
            self.ops[frame.f_code] += 1
        return self._opcodes

    def trace(self, frame, event, arg):
        if not self.on or self._is_client():
            return None
        self.calls[frame.f_code] += 1
        frame.f_trace_opcodes = True
        return self._opcodes

    def install(self):
        threading.settrace(self.trace)
        sys.settrace(self.trace)


def _where(code):
    path = code.co_filename
    for prefix in sorted({REPO + "/", sys.prefix + "/"}, key=len, reverse=True):
        if path.startswith(prefix):
            path = path[len(prefix):]
    path = re.sub(r"^.*?site-packages/", "", path)
    path = re.sub(r"^.*/lib/python3\.\d+/", "py:", path)
    return path, code.co_name


def run(cycles, poll_wait):
    counter = Counter()
    counter.install()
    load._Poller = _FixedPoller
    _FixedPoller.wait = poll_wait

    from volattach import conf as volattach_conf
    from volattach.cmd.all import AllInOne
    workdir = tempfile.mkdtemp(prefix="volattach-bench-bytecodes-")
    api_port, volume_port = deploy.free_port(), deploy.free_port()
    conf = volattach_conf.CONF
    deploy.override_in_process(
        conf, workdir, api_port, volume_port,
        extra=(("api", "listen", "127.0.0.1"), ("volume", "listen", "127.0.0.1")))
    logging.basicConfig(level=logging.WARNING)
    aio = AllInOne(conf).start()
    api_url = "http://127.0.0.1:%d" % api_port
    volume_url = "http://127.0.0.1:%d" % volume_port
    try:
        server = load.create_servers(api_url, 1)[0]
        volumes = load.create_volumes(volume_url, 2)
        pairs = [(server, volumes)]
        load.run_cycles(api_url, volume_url, pairs, cycles=2)     # warm-up
        counter.on = True
        samples, errors, _ = load.run_cycles(api_url, volume_url, pairs, cycles=cycles)
        time.sleep(0.3)            # the last cycle's trailing work
        counter.on = False
    finally:
        aio.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    n = len(samples)
    functions = collections.defaultdict(lambda: [0.0, 0.0])
    for code, count in counter.ops.items():
        functions["%s:%s" % _where(code)][0] += count / n
    for code, count in counter.calls.items():
        functions["%s:%s" % _where(code)][1] += count / n
    return {"cycles": n, "errors": len(errors),
            "polls_per_cycle": sum(s["polls"] for s in samples) / max(1, n),
            "bytecodes_per_cycle": sum(v[0] for v in functions.values()),
            "functions": dict(functions)}


def _module(name, depth=1):
    path = name.rsplit(":", 1)[0]
    return path if path.startswith("py:") else "/".join(path.split("/")[:depth])


def compare(before, after, top=25):
    lines = ["bytecodes per cycle: %.0f -> %.0f (%+.1f %%)" % (
        before["bytecodes_per_cycle"], after["bytecodes_per_cycle"],
        100.0 * (after["bytecodes_per_cycle"] / before["bytecodes_per_cycle"] - 1))]
    for title, key in (("by module", _module), ("by function", lambda n: n)):
        b, a = collections.Counter(), collections.Counter()
        for name, (ops, _calls) in before["functions"].items():
            b[key(name)] += ops
        for name, (ops, _calls) in after["functions"].items():
            a[key(name)] += ops
        lines.append("%s (before, after, change):" % title)
        for name in sorted(set(a) | set(b), key=lambda k: -abs(a[k] - b[k]))[:top]:
            lines.append("  %9.0f %9.0f %+9.0f  %s" % (b[name], a[name], a[name] - b[name], name))
    return "\n".join(lines)


def main(argv=None):
    warnings.filterwarnings("ignore")
    p = argparse.ArgumentParser(prog="python -m benchmarks.bytecodes", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cycles", type=int, default=20)
    p.add_argument("--poll-wait", type=float, default=0.5,
                   help="seconds before each status poll (default 0.5)")
    p.add_argument("--output", help="write the counts per function here (JSON)")
    p.add_argument("--compare", help="a previous --output to compare with")
    args = p.parse_args(argv)
    result = run(args.cycles, args.poll_wait)
    print("%d cycles, %.2f polls per cycle, %d errors: %.0f bytecodes per cycle" % (
        result["cycles"], result["polls_per_cycle"], result["errors"],
        result["bytecodes_per_cycle"]))
    if args.output:
        with open(args.output, "w") as f:
            json.dump(result, f)
    if args.compare:
        with open(args.compare) as f:
            print(compare(json.load(f), result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
