"""Scenarios B and D: full attach + detach cycles at 2.101, no driver latency.

A cycle, by one client: ``POST os-volume_attachments`` (2.101: 202), poll
the volume in the volume service until ``in-use``, ``GET
os-volume_attachments`` (the volume must be listed), ``DELETE`` the
attachment (202), poll until ``available``.  Each client owns one server and
two volumes that it uses in turn.

Phases, each with its own CPU window over every process of the deployment:

- ``sequential``: one client, cycles back to back on an otherwise idle
  system: the latency of each request without queueing (the figures to
  compare with real Nova's functional harness: 11.3 ms median POST at 2.101,
  10.5 ms median GET os-volume_attachments);
- ``concurrent``: ``--concurrency`` clients for ``--duration`` seconds: the
  throughput (completed cycles per second) and the CPU seconds per cycle
  (real Nova: about 93 ms per cycle, about 6 cycles/s).

B runs it against the multi-process deployment (RabbitMQ, PostgreSQL,
gunicorn), D against ``volattach-all`` (in-memory transport, SQLite).
"""
import time

from benchmarks import cpu
from benchmarks import load
from benchmarks import report

TARGETS = {"cpu_per_cycle": 0.010, "attach_post_p50": 0.002, "list_p50": 0.001}
NOVA = {"cpu_per_cycle": 0.093, "attach_post_p50": 0.0113, "list_p50": 0.0105,
        "cycles_per_s": 6.0}
LATENCY_KEYS = (("attach_post", "POST attach (2.101)"),
                ("list_attachments", "GET os-volume_attachments"),
                ("detach_delete", "DELETE attachment"),
                ("attach_e2e", "attach -> in-use"),
                ("detach_e2e", "detach -> available"),
                ("cycle", "whole cycle"))


def measure_phase(name, deployment, pairs, duration=None, cycles=None):
    groups = dict(deployment.cpu_groups())
    groups["client"] = cpu.self_group()
    meter = cpu.CpuMeter(groups)
    desc = "%s: %s" % (name, "%d cycles" % cycles if cycles else "%gs" % duration)
    bar = report.progress(total=cycles, desc=desc, unit="cycle")
    meter.start()
    try:
        samples, errors, wall = load.run_cycles(
            deployment.api_url, deployment.volume_url, pairs, duration=duration,
            cycles=cycles, progress=bar.update)
    finally:
        cpu_seconds = meter.stop()
        bar.close()
    return phase_summary(name, len(pairs), samples, errors, wall, cpu_seconds,
                         meter.processes)


def measure_idle(deployment, seconds):
    """CPU the deployment burns with no request at all (heartbeats, RPC
    listeners' polling): seconds of CPU per second of wall time, per group."""
    groups = dict(deployment.cpu_groups())
    meter = cpu.CpuMeter(groups)
    report.log("idle: measuring the deployment's CPU for %gs with no load" % seconds)
    meter.start()
    time.sleep(seconds)
    cpu_seconds = meter.stop()
    return {"wall_s": meter.wall, "cpu_seconds": cpu_seconds,
            "cpu_per_s": {g: v / meter.wall for g, v in cpu_seconds.items()},
            "cpu_roles_per_s": {k: v / meter.wall
                                for k, v in report.cpu_roles(cpu_seconds).items()}}


def phase_summary(name, clients, samples, errors, wall, cpu_seconds, processes=None):
    n = len(samples)
    roles = report.cpu_roles(cpu_seconds)
    latency = {key: report.summarize([s.get(key) for s in samples])
               for key, _ in LATENCY_KEYS}
    per_cycle = {k: (v / n if n else None) for k, v in roles.items()}
    per_cycle_groups = {k: (v / n if n else None) for k, v in cpu_seconds.items()}
    return {
        "name": name, "clients": clients, "cycles": n, "errors": errors,
        "wall_s": wall, "cycles_per_s": n / wall if wall else None,
        "latency": latency,
        "polls_per_cycle": (sum(s["polls"] for s in samples) / n) if n else None,
        "requests_per_cycle": (sum(s["requests"] for s in samples) / n) if n else None,
        "retries": sum(s.get("retries", 0) for s in samples),
        "cpu_seconds": cpu_seconds, "cpu_roles": roles, "cpu_processes": processes,
        "cpu_per_cycle": per_cycle, "cpu_per_cycle_by_group": per_cycle_groups,
        "samples": samples,
    }


