"""Scenario A, the async-volume-attachments spec's problem: slow attaches
must not starve the API's workers.

The multi-process deployment with computes whose fake driver takes
``--latency`` seconds (2 by default) to reserve a device name and as much to
attach.  A reader issues ``GET /servers/{id}`` in a loop (client timeout
``--reader-timeout``).  After an idle stretch, ``--attach-requests`` (64)
clients each POST one attach at once, each to a server of its own (so that
the per-instance lock serializes nothing), first at microversion 2.100
(the API *calls* the conductor and waits for the attach: a gunicorn thread
is held for the whole reserve + attach), then, with fresh volumes, at 2.101
(the API *casts*: 202 at once).  The burst lasts until the last attach
answered and every volume is ``in-use``.

Reported per (workers, microversion): the attach requests' latency and
errors, the time until all volumes were in-use, and the reader's latency
when idle and during the burst, with its errors and timeouts.  Expected: at
2.100 the workers are all taken and the reader starves; at 2.101 it stays
at its idle latency.  Default: 1 worker and 4 workers (``--workers`` picks
one), ``--threads`` threads each.
"""
import os
import threading
import time

from benchmarks import cpu
from benchmarks import deploy
from benchmarks import load
from benchmarks import report

MICROVERSIONS = ("2.100", "2.101")


