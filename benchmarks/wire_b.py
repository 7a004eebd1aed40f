"""What crosses the wire per attach+detach cycle in the production shape
(scenario B's deployment: gunicorn, RabbitMQ, PostgreSQL), by daemon.

``python -m benchmarks.wire_b [--cycles 60] [--concurrency 1] [--workers 2]``

Starts the deployment, warms it up, then runs ``--cycles`` cycles with
``--concurrency`` clients and reports, per cycle and per daemon:

* RabbitMQ: the broker's socket reads and writes (``recv_cnt``,
  ``send_cnt``) and bytes of each AMQP connection of the deployment's
  virtual host, attributed to its daemon by the ``connection_name``
  oslo.messaging gives it (``<program>:<pid>:<uuid>``).  A read is one
  message (or a few frames sent together: a publish, an ack, a
  confirm...) reaching the broker; a write one going out;
* PostgreSQL: the transactions (``xact_commit`` + ``xact_rollback``) and
  rows read and written of the compute and the volume databases
  (``pg_stat_database``; an idle backend reports within 10 s, so the
  harness waits 11 s before each reading);
* HTTP: the requests each API served (its access log lines), so the
  conductor's and the API's calls to the volume service show beside the
  client's;
* CPU per daemon over the same cycles (``benchmarks.cpu``).

Counts, unlike CPU, do not move with the machine's load (the polls of the
volume service do: a slower attach is polled more often).  Writes
``<output-dir>/<timestamp>-wire-B.{md,json}``.
"""
import argparse
import json
import os
import re
import shutil
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
from benchmarks import report  # noqa: E402

# PostgreSQL reports an idle backend's statistics within 10 s (PG 15)
PG_STATS_DELAY = 11.0
PG_COUNTERS = ("xact_commit", "xact_rollback", "tup_returned", "tup_fetched",
               "tup_inserted", "tup_updated", "tup_deleted")
RABBIT_COUNTERS = ("recv_cnt", "send_cnt", "recv_oct", "send_oct")
# an access log line: "... "GET /v3/... HTTP/1.1" 200 ..."
_REQUEST = re.compile(r'"(GET|POST|PUT|DELETE|PATCH|HEAD) ([^" ]+)')


def rabbit_connections(vhost, node):
    """{connection_name: {counter: value}} of the vhost's AMQP connections
    (``rabbitmqctl`` against the local ``node``)."""
    exe = shutil.which("rabbitmqctl") or "/usr/sbin/rabbitmqctl"
    out = subprocess.run(
        [exe, "-q", "-n", node, "list_connections", "--formatter", "json",
         "vhost", "client_properties", *RABBIT_COUNTERS],
        capture_output=True, text=True, timeout=60, check=True).stdout
    result = {}
    for conn in json.loads(out or "[]"):
        if conn.get("vhost") != vhost:
            continue
        props = conn.get("client_properties")
        name = None
        if isinstance(props, dict):
            name = props.get("connection_name")
        elif isinstance(props, list):       # [[key, type, value], ...]
            for item in props:
                if item and item[0] == "connection_name":
                    name = item[-1]
        result[name or repr(props)[:60]] = {k: conn.get(k, 0) for k in RABBIT_COUNTERS}
    return result


def by_daemon(connections, pids):
    """Sum the connections' counters per daemon ({pid: daemon} from the
    deployment); ``other`` for a name with no pid of ours."""
    sums = {}
    for name, counters in connections.items():
        parts = str(name).split(":")
        daemon = "other"
        if len(parts) >= 2 and parts[1].isdigit():
            daemon = pids.get(int(parts[1]), "other")
        entry = sums.setdefault(daemon, dict.fromkeys(RABBIT_COUNTERS, 0))
        entry["connections"] = entry.get("connections", 0) + 1
        for k in RABBIT_COUNTERS:
            entry[k] += counters[k]
    return sums


def pg_counters(dep):
    result = {}
    for which in ("nova", "volume"):
        conn = dep.connect(which)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT %s FROM pg_stat_database WHERE datname = "
                            "current_database()" % ", ".join(PG_COUNTERS))
                result[which] = dict(zip(PG_COUNTERS, cur.fetchone()))
        finally:
            conn.close()
    return result


def http_requests(dep):
    """{daemon: {"GET /v3/{id}/volumes/{x}": count}} from the access logs
    of the API and the volume service (ids folded)."""
    result = {}
    for name in ("api", "volume"):
        counts = {}
        path = dep.procs.log_path(name)
        try:
            with open(path, errors="replace") as f:
                for line in f:
                    m = _REQUEST.search(line)
                    if m:
                        route = re.sub(r"/[0-9a-f-]{32,36}", "/{id}", m.group(2).split("?")[0])
                        key = "%s %s" % (m.group(1), route)
                        counts[key] = counts.get(key, 0) + 1
        except OSError:
            pass
        result[name] = counts
    return result


def context_switches(pids):
    """{daemon: voluntary context switches of its live threads} (a thread
    that waits and wakes up switches once; threads that ended are not
    counted)."""
    result = {}
    for pid, daemon in pids.items():
        try:
            tasks = os.listdir("/proc/%d/task" % pid)
        except OSError:
            continue
        for tid in tasks:
            try:
                with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                    for line in f:
                        if line.startswith("voluntary_ctxt_switches:"):
                            result[daemon] = result.get(daemon, 0) + int(line.split()[1])
            except OSError:
                pass
    return result