def run(deployment, args, scenario):
    """Set up, warm up, measure both phases; returns the result dict."""
    concurrency = args.concurrency
    sequential_cycles = args.sequential_cycles
    duration = args.duration
    report.log("creating %d servers and %d volumes" % (concurrency, 2 * concurrency))
    servers = load.create_servers(deployment.api_url, concurrency)
    volumes = load.create_volumes(deployment.volume_url, 2 * concurrency)
    pairs = [(servers[i], volumes[2 * i:2 * i + 2]) for i in range(concurrency)]
    report.log("warm-up: one cycle per client")
    load.run_cycles(deployment.api_url, deployment.volume_url, pairs, cycles=concurrency)
    idle = measure_idle(deployment, 0.5 if args.quick else 5.0)
    phases = [
        measure_phase("sequential", deployment, pairs[:1], cycles=sequential_cycles),
        measure_phase("concurrent", deployment, pairs, duration=duration),
    ]
    result = {"scenario": scenario, "deployment": deployment.describe(),
              "concurrency": concurrency, "idle": idle, "phases": phases}
    result["summary_md"] = summary_md(result)
    return result


def summary_md(result):
    title = {"B": "Scenario B: attach+detach cycles, multi-process (RabbitMQ, PostgreSQL, "
                  "gunicorn %s workers x %s threads)" % (
                      result["deployment"].get("api_workers"),
                      result["deployment"].get("api_threads")),
             "D": "Scenario D: attach+detach cycles, all-in-one process "
                  "(in-memory transport, SQLite)"}[result["scenario"]]
    lines = ["## " + title, ""]
    rows = []
    for p in result["phases"]:
        rows.append([p["name"], p["clients"], p["cycles"], len(p["errors"]),
                     "%.1f" % p["cycles_per_s"] if p["cycles_per_s"] else "-",
                     "%.1f" % p["requests_per_cycle"] if p["requests_per_cycle"] else "-"])
    lines.append(report.markdown_table(
        ["phase", "clients", "cycles", "errors", "cycles/s", "HTTP requests/cycle"], rows))
    lines += ["", "Latency, ms (p50 / p99):", ""]
    rows = []
    for key, label in LATENCY_KEYS:
        row = [label]
        for p in result["phases"]:
            s = p["latency"][key]
            row.append("%s / %s" % (report.ms(s.get("p50"), 2), report.ms(s.get("p99"), 2)))
        rows.append(row)
    lines.append(report.markdown_table(["request"] + [p["name"] for p in result["phases"]],
                                       rows))
    lines += ["", "CPU per cycle, ms (all processes of the deployment; the client "
              "and the rest of the machine apart):", ""]
    groups = [g for g in result["phases"][0]["cpu_per_cycle_by_group"]
              if g not in ("client", "other")]
    rows = []
    for p in result["phases"]:
        per = p["cpu_per_cycle_by_group"]
        roles = p["cpu_per_cycle"]
        rows.append([p["name"]] + [report.ms(per.get(g)) for g in groups]
                    + ["**%s**" % report.ms(roles["deployment"]),
                       report.ms(roles["client"]), report.ms(roles["other"])])
    idle = result["idle"]["cpu_per_s"]
    rows.append(["*idle, ms per second*"] + [report.ms(idle.get(g)) for g in groups]
                + ["*%s*" % report.ms(result["idle"]["cpu_roles_per_s"]["deployment"]),
                   "-", report.ms(idle.get("other"))])
    lines.append(report.markdown_table(["phase"] + groups + ["deployment total",
                                                            "client", "rest of machine"], rows))
    lines += ["", "The idle row is CPU used with no request at all (heartbeats, RPC "
              "listeners), per second: at N cycles/s, idle/N of each cycle's CPU is "
              "background cost.", "", "By role, ms per cycle:", ""]
    rows = [[p["name"]] + [report.ms(p["cpu_per_cycle"][r])
                           for r in ("volattach", "broker", "database", "deployment")]
            for p in result["phases"]]
    lines.append(report.markdown_table(["phase", "volattach processes", "broker",
                                        "database", "total"], rows))
    seq, conc = result["phases"][0], result["phases"][-1]
    lines += ["", "Against the targets (real Nova 34 measured on this machine in brackets):",
              "",
              report.markdown_table(["figure", "measured", "target", "real Nova"], [
                  ["CPU per cycle, ms (concurrent)", report.ms(conc["cpu_per_cycle"]["deployment"]),
                   "<= 10", "93"],
                  ["CPU per cycle, ms (sequential)", report.ms(seq["cpu_per_cycle"]["deployment"]),
                   "<= 10", "93"],
                  ["POST attach 2.101 median, ms (sequential)",
                   report.ms(seq["latency"]["attach_post"].get("p50"), 2), "<= 2", "11.3"],
                  ["GET os-volume_attachments median, ms (sequential)",
                   report.ms(seq["latency"]["list_attachments"].get("p50"), 2), "<= 1", "10.5"],
                  ["cycles/s (concurrent)", "%.1f" % (conc["cycles_per_s"] or 0), "-", "about 6"],
              ])]
    errors = [e for p in result["phases"] for e in p["errors"]]
    if errors:
        lines += ["", "Errors (first 5): " + "; ".join(e["error"] for e in errors[:5])]
    return "\n".join(lines)


