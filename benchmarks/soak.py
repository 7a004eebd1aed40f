"""A long soak of the interleaving and fuzzing tiers on the all-in-one
deployment (every role in this process, real HTTP, SQLite).

    .venv/bin/python -m benchmarks.soak --duration 600
    .venv/bin/python -m benchmarks.soak --duration 1800 --fuzz-examples 400
    .venv/bin/python -m benchmarks.soak --seed 1303 --duration 60   # replay

Interleavings: seeds ``--seed``, ``--seed + 1``, ... each run until it finds
a violation or ``--steps`` batches, until ``--duration`` seconds pass.
Then the fuzzing tier with ``VOLATTACH_FUZZ_EXAMPLES=--fuzz-examples``
(pytest, in a child process).  Prints the counts: operations,
interleavings, invariant checks, requests, 5xx, and every violation with
its seed and step.  Exit status 1 when anything was found.
"""
import argparse
import collections
import os
import pathlib
import subprocess
import sys
import tempfile
import time


def _interleave(args):
    from tests.functional import conftest as functional
    from tests.interleaving import engine
    from tests.interleaving import test_all_in_one as tier
    from volattach.cmd.all import AllInOne
    from volattach.conf import CONF
    from volattach.db import engine as db_engine

    state = tempfile.mkdtemp(prefix="volattach-soak-")
    overrides = dict(tier.CONF_OVERRIDES)
    settings = functional._configure(pathlib.Path(state),
                                     overrides)
    db_engine.dispose_all()
    deployment = AllInOne(CONF).start()
    api_url = "http://127.0.0.1:%d" % CONF.api.port
    volume_url = "http://127.0.0.1:%d" % CONF.volume.port
    total = collections.Counter()
    violations = []
    started = time.monotonic()
    seed = args.seed
    try:
        while time.monotonic() - started < args.duration:
            left = args.duration - (time.monotonic() - started)
            run = engine.Run(api_url, volume_url, seed, tier._inproc_dry_run,
                             servers=args.servers, volumes=args.volumes,
                             width=args.width, log=lambda text: None)
            run.run(steps=args.steps, duration=left)
            counts = run.counts
            total.update(operations=counts.operations,
                         interleavings=counts.interleavings,
                         invariant_checks=counts.invariant_checks,
                         requests=counts.operations + counts.setup_requests,
                         server_errors=counts.server_errors)
            violations.extend(run.violations and [run.describe_violations()])
            print("seed %d: %s%s" % (seed, counts.line(),
                                     " VIOLATION" if run.violations else ""),
                  flush=True)
            seed += 1
    finally:
        deployment.stop()
        db_engine.dispose_all()
        functional._unconfigure(settings)
    return total, violations


def _fuzz(args):
    env = dict(os.environ, VOLATTACH_FUZZ_EXAMPLES=str(args.fuzz_examples))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/fuzz", "-q", "-s",
         "-p", "no:cacheprovider", "-o", "addopts=", "--runxfail",
         "--timeout", "0"],
        capture_output=True, text=True, env=env)
    requests = errors = 0
    for line in result.stdout.splitlines():
        if line.startswith("fuzz ") and "requests" in line \
                and "total:" not in line:
            part = line.split("requests ", 1)[1]
            requests += int(part.split(",")[0])
            errors += int(part.split("5xx ", 1)[1].split(" ")[0])
            print(line)
    tail = [line for line in result.stdout.splitlines()
            if line.startswith(("FAILED", "ERROR"))]
    return requests, errors, tail


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=300,
                        help="seconds of interleavings (default 300)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=50,
                        help="batches per seed (default 50)")
    parser.add_argument("--servers", type=int, default=3)
    parser.add_argument("--volumes", type=int, default=5)
    parser.add_argument("--width", type=int, default=4,
                        help="most operations in flight at once")
    parser.add_argument("--fuzz-examples", type=int, default=200,
                        help="examples per schema of the fuzzing tier "
                             "(0: no fuzzing)")
    args = parser.parse_args(argv)
    total, violations = _interleave(args)
    print("interleavings: operations %d, interleavings %d, invariant "
          "checks %d, requests %d, 5xx %d, violations %d" % (
              total["operations"], total["interleavings"],
              total["invariant_checks"], total["requests"],
              total["server_errors"], len(violations)))
    for text in violations:
        print(text)
    failed = bool(violations or total["server_errors"])
    if args.fuzz_examples:
        requests, errors, tail = _fuzz(args)
        print("fuzzing (known defects included, --runxfail): requests %d, "
              "5xx %d" % (requests, errors))
        for line in tail:
            print(line)
        failed = failed or bool(errors or tail)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
