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
same load.  Per round and tree: CPU per cycle of the ``volattach-all``
process (user + system, psutil), its context switches per cycle (all its
threads), the client's polls per cycle and the median attach POST; at the
end the medians and the per-round ratio of each tree to the first one,
whose median is the figure to quote.  ``--output`` writes it all as JSON.
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
    process, its threads' switches summed."""
    times = psutil.Process(pid).cpu_times()
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
    return times.user, times.system, voluntary, involuntary


def _start(name, tree, workdir, clients):
    script = os.path.join(os.path.abspath(tree), ".venv", "bin", "volattach-all")
    if not os.path.exists(script):
        raise SystemExit("%s: no %s (a checkout with its own .venv)" % (name, script))
    original = deploy.console_script
    deploy.console_script = lambda _name: script
    try:
        dep = deploy.AllInOneProcess(workdir)
        dep.start()
    finally:
        deploy.console_script = original
    servers = load.create_servers(dep.api_url, clients)
    volumes = load.create_volumes(dep.volume_url, 2 * clients)
    pairs = [(servers[i], volumes[2 * i:2 * i + 2]) for i in range(clients)]
    load.run_cycles(dep.api_url, dep.volume_url, pairs, cycles=10 * clients)  # warm-up
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
    return {"cycles": n, "errors": len(errors),
            "cpu_ms": 1000 * (user + system), "user_ms": 1000 * user,
            "system_ms": 1000 * system, "voluntary_switches": voluntary,
            "involuntary_switches": involuntary,
            "polls": sum(s["polls"] for s in samples) / n,
            "post_ms": 1000 * statistics.median(s["attach_post"] for s in samples),
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
    p.add_argument("--output", help="write the rounds and medians as JSON here")
    args = p.parse_args(argv)
    trees = [t.split("=", 1) for t in args.tree]
    deps, workdirs = {}, []
    results = {name: [] for name, _ in trees}
    try:
        for name, tree in trees:
            workdirs.append(tempfile.mkdtemp(prefix="volattach-ab-%s-" % name))
            deps[name] = _start(name, tree, workdirs[-1], args.concurrency)
        names = [name for name, _ in trees]
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            if r % 2:
                order.reverse()
            for name in order:
                m = measure(*deps[name], args.cycles, args.seconds)
                results[name].append(m)
                print("round %2d %-10s %6.2f ms CPU/cycle (user %.2f, system %.2f), "
                      "%5.1f + %4.1f context switches, %.2f polls, POST p50 %.2f ms, "
                      "load %.1f" % (r, name, m["cpu_ms"], m["user_ms"], m["system_ms"],
                                     m["voluntary_switches"], m["involuntary_switches"],
                                     m["polls"], m["post_ms"], m["load"]), flush=True)
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
                         "involuntary_switches", "polls", "post_ms")}
        med["ratio_to_%s" % reference] = statistics.median(
            m["cpu_ms"] / ref["cpu_ms"] for m, ref in zip(rows, results[reference]))
        summary[name] = med
        print("%-10s median %.2f ms CPU/cycle (user %.2f, system %.2f), %.1f + %.1f "
              "switches, %.2f polls, POST %.2f ms; ratio to %s, median of rounds: %.3f"
              % (name, med["cpu_ms"], med["user_ms"], med["system_ms"],
                 med["voluntary_switches"], med["involuntary_switches"], med["polls"],
                 med["post_ms"], reference, med["ratio_to_%s" % reference]))
    if args.output:
        with open(args.output, "w") as f:
            json.dump({"command": sys.argv, "options": vars(args), "rounds": results,
                       "medians": summary, "time": time.strftime("%Y-%m-%dT%H:%M:%S")},
                      f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
