"""Where the CPU of an attach+detach cycle goes in the multi-process shape
(scenario B's deployment: gunicorn, RabbitMQ, PostgreSQL).

``python -m benchmarks.profile_b [--seconds 20] [--concurrency 8] [--workers 2]``

Starts the deployment, runs ``--concurrency`` clients doing B's cycles for
``--seconds`` while ``py-spy record --pid`` samples every volattach daemon
(``--subprocesses`` for the gunicorn masters of the API and the volume
service, so their workers are sampled), and ``benchmarks.cpu`` measures
each daemon's CPU over the same window.  Writes
``<output-dir>/<timestamp>-profile-B.{md,json}`` and one raw py-spy file per
daemon: CPU per cycle, what its threads did, the share under each library,
the volattach functions on the stack (inclusive) and the top own-time
functions.  py-spy costs CPU too (sampling at ``--rate`` Hz per daemon on 2
cores): compare shares, not absolute figures, with scenario B.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks import cpu  # noqa: E402
from benchmarks import deploy  # noqa: E402
from benchmarks import load  # noqa: E402
from benchmarks import profile_d  # noqa: E402
from benchmarks import report  # noqa: E402

GUNICORN = ("api", "volume")


def run(args, workdir, stem):
    exe = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
    if not os.path.exists(exe):
        raise SystemExit("py-spy is not installed (pip install py-spy)")
    rabbit, pg = deploy.service_urls()
    with deploy.MultiProcessDeployment(workdir, rabbit, pg, workers=args.workers,
                                       threads=args.threads, computes=2) as dep:
        n = args.concurrency
        servers = load.create_servers(dep.api_url, n)
        volumes = load.create_volumes(dep.volume_url, 2 * n)
        pairs = [(servers[i], volumes[2 * i:2 * i + 2]) for i in range(n)]
        load.run_cycles(dep.api_url, dep.volume_url, pairs, cycles=2 * n)
        spies = {}
        for name, proc in dep.procs.processes.items():
            cmd = [exe, "record", "--pid", str(proc.pid), "--format", "raw",
                   "--rate", str(args.rate), "--duration", str(int(args.seconds) + 1),
                   "--nonblocking", "-o", "%s.%s.pyspy.txt" % (stem, name)]
            if name in GUNICORN:
                cmd.insert(2, "--subprocesses")
            spies[name] = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                           stderr=subprocess.STDOUT)
        groups = dict(dep.cpu_groups())
        groups["client"] = cpu.self_group()
        time.sleep(1.0)
        meter = cpu.CpuMeter(groups).start()
        bar = report.progress(desc="profile B: %gs" % args.seconds, unit="cycle")
        samples, errors, wall = load.run_cycles(dep.api_url, dep.volume_url, pairs,
                                                duration=args.seconds, progress=bar.update)
        bar.close()
        cpu_seconds = meter.stop()
        outputs = {}
        for name, spy in spies.items():
            try:
                outputs[name], _ = spy.communicate(timeout=4 * args.seconds + 60)
            except subprocess.TimeoutExpired:
                spy.send_signal(signal.SIGINT)
                outputs[name], _ = spy.communicate(timeout=60)
    cycles = len(samples)
    daemons = {}
    for name in spies:
        raw = "%s.%s.pyspy.txt" % (stem, name)
        entry = {"cpu_ms_per_cycle": 1000 * cpu_seconds.get(name, 0.0) / max(1, cycles),
                 "raw": raw}
        if os.path.exists(raw):
            entry.update(profile_d.summarize_pyspy(raw))
        else:
            entry["skipped"] = outputs[name].decode(errors="replace")[-500:]
        daemons[name] = entry
    return {"scenario": "profile-B", "deployment": dep.describe(), "cycles": cycles,
            "errors": errors, "wall_s": wall, "cycles_per_s": cycles / wall,
            "cpu_seconds": cpu_seconds,
            "cpu_ms_per_cycle": {k: 1000 * v / max(1, cycles) for k, v in cpu_seconds.items()},
            "daemons": daemons}


def summary_md(result):
    lines = ["## Profile of scenario B (multi-process): %d cycles in %.1f s, %.1f cycles/s "
             "under py-spy" % (result["cycles"], result["wall_s"], result["cycles_per_s"]), "",
             "CPU per cycle, ms: " + ", ".join(
                 "%s %.1f" % (k, v) for k, v in result["cpu_ms_per_cycle"].items()), ""]
    for name, d in result["daemons"].items():
        lines += ["### %s: %.1f ms CPU per cycle" % (name, d["cpu_ms_per_cycle"]), ""]
        if "skipped" in d:
            lines += ["py-spy failed: " + d["skipped"], ""]
            continue
        lines += ["%d samples, %d of them work (not idle poll loops)." % (
            d["samples"], d["work_samples"]), ""]
        lines.append(report.markdown_table(["thread activity", "% of samples"],
                                           d["thread_kind_pct"][:8]))
        lines += [""]
        lines.append(report.markdown_table(
            ["library (work samples)", "%"],
            [r for r in d["under_library_pct"] if r[1] >= 1.0][:14]))
        lines += [""]
        lines.append(report.markdown_table(["volattach function (inclusive)", "%"],
                                           d["volattach_inclusive_pct"][:20]))
        lines += [""]
        lines.append(report.markdown_table(["own time", "%"], d["own_time_top"][:12]))
        lines += [""]
    return "\n".join(lines)


def main(argv=None):
    warnings.filterwarnings("ignore", message=".*[Ee]ventlet.*")
    p = argparse.ArgumentParser(prog="python -m benchmarks.profile_b", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--rate", type=int, default=50, help="py-spy samples/s per daemon (50)")
    p.add_argument("--output-dir", default=os.path.join(HERE, "results"))
    args = p.parse_args(argv)
    stem = report.output_stem(args.output_dir, "profile-B")
    workdir = tempfile.mkdtemp(prefix="volattach-bench-profile-b-")
    try:
        result = run(args, workdir, stem)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    from benchmarks import run as bench_run
    result["code"] = bench_run.code_version()
    result["options"] = vars(args)
    result["summary_md"] = summary_md(result)
    result["scenario"] = "profile-B"
    report.write_outputs(result, args.output_dir, stem=stem)
    return 0


if __name__ == "__main__":
    sys.exit(main())