def _burst(dep, servers, volumes, microversion, args, bar):
    """One burst; returns the phase dict with raw samples."""
    idle = 1.0 if args.quick else 3.0
    tail = 0.5 if args.quick else 1.0
    n = len(volumes)
    groups = dict(dep.cpu_groups())
    groups["client"] = cpu.self_group()
    meter = cpu.CpuMeter(groups)
    t_base = time.perf_counter()
    reader = load.Reader(dep.api_url, "/servers/%s" % servers[0], t_base,
                         timeout=args.reader_timeout)
    attach_samples = [None] * n
    barrier = threading.Barrier(n + 1)
    clients = [load.compute_client(dep.api_url, timeout=900) for _ in range(n)]

    def attach(i):
        barrier.wait()
        t0 = time.perf_counter()
        sample = {"kind": "attach", "t": t0 - t_base, "server": servers[1 + i],
                  "volume": volumes[i]}
        try:
            status, body, latency = clients[i].call(
                "POST", "/servers/%s/os-volume_attachments" % servers[1 + i],
                {"volumeAttachment": {"volumeId": volumes[i]}}, microversion=microversion)
            sample.update(status=status, latency=latency)
            if status >= 400:
                sample["error"] = str(body)[:300]
        except Exception as exc:  # noqa: BLE001 - recorded
            sample.update(error=repr(exc)[:300], latency=time.perf_counter() - t0)
        attach_samples[i] = sample
        bar.update(1)

    meter.start()
    reader.start()
    time.sleep(idle)
    threads = [threading.Thread(target=attach, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    barrier.wait()
    t_burst = time.perf_counter() - t_base
    for t in threads:
        t.join()
    t_last_response = max(s["t"] + s["latency"] for s in attach_samples)
    completion = {}
    try:
        seen = load.wait_volumes(dep.volume_url, volumes, "in-use", timeout=600,
                                 interval=0.1)
        completion = {v: t - t_base for v, t in seen.items()}
    except load.BenchError as exc:
        completion_error = str(exc)
    else:
        completion_error = None
    bar.update(n)
    t_complete = max(completion.values()) if completion else None
    window_end = max(t_last_response, t_complete or 0.0)
    time.sleep(tail)
    reader.stop()
    cpu_seconds = meter.stop()
    for c in clients:
        c.close()
    for s in attach_samples:
        s["in_use_at"] = completion.get(s["volume"])
    return {"microversion": microversion, "attach_requests": n,
            "burst_start": t_burst, "last_response": t_last_response,
            "all_in_use": t_complete, "window_end": window_end,
            "completion_error": completion_error, "cpu_seconds": cpu_seconds,
            "cpu_roles": report.cpu_roles(cpu_seconds),
            "attach_samples": attach_samples, "reader_samples": reader.samples,
            "stats": _stats(attach_samples, reader.samples, t_burst, window_end)}


def _reader_stats(samples):
    ok = [s["latency"] for s in samples if s.get("status") == 200]
    timeouts = sum(1 for s in samples if s.get("error") == "timeout")
    errors = sum(1 for s in samples if s.get("error") not in (None, "timeout")
                 or (s.get("status") not in (None, 200)))
    stats = report.summarize(ok)
    stats.update(requests=len(samples), timeouts=timeouts, errors=errors,
                 worst=max((s["latency"] for s in samples), default=None))
    return stats


def _service(reader_samples, start, end):
    """How the reader was served in [start, end): answers per second, and
    the longest stretch without an answer (the starvation)."""
    answers = sorted(s["t"] + s["latency"] for s in reader_samples
                     if s.get("status") == 200 and start < s["t"] + s["latency"] < end)
    points = [start] + answers + [end]
    return {"answers_per_s": len(answers) / (end - start) if end > start else None,
            "longest_without_answer_s": max(b - a for a, b in zip(points, points[1:]))}


def _stats(attach_samples, reader_samples, t_burst, window_end):
    attach_ok = [s["latency"] for s in attach_samples if s.get("status") in (200, 202)]
    attach = report.summarize(attach_ok)
    attach["errors"] = sum(1 for s in attach_samples if s.get("error"))
    idle = _reader_stats([s for s in reader_samples if s["t"] < t_burst])
    idle.update(_service(reader_samples, 0.0, t_burst))
    burst = _reader_stats([s for s in reader_samples if t_burst <= s["t"] < window_end])
    burst.update(_service(reader_samples, t_burst, window_end))
    return {"attach": attach, "reader_idle": idle, "reader_burst": burst}


def run(args, workdir):
    workers_list = [args.workers] if args.workers else [1, 4]
    n = args.attach_requests
    rabbit, pg = deploy.service_urls()
    runs = []
    for workers in workers_list:
        sub = os.path.join(workdir, "w%d" % workers)
        os.makedirs(sub, exist_ok=True)
        print("A: %d worker(s) x %d threads, %d attaches, driver latency %ss" % (
            workers, args.threads, n, args.latency), flush=True)
        with deploy.MultiProcessDeployment(
                sub, rabbit, pg, workers=workers, threads=args.threads,
                computes=args.computes, reserve_latency=args.latency,
                attach_latency=args.latency, keep=args.keep) as dep:
            servers = load.create_servers(dep.api_url, n + 1, concurrency=4)
            for microversion in MICROVERSIONS:
                volumes = load.create_volumes(dep.volume_url, n)
                bar = report.progress(total=2 * n, desc="A w=%d %s" % (workers, microversion),
                                      unit="step")
                try:
                    phase = _burst(dep, servers, volumes, microversion, args, bar)
                finally:
                    bar.close()
                phase["workers"] = workers
                phase["threads"] = args.threads
                runs.append(phase)
    result = {"scenario": "A", "latency_s": args.latency, "attach_requests": n,
              "computes": args.computes, "reader_timeout_s": args.reader_timeout,
              "runs": runs}
    result["summary_md"] = summary_md(result)
    return result


def summary_md(result):
    lines = ["## Scenario A: %d concurrent attaches (reserve %ss + attach %ss on the "
             "compute) while a reader GETs /servers/{id}" % (
                 result["attach_requests"], result["latency_s"], result["latency_s"]), "",
             "Latency in ms; reader client timeout %ss; 'burst' = from the attaches' "
             "start until the last answered and all volumes were in-use." %
             result["reader_timeout_s"], ""]
    rows = []
    for r in result["runs"]:
        st = r["stats"]
        a, ri, rb = st["attach"], st["reader_idle"], st["reader_burst"]
        rows.append([
            "%d x %d" % (r["workers"], r["threads"]), r["microversion"],
            "%s / %s" % (report.ms(a.get("p50"), 0), report.ms(a.get("p99"), 0)), a["errors"],
            "%.1f" % (r["all_in_use"] - r["burst_start"]) if r["all_in_use"] else "-",
            "%s / %s" % (report.ms(ri.get("p50"), 1), report.ms(ri.get("p99"), 1)),
            "%s / %s" % (report.ms(rb.get("p50"), 1), report.ms(rb.get("p99"), 1)),
            "%d / %d" % (rb["timeouts"], rb["errors"]),
            "%.0f -> %.0f" % (ri["answers_per_s"] or 0, rb["answers_per_s"] or 0),
            "%.2f" % rb["longest_without_answer_s"],
        ])
    lines.append(report.markdown_table(
        ["workers x threads", "microversion", "attach POST p50 / p99", "attach errors",
         "all in-use after, s", "reader idle p50 / p99", "reader in burst p50 / p99",
         "reader timeouts / errors in burst", "reader answers/s idle -> burst",
         "reader's longest wait for an answer in burst, s"], rows))
    lines += ["", "The reader's p50/p99 count its requests, not time: a starved reader "
              "makes few requests (each waits), so its answers per second and its "
              "longest wait tell the starvation."]
    return "\n".join(lines)


def plot(result, path):
    import matplotlib.pyplot as plt
    runs = result["runs"]
    workers = sorted({r["workers"] for r in runs})
    fig, axes = plt.subplots(len(workers), len(MICROVERSIONS), squeeze=False,
                             figsize=(7 * len(MICROVERSIONS), 3.6 * len(workers)))
    timeout_ms = result["reader_timeout_s"] * 1000
    for r in runs:
        ax = axes[workers.index(r["workers"])][MICROVERSIONS.index(r["microversion"])]
        ok = [s for s in r["reader_samples"] if s.get("status") == 200]
        bad = [s for s in r["reader_samples"] if s.get("status") != 200]
        ax.scatter([s["t"] for s in ok], [s["latency"] * 1000 for s in ok], s=4,
                   label="reader GET /servers/{id}")
        if bad:
            ax.scatter([s["t"] for s in bad], [s["latency"] * 1000 for s in bad], s=18,
                       marker="x", color="red", label="reader timeout/error")
        att = [s for s in r["attach_samples"] if s.get("latency") is not None]
        ax.scatter([s["t"] + s["latency"] for s in att], [s["latency"] * 1000 for s in att],
                   s=8, color="gray", alpha=0.6, label="attach POST (at its answer)")
        ax.axvspan(r["burst_start"], r["window_end"], color="orange", alpha=0.15,
                   label="burst")
        ax.axhline(timeout_ms, color="red", linestyle=":", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_xlabel("time, s")
        ax.set_ylabel("latency, ms (log)")
        st = r["stats"]["reader_burst"]
        ax.set_title("%d worker(s) x %d threads, microversion %s\nreader in burst: p50 %s ms,"
                     " %d timeouts" % (r["workers"], r["threads"], r["microversion"],
                                       report.ms(st.get("p50"), 1), st["timeouts"]),
                     fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