def plot(result, path):
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(17, 5))
    conc = result["phases"][-1]
    ax = axes[0]
    for key, label in LATENCY_KEYS:
        values = sorted(s[key] * 1000 for s in conc["samples"] if s.get(key) is not None)
        if values:
            ax.plot(values, [(i + 1) / len(values) for i in range(len(values))], label=label)
    ax.set_xscale("log")
    ax.set_xlabel("latency, ms (log)")
    ax.set_ylabel("fraction of requests")
    ax.set_title("%s concurrent (%d clients): latency CDF" % (result["scenario"],
                                                               conc["clients"]))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax = axes[1]
    ends = sorted(s["t"] + s["cycle"] for s in conc["samples"])
    if ends:
        width = 1.0
        bins = int(max(ends) / width) + 1
        counts = [0] * bins
        for t in ends:
            counts[int(t / width)] += 1
        ax.bar([i * width for i in range(bins)], counts, width=width * 0.9, align="edge")
    ax.set_xlabel("time, s")
    ax.set_ylabel("completed cycles per second")
    ax.set_title("throughput over time (%.1f cycles/s)" % (conc["cycles_per_s"] or 0))
    ax = axes[2]
    names = [p["name"] for p in result["phases"]]
    groups = [g for g in conc["cpu_per_cycle_by_group"] if g not in ("client", "other")]
    bottoms = [0.0] * len(names)
    for g in groups:
        values = [(p["cpu_per_cycle_by_group"].get(g) or 0) * 1000 for p in result["phases"]]
        ax.bar(names, values, bottom=bottoms, label=g)
        bottoms = [b + v for b, v in zip(bottoms, values)]
    idle = result.get("idle")
    if idle:
        background = [1000 * idle["cpu_roles_per_s"]["deployment"] / p["cycles_per_s"]
                      if p["cycles_per_s"] else 0 for p in result["phases"]]
        ax.scatter(names, background, marker="_", s=900, color="black", zorder=3,
                   label="idle CPU rate / cycles per s")
    ax.axhline(10, color="green", linestyle="--", label="target 10 ms")
    ax.set_ylabel("CPU ms per cycle (deployment)")
    ax.set_title("CPU per attach+detach cycle by process")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