def _delta(after, before):
    if isinstance(after, dict):
        return {k: _delta(v, before.get(k, 0) if isinstance(before, dict) else 0)
                for k, v in after.items()}
    return after - (before or 0)


def snapshot(dep):
    time.sleep(PG_STATS_DELAY)
    pids = {}
    for name, proc in dep.procs.processes.items():
        for pid in cpu.tree_pids(proc.pid):
            pids[pid] = name
    return {"rabbit": by_daemon(rabbit_connections(
        dep.vhost.name, getattr(dep.vhost, "node", None) or "rabbit@localhost"), pids),
            "pg": pg_counters(dep), "http": http_requests(dep),
            "switches": context_switches(pids)}


def run(args, workdir):
    rabbit, pg = deploy.service_urls()
    with deploy.MultiProcessDeployment(workdir, rabbit, pg, workers=args.workers,
                                       threads=args.threads, computes=2) as dep:
        n = args.concurrency
        servers = load.create_servers(dep.api_url, n)
        volumes = load.create_volumes(dep.volume_url, 2 * n)
        pairs = [(servers[i], volumes[2 * i:2 * i + 2]) for i in range(n)]
        load.run_cycles(dep.api_url, dep.volume_url, pairs, cycles=2 * n)
        before = snapshot(dep)
        groups = dict(dep.cpu_groups())
        meter = cpu.CpuMeter(groups).start()
        samples, errors, wall = load.run_cycles(dep.api_url, dep.volume_url, pairs,
                                                cycles=args.cycles)
        cpu_seconds = meter.stop()
        after = snapshot(dep)
    cycles = len(samples)
    delta = _delta(after, before)
    scale = 1.0 / max(1, cycles)

    def scaled(d):
        if isinstance(d, dict):
            return {k: scaled(v) for k, v in d.items()}
        return d * scale
    return {"scenario": "wire-B", "deployment": dep.describe(), "cycles": cycles,
            "errors": len(errors), "wall_s": wall, "cycles_per_s": cycles / wall,
            "concurrency": args.concurrency,
            "cpu_ms_per_cycle": {k: 1000 * v * scale for k, v in cpu_seconds.items()},
            "per_cycle": scaled(delta), "totals": delta,
            "connections": {d: c.get("connections", 0)
                            for d, c in after["rabbit"].items()}}


def summary_md(r):
    pc = r["per_cycle"]
    lines = ["## Scenario B on the wire: %d cycles, %d client(s), %.1f cycles/s, %d errors"
             % (r["cycles"], r["concurrency"], r["cycles_per_s"], r["errors"]), ""]
    rows = []
    for daemon, c in sorted(pc["rabbit"].items()):
        rows.append([daemon, "%d" % r["connections"].get(daemon, 0),
                     "%.1f" % c["recv_cnt"], "%.1f" % c["send_cnt"],
                     "%.0f" % c["recv_oct"], "%.0f" % c["send_oct"]])
    tot = {k: sum(c[k] for c in pc["rabbit"].values()) for k in RABBIT_COUNTERS}
    rows.append(["**all**", "", "%.1f" % tot["recv_cnt"], "%.1f" % tot["send_cnt"],
                 "%.0f" % tot["recv_oct"], "%.0f" % tot["send_oct"]])
    lines.append("RabbitMQ, per cycle (the broker's socket reads and writes per connection):")
    lines.append("")
    lines.append(report.markdown_table(
        ["daemon", "connections", "broker reads", "broker writes", "bytes in", "bytes out"],
        rows))
    lines += ["", "PostgreSQL, per cycle:", ""]
    lines.append(report.markdown_table(
        ["database", *PG_COUNTERS],
        [[db, *["%.1f" % v[k] for k in PG_COUNTERS]] for db, v in pc["pg"].items()]))
    lines += ["", "HTTP requests served, per cycle:", ""]
    rows = []
    for daemon, counts in pc["http"].items():
        for route, v in sorted(counts.items(), key=lambda kv: -kv[1]):
            if v >= 0.05:
                rows.append([daemon, route, "%.2f" % v])
    lines.append(report.markdown_table(["daemon", "request", "per cycle"], rows))
    lines += ["", "Voluntary context switches per cycle (live threads): " + ", ".join(
        "%s %.0f" % (k, v) for k, v in sorted(pc.get("switches", {}).items()))]
    lines += ["", "CPU per cycle, ms: " + ", ".join(
        "%s %.1f" % (k, v) for k, v in r["cpu_ms_per_cycle"].items()), ""]
    return "\n".join(lines)


def main(argv=None):
    warnings.filterwarnings("ignore", message=".*[Ee]ventlet.*")
    p = argparse.ArgumentParser(prog="python -m benchmarks.wire_b", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cycles", type=int, default=60)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--output-dir", default=os.path.join(HERE, "results"))
    args = p.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix="volattach-bench-wire-b-")
    try:
        result = run(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    from benchmarks import run as bench_run
    result["code"] = bench_run.code_version()
    result["options"] = vars(args)
    result["summary_md"] = summary_md(result)
    report.write_outputs(result, args.output_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
