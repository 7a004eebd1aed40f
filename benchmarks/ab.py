"""Scenario D's CPU per cycle, two (or more) checkouts interleaved finely.

``python -m benchmarks.ab --tree base=/path/to/old --tree new=. [--rounds 10]
[--cycles 80] [--concurrency 1] [--seconds 10]``

On a shared machine the CPU time of the same code moves by 30-50 % from one
minute to the next (other processes share the cores, and their hyperthreads
slow ours), so two ``benchmarks.run`` runs a minute apart compare badly.
Here every checkout's ``volattach-all`` (run from that checkout's own
``.venv``, on its own SQLite files) is started once and stays up; then each
round runs ``--cycles`` sequential cycles (or, with ``--concurrency N``,
``--seconds`` of N clients) on each of them in turn, the order alternating
from round to round, so that the trees are measured seconds apart under the
same load.

The cycle is ``load.one_cycle``, the one issue 23's table measured, over
real HTTP with keep-alive connections: POST os-volume_attachments at
2.101, poll the volume (GET /volumes/{id}) until ``in-use``, GET
os-volume_attachments, DELETE, poll until ``available``.  Per round and
tree: the *server CPU* per cycle (user + system, psutil, of the
``volattach-all`` process and of any process it started, the client's
own CPU apart), its context switches per cycle (all its threads), the
client's polls per cycle, the median attach POST and the median GET
os-volume_attachments; at the end the medians and, per figure, the
median of the per-round ratios of each tree to the first one (the figures
to quote).  ``--output`` writes it all as JSON.

``--fresh`` measures what a run of ``benchmarks.run --scenario D`` sees
instead: every round starts a new ``volattach-all`` per tree, runs
``--warmup`` cycles (1, as scenario D does, by default in this mode) and
measures the next ``--cycles``, then stops it: the first cycles of a
process (first policy checks, lazily built statements and pools, thread
pools growing) are counted, as they are in a single run.  Without it the
processes stay up and warm (10 warm-up cycles per client).
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
if REPO not in sys.path:
    sys.path.insert(0, REPO)

import psutil  # noqa: E402

from benchmarks import deploy  # noqa: E402
from benchmarks import load  # noqa: E402


def _counters(pid):
    """(user s, system s, voluntary, involuntary context switches) of the
    process, its threads' switches summed; user and system include its
    descendants, the ones still running and the ones it waited for."""
    proc = psutil.Process(pid)
    times = proc.cpu_times()
    user = times.user + times.children_user
    system = times.system + times.children_system
    for child in proc.children(recursive=True):
        try:
            t = child.cpu_times()
        except psutil.Error:
            continue      # ended meanwhile: its parent's children_* has it
        user += t.user
        system += t.system
    voluntary = involuntary = 0
    for path in glob.glob("/proc/%d/task/*/status" % pid):
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"):
                        voluntary += int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches"):
                        involuntary += int(line.split()[1])
        except OSError:
            pass     # a thread that ended meanwhile
    return user, system, voluntary, involuntary


def _start(tree, workdir, clients, warmup=10):
    dep = deploy.AllInOneProcess(workdir, script=deploy.tree_script(tree))
    dep.start()
    servers = load.create_servers(dep.api_url, clients)
    volumes = load.create_volumes(dep.volume_url, 2 * clients)
    pairs = [(servers[i], volumes[2 * i:2 * i + 2]) for i in range(clients)]
    if warmup:
        load.run_cycles(dep.api_url, dep.volume_url, pairs, cycles=warmup * clients)
    return dep, pairs


def measure(dep, pairs, cycles, seconds):
    before = _counters(dep.pid)
    if len(pairs) > 1:
        samples, errors, _ = load.run_cycles(dep.api_url, dep.volume_url, pairs,
                                             duration=seconds)
    else:
        samples, errors, _ = load.run_cycles(dep.api_url, dep.volume_url, pairs,
                                             cycles=cycles)
    after = _counters(dep.pid)
    n = len(samples)
    user, system, voluntary, involuntary = [(b - a) / n for a, b in zip(before, after)]
    return {"cycles": n, "errors": len(errors), "pid": dep.pid,
            "cpu_ms": 1000 * (user + system), "user_ms": 1000 * user,
            "system_ms": 1000 * system, "voluntary_switches": voluntary,
            "involuntary_switches": involuntary,
            "polls": sum(s["polls"] for s in samples) / n,
            "post_ms": 1000 * statistics.median(s["attach_post"] for s in samples),
            "get_ms": 1000 * statistics.median(s["list_attachments"] for s in samples),
            "load": os.getloadavg()[0]}


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.ab", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tree", action="append", required=True, metavar="NAME=PATH",
                   help="a checkout with its own .venv (twice or more; the first "
                        "is the reference)")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--cycles", type=int, default=80,
                   help="sequential cycles per tree and round (default 80)")
    p.add_argument("--concurrency", type=int, default=1,
                   help="clients; above 1, each round runs --seconds of cycles")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--fresh", action="store_true",
                   help="a new volattach-all per tree and round (what one "
                        "benchmarks.run --scenario D run measures)")
    p.add_argument("--warmup", type=int, default=None,
                   help="warm-up cycles per client before measuring (10; "
                        "with --fresh 1, as scenario D)")
    p.add_argument("--output", help="write the rounds and medians as JSON here")
    args = p.parse_args(argv)
    if args.warmup is None:
        args.warmup = 1 if args.fresh else 10
    trees = [t.split("=", 1) for t in args.tree]
    deps, workdirs = {}, []
    results = {name: [] for name, _ in trees}
    try:
        paths = dict(trees)
        if not args.fresh:
            for name, tree in trees:
                workdirs.append(tempfile.mkdtemp(prefix="volattach-ab-%s-" % name))
                deps[name] = _start(tree, workdirs[-1], args.concurrency,
                                    args.warmup)
        names = [name for name, _ in trees]
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            if r % 2:
                order.reverse()
            for name in order:
                if args.fresh:
                    workdirs.append(tempfile.mkdtemp(prefix="volattach-ab-%s-" % name))
                    deps[name] = _start(paths[name], workdirs[-1],
                                        args.concurrency, args.warmup)
                try:
                    m = measure(*deps[name], args.cycles, args.seconds)
                finally:
                    if args.fresh:
                        deps.pop(name)[0].stop()
                results[name].append(m)
                print("round %2d %-10s %6.2f ms CPU/cycle (user %.2f, system %.2f), "
                      "%5.1f + %4.1f context switches, %.2f polls, POST p50 %.2f ms, "
                      "GET p50 %.2f ms, load %.1f" % (
                          r, name, m["cpu_ms"], m["user_ms"], m["system_ms"],
                          m["voluntary_switches"], m["involuntary_switches"],
                          m["polls"], m["post_ms"], m["get_ms"], m["load"]), flush=True)
    finally:
        for dep, _pairs in deps.values():
            dep.stop()
        for workdir in workdirs:
            shutil.rmtree(workdir, ignore_errors=True)
    summary = {}
    reference = names[0]
    for name in names:
        rows = results[name]
        med = {k: statistics.median(m[k] for m in rows)
               for k in ("cpu_ms", "user_ms", "system_ms", "voluntary_switches",
                         "involuntary_switches", "polls", "post_ms", "get_ms")}
        for key, label in (("cpu_ms", "ratio"), ("post_ms", "post_ratio"),
                           ("get_ms", "get_ratio")):
            med["%s_to_%s" % (label, reference)] = statistics.median(
                m[key] / ref[key] for m, ref in zip(rows, results[reference]))
        summary[name] = med
        print("%-10s median %.2f ms CPU/cycle (user %.2f, system %.2f), %.1f + %.1f "
              "switches, %.2f polls, POST %.2f ms, GET %.2f ms; ratio to %s, "
              "median of rounds: CPU %.3f, POST %.3f, GET %.3f"
              % (name, med["cpu_ms"], med["user_ms"], med["system_ms"],
                 med["voluntary_switches"], med["involuntary_switches"], med["polls"],
                 med["post_ms"], med["get_ms"], reference,
                 med["ratio_to_%s" % reference], med["post_ratio_to_%s" % reference],
                 med["get_ratio_to_%s" % reference]))
    if args.output:
        with open(args.output, "w") as f:
            json.dump({"command": sys.argv, "options": vars(args), "rounds": results,
                       "medians": summary, "time": time.strftime("%Y-%m-%dT%H:%M:%S")},
                      f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
