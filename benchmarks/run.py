"""The benchmark command: ``python -m benchmarks.run --scenario A|B|C|D|all``.

Each scenario starts its own deployment, drives it over HTTP, and writes
``<output-dir>/<timestamp>-<scenario>.json`` (raw samples), ``.md`` (the
summary tables, also printed) and ``.png`` (the plot).  See
``benchmarks/README.md`` for the scenarios and the options.
"""
import argparse
import os
import shutil
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
if REPO not in sys.path:   # `python benchmarks/run.py` as well as `-m benchmarks.run`
    sys.path.insert(0, REPO)

from benchmarks import deploy  # noqa: E402
from benchmarks import report  # noqa: E402

SCENARIOS = ("D", "B", "A", "C")


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.run", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenario", default="all", type=str.upper,
                   choices=list(SCENARIOS) + ["ALL"],
                   help="A: API starvation by slow attaches (2.100 vs 2.101); B: "
                        "attach+detach throughput, multi-process; C: latency with "
                        "10,000 servers / 50,000 attachments in PostgreSQL; D: B's "
                        "cycles in the all-in-one process; all: D, B, A, C")
    p.add_argument("--workers", type=int,
                   help="gunicorn workers of the compute API (A: default runs 1 "
                        "and 4; B, C: default 2)")
    p.add_argument("--threads", type=int, default=4,
                   help="threads per gunicorn worker (default 4, the [api] default)")
    p.add_argument("--duration", type=float,
                   help="seconds of the concurrent phase of B and D (default 20; "
                        "--quick 1.5)")
    p.add_argument("--quick", action="store_true",
                   help="a few seconds per scenario, to check the harness works "
                        "(the figures mean little)")
    p.add_argument("--concurrency", type=int,
                   help="B, D: client threads of the concurrent phase (default 8)")
    p.add_argument("--sequential-cycles", type=int,
                   help="B, D: cycles of the one-client phase (default 50)")
    p.add_argument("--computes", type=int, default=2,
                   help="compute services (default 2)")
    p.add_argument("--attach-requests", type=int,
                   help="A: concurrent attach requests (default 64)")
    p.add_argument("--latency", type=float,
                   help="A: seconds of the fake driver's reserve and of its attach "
                        "(default 2)")
    p.add_argument("--reader-timeout", type=float, default=10.0,
                   help="A: client timeout of the reader's GET (default 10 s)")
    p.add_argument("--servers", type=int,
                   help="C: servers seeded into the database (default 10000)")
    p.add_argument("--attachments", type=int,
                   help="C: attachments seeded into the database (default 50000)")
    p.add_argument("--requests", type=int,
                   help="C: requests measured per request type and phase (default 200)")
    p.add_argument("--output-dir", default=os.path.join(HERE, "results"),
                   help="where the JSON, Markdown and PNG go (default "
                        "benchmarks/results)")
    p.add_argument("--keep", action="store_true",
                   help="keep the work directory (configs, logs) and the databases")
    args = p.parse_args(argv)
    quick = args.quick
    defaults = {"duration": 1.5 if quick else 20.0, "concurrency": 2 if quick else 8,
                "sequential_cycles": 5 if quick else 50,
                "attach_requests": 8 if quick else 64, "latency": 0.5 if quick else 2.0,
                "servers": 200 if quick else 10000, "attachments": 1000 if quick else 50000,
                "requests": 10 if quick else 200}
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.quick and args.reader_timeout == 10.0:
        args.reader_timeout = 5.0
    return args


def code_version():
    """The commit the daemons run, and the service files changed since."""
    import subprocess
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                                text=True, timeout=10).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain"], cwd=REPO,
                                capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    changed = [line[3:] for line in status.splitlines()
               if not line[3:].startswith(("benchmarks/", "tests/"))]
    return {"commit": commit, "uncommitted_changes": changed}


def _workdir(args, scenario):
    return tempfile.mkdtemp(prefix="volattach-bench-%s-" % scenario)


def run_scenario(scenario, args):
    """Run one scenario; returns the result dict (also written to disk)."""
    started = time.time()
    code = code_version()
    workdir = _workdir(args, scenario)
    machine_before = report.machine_info()
    try:
        if scenario == "D":
            from benchmarks import cycles
            with deploy.AllInOneProcess(workdir, computes=args.computes) as dep:
                result = cycles.run(dep, args, "D")
            plot = cycles.plot
        elif scenario == "B":
            from benchmarks import cycles
            rabbit, pg = deploy.service_urls()
            with deploy.MultiProcessDeployment(
                    workdir, rabbit, pg, workers=args.workers or 2, threads=args.threads,
                    computes=args.computes, keep=args.keep) as dep:
                result = cycles.run(dep, args, "B")
            plot = cycles.plot
        elif scenario == "A":
            from benchmarks import starvation
            result = starvation.run(args, workdir)
            plot = starvation.plot
        elif scenario == "C":
            from benchmarks import scale
            result = scale.run(args, workdir)
            plot = scale.plot
        else:
            raise ValueError(scenario)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print("work directory kept: %s" % workdir, file=sys.stderr)
    result["command"] = " ".join([os.path.basename(sys.executable), "-m", "benchmarks.run"]
                                 + sys.argv[1:])
    result["options"] = vars(args)
    result["started"] = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started))
    result["elapsed_s"] = time.time() - started
    result["machine"] = {"before": machine_before, "after_loadavg": list(os.getloadavg())}
    result["code"] = code
    report.write_outputs(result, args.output_dir, plot)
    return result


def main(argv=None):
    warnings.filterwarnings("ignore", message=".*[Ee]ventlet.*")
    args = parse_args(argv)
    scenarios = SCENARIOS if args.scenario == "ALL" else (args.scenario,)
    failed = []
    for scenario in scenarios:
        print("=== scenario %s" % scenario, file=sys.stderr, flush=True)
        try:
            run_scenario(scenario, args)
        except deploy.DeploymentError as exc:
            print("scenario %s: deployment failed: %s" % (scenario, exc), file=sys.stderr)
            failed.append(scenario)
        except Exception:  # noqa: BLE001 - reported; the other scenarios still run
            import traceback
            traceback.print_exc()
            print("scenario %s failed (above)" % scenario, file=sys.stderr)
            failed.append(scenario)
    if failed:
        print("failed scenarios: %s" % ", ".join(failed), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
