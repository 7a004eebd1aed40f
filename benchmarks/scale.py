"""Scenario C: request cost must not grow with the database.

One multi-process deployment (PostgreSQL).  A project ``bench`` holds 10
servers with 5 attached volumes each (made through the API), plus a probe
server that receives the measured attaches.  The same measurements are made
twice, on the database as it is (*empty*: only those rows), then after
seeding it with ``--servers`` (10,000) servers of 100 other projects and
``--attachments`` (50,000) volume block-device mappings, inserted directly
with SQL (copies of the real rows with new ids) and ANALYZEd:

- ``GET /servers/{id}/os-volume_attachments`` (a server with 5 volumes),
- ``GET /servers/detail`` (the project's 11 servers),
- ``GET /servers/{id}``,
- ``GET /servers/detail?all_tenants=1&limit=10`` as admin (one page over
  the whole table: sorted by created_at), the same page after a marker
  half way down the list, and with ``status=ERROR`` (which no server is),
- ``POST /servers/{id}/os-volume_attachments`` at 2.101 with a real volume
  (then waiting until it is in-use before the next one; the probe's volumes
  are detached again after the phase).

One client, one request at a time (no queueing).  Per request type: latency
(p50, p99), CPU per request of every process of the deployment, and from
``pg_stat_database`` the transactions and rows read per request in the
compute database: flat per-request transactions mean no N+1 queries, flat
rows read mean the queries use indexes.
"""
import datetime
import os
import random
import time
import uuid

from benchmarks import cpu
from benchmarks import deploy
from benchmarks import load
from benchmarks import report

MV = "2.101"
SEED_PROJECTS = 100


def _requests(dep, ids, n_attach):
    """(kind, label, function) of each measured request type."""
    api = load.compute_client(dep.api_url)
    admin = load.compute_client(dep.api_url, token=load.ADMIN_TOKEN)
    server = ids["servers"][0]

    def get(client, path, params=None):
        def call():
            status, body, lat = client.call("GET", path, microversion=MV, params=params)
            if status != 200:
                raise load.BenchError("GET %s: %s %s" % (path, status, str(body)[:200]))
            return lat
        return call

    return api, admin, [
        ("list_attachments", "GET /servers/{id}/os-volume_attachments",
         get(api, "/servers/%s/os-volume_attachments" % server)),
        ("servers_detail", "GET /servers/detail (project: %d servers)" % (
            len(ids["servers"]) + 1), get(api, "/servers/detail")),
        ("server_show", "GET /servers/{id}", get(api, "/servers/%s" % server)),
        ("admin_detail_page", "GET /servers/detail?all_tenants=1&limit=10 (admin)",
         get(admin, "/servers/detail", {"all_tenants": "1", "limit": "10"})),
        ("admin_detail_marker", "the same page after a marker half way down (admin)",
         get(admin, "/servers/detail", {"all_tenants": "1", "limit": "10",
                                        "marker": ids["marker"]})),
        ("admin_detail_status", "GET /servers/detail?all_tenants=1&status=ERROR&limit=10 "
         "(admin; no server in ERROR)",
         get(admin, "/servers/detail", {"all_tenants": "1", "limit": "10",
                                        "status": "ERROR"})),
    ]


def _middle_server(dep):
    """The server half way down the all-tenants list (newest first)."""
    conn = dep.connect("nova")
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT uuid FROM instances WHERE deleted = 0 ORDER BY created_at "
                        "DESC, id DESC OFFSET (SELECT count(*) / 2 FROM instances "
                        "WHERE deleted = 0) LIMIT 1")
            return cur.fetchone()[0]
    finally:
        conn.close()


class _DbCounters:
    """pg_stat_database counters of the deployment's databases."""

    FIELDS = ("xact_commit", "xact_rollback", "tup_returned", "tup_fetched",
              "tup_inserted", "tup_updated", "tup_deleted")

    def __init__(self, dep, quick=False):
        self.dep = dep
        if quick:   # the counters will lag: --quick only checks the harness
            self.FLUSH_WAIT = 1.0
        self.names = {"nova": dep.run_id + "_nova", "volume": dep.run_id + "_volume"}

    # An idle PostgreSQL (15+) backend may keep its statistics up to 10 s
    # before it reports them.
    FLUSH_WAIT = 11.0

    def read(self):
        time.sleep(self.FLUSH_WAIT)
        conn = self.dep.connect("nova")
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT datname, %s FROM pg_stat_database WHERE datname = ANY(%%s)"
                            % ", ".join(self.FIELDS), (list(self.names.values()),))
                rows = {r[0]: dict(zip(self.FIELDS, r[1:])) for r in cur.fetchall()}
        finally:
            conn.close()
        return {k: rows.get(v, {}) for k, v in self.names.items()}

    @staticmethod
    def per_request(before, after, n):
        out = {}
        for db in before:
            d = {f: (after[db].get(f, 0) - before[db].get(f, 0)) / n for f in before[db]}
            d["transactions"] = d.pop("xact_commit") + d.pop("xact_rollback")
            out[db] = {k: round(v, 2) for k, v in d.items()}
        return out


def _measure(dep, ids, args, phase, bar):
    api, admin, kinds = _requests(dep, ids, args.requests)
    counters = _DbCounters(dep, quick=args.quick)
    groups = dict(dep.cpu_groups())
    results = {}
    n = args.requests
    for _kind, _label, call in kinds:
        for _ in range(5):
            call()   # warm-up
    before = counters.read()
    for kind, label, call in kinds:
        meter = cpu.CpuMeter(groups).start()
        latencies = []
        for _ in range(n):
            latencies.append(call())
            bar.update(1)
        cpu_seconds = meter.stop()
        after = counters.read()
        results[kind] = _entry(label, latencies, cpu_seconds, counters.per_request(
            before, after, n))
        before = after
    # attaches: one at a time, each waited for until in-use
    vol = load.volume_client(dep.volume_url)
    volumes = ids["probe_volumes"]
    meter = cpu.CpuMeter(groups).start()
    latencies = []
    for volume_id in volumes:
        status, body, lat = api.call("POST", "/servers/%s/os-volume_attachments" % ids["probe"],
                                     {"volumeAttachment": {"volumeId": volume_id}},
                                     microversion=MV)
        if status != 202:
            raise load.BenchError("attach: %s %s" % (status, str(body)[:300]))
        latencies.append(lat)
        load.wait_volumes(dep.volume_url, [volume_id], "in-use", interval=0.02, client=vol)
        bar.update(1)
    cpu_seconds = meter.stop()
    after = counters.read()
    results["attach_post"] = _entry("POST os-volume_attachments 2.101 (CPU and DB: whole "
                                     "attach workflow)", latencies, cpu_seconds,
                                     counters.per_request(before, after, len(volumes)))
    # put the probe back as it was
    for volume_id in volumes:
        status, body, _ = api.call("DELETE", "/servers/%s/os-volume_attachments/%s"
                                   % (ids["probe"], volume_id), microversion=MV)
        if status != 202:
            raise load.BenchError("detach: %s %s" % (status, str(body)[:300]))
    load.wait_volumes(dep.volume_url, volumes, "available", client=vol)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status, body, _ = api.call("GET", "/servers/%s/os-volume_attachments" % ids["probe"])
        if status == 200 and not body["volumeAttachments"]:
            break
        time.sleep(0.1)
    for c in (api, admin, vol):
        c.close()
    return {"name": phase, "requests": results}


def _entry(label, latencies, cpu_seconds, db):
    n = len(latencies)
    roles = report.cpu_roles(cpu_seconds)
    return {"label": label, "latency": report.summarize(latencies), "samples": latencies,
            "cpu_seconds": cpu_seconds,
            "cpu_per_request": {k: v / n for k, v in roles.items()}, "db_per_request": db}


# -- seeding -----------------------------------------------------------------------

def seed(dep, n_servers, n_attachments, template_instance, bar=None):
    """Insert ``n_servers`` instances of other projects and ``n_attachments``
    volume BDMs spread over them, copying the template rows."""
    from psycopg2.extras import execute_values
    conn = dep.connect("nova")
    conn.autocommit = False
    rng = random.Random(6)
    now = datetime.datetime.utcnow()
    try:
        with conn.cursor() as cur:
            def template(table, where, value):
                cur.execute("SELECT * FROM %s WHERE %s = %%s LIMIT 1" % (table, where), (value,))
                row = cur.fetchone()
                if row is None:
                    raise load.BenchError("no template row in %s" % table)
                cols = [d[0] for d in cur.description]
                return {c: v for c, v in zip(cols, row) if c != "id"}

            inst = template("instances", "uuid", template_instance)
            bdm = template("block_device_mappings", "instance_uuid", template_instance)
            inst_cols, bdm_cols = list(inst), list(bdm)
            uuids = []
            rows = []
            for i in range(n_servers):
                project = "seed-%04d" % (i % SEED_PROJECTS)
                u = str(uuid.uuid4())
                uuids.append(u)
                r = dict(inst, uuid=u, project_id=project, user_id="seed",
                         display_name="seed-%d" % i, hostname="seed-%d" % i,
                         host="compute%d" % (i % 2 + 1), node="compute%d" % (i % 2 + 1),
                         reservation_id="r-seed%d" % i,
                         created_at=now - datetime.timedelta(seconds=rng.randint(60, 86400 * 30)),
                         updated_at=None)
                rows.append(tuple(r[c] for c in inst_cols))
            execute_values(cur, "INSERT INTO instances (%s) VALUES %%s" % ", ".join(
                '"%s"' % c for c in inst_cols), rows, page_size=1000)
            if bar is not None:
                bar.update(n_servers)
            rows = []
            per = max(1, n_attachments // max(1, n_servers))
            for j in range(n_attachments):
                owner = uuids[(j // per) % len(uuids)]
                r = dict(bdm, uuid=str(uuid.uuid4()), instance_uuid=owner,
                         volume_id=str(uuid.uuid4()), attachment_id=str(uuid.uuid4()),
                         device_name="/dev/vd%s" % chr(ord("b") + j % per),
                         created_at=now, updated_at=None)
                rows.append(tuple(r[c] for c in bdm_cols))
            execute_values(cur, "INSERT INTO block_device_mappings (%s) VALUES %%s" % ", ".join(
                '"%s"' % c for c in bdm_cols), rows, page_size=1000)
            if bar is not None:
                bar.update(n_attachments)
        conn.commit()
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("ANALYZE instances")
            cur.execute("ANALYZE block_device_mappings")
            cur.execute("SELECT count(*) FROM instances")
            instances = cur.fetchone()[0]
            cur.execute("SELECT count(*) FROM block_device_mappings")
            bdms = cur.fetchone()[0]
    finally:
        conn.close()
    return {"instances": instances, "block_device_mappings": bdms}


def run(args, workdir):
    rabbit, pg = deploy.service_urls()
    n_servers = 2 if args.quick else 10
    per_server = 2 if args.quick else 5
    n_probe = 5 if args.quick else 30
    with deploy.MultiProcessDeployment(
            os.path.join(workdir, "c"), rabbit, pg, workers=args.workers or 2,
            threads=args.threads, computes=args.computes, keep=args.keep) as dep:
        servers = load.create_servers(dep.api_url, n_servers + 1, concurrency=4)
        ids = {"servers": servers[1:], "probe": servers[0]}
        volumes = load.create_volumes(dep.volume_url, n_servers * per_server + n_probe)
        ids["probe_volumes"] = volumes[:n_probe]
        api = load.compute_client(dep.api_url)
        attached = volumes[n_probe:]
        for i, volume_id in enumerate(attached):
            status, body, _ = api.call(
                "POST", "/servers/%s/os-volume_attachments" % ids["servers"][i // per_server],
                {"volumeAttachment": {"volumeId": volume_id}}, microversion=MV)
            if status != 202:
                raise load.BenchError("attach: %s %s" % (status, body))
        load.wait_volumes(dep.volume_url, attached, "in-use")
        api.close()
        per_phase = 6 * args.requests + n_probe
        ids["marker"] = _middle_server(dep)
        phases = []
        bar = report.progress(total=per_phase, desc="C empty database", unit="req")
        try:
            phases.append(_measure(dep, ids, args, "empty", bar))
        finally:
            bar.close()
        bar = report.progress(total=args.servers + args.attachments, desc="C seeding",
                              unit="row")
        t0 = time.perf_counter()
        try:
            counts = seed(dep, args.servers, args.attachments, ids["servers"][0], bar)
        finally:
            bar.close()
        seed_seconds = time.perf_counter() - t0
        ids["marker"] = _middle_server(dep)
        bar = report.progress(total=per_phase, desc="C seeded database", unit="req")
        try:
            phases.append(_measure(dep, ids, args, "seeded", bar))
        finally:
            bar.close()
        result = {"scenario": "C", "deployment": dep.describe(),
                  "seeded": {"servers": args.servers, "attachments": args.attachments,
                             "rows_after": counts, "seconds": seed_seconds},
                  "project": {"servers": n_servers + 1, "attachments_per_server": per_server,
                              "probe_attaches": n_probe},
                  "phases": phases}
    result["summary_md"] = summary_md(result)
    return result


def summary_md(result):
    seeded = result["seeded"]["rows_after"]
    lines = ["## Scenario C: cost per request, empty database vs %d servers / %d "
             "attachments (PostgreSQL, gunicorn %s x %s)" % (
                 seeded["instances"], seeded["block_device_mappings"],
                 result["deployment"]["api_workers"], result["deployment"]["api_threads"]),
             "", "One client, one request at a time.  Latency in ms; CPU in ms per request "
             "over every process of the deployment; DB = per request in the compute "
             "database (pg_stat_database): transactions, rows returned by scans + fetched "
             "by index.", ""]
    empty, full = result["phases"][0]["requests"], result["phases"][1]["requests"]
    rows = []
    for kind in empty:
        e, f = empty[kind], full[kind]
        de, df = e["db_per_request"]["nova"], f["db_per_request"]["nova"]
        rows.append([
            e["label"],
            "%s / %s" % (report.ms(e["latency"]["p50"], 2), report.ms(e["latency"]["p99"], 2)),
            "%s / %s" % (report.ms(f["latency"]["p50"], 2), report.ms(f["latency"]["p99"], 2)),
            "%s -> %s" % (report.ms(e["cpu_per_request"]["deployment"], 1),
                          report.ms(f["cpu_per_request"]["deployment"], 1)),
            "%s -> %s" % (de.get("transactions"), df.get("transactions")),
            "%s -> %s" % (round(de.get("tup_returned", 0) + de.get("tup_fetched", 0), 1),
                          round(df.get("tup_returned", 0) + df.get("tup_fetched", 0), 1)),
        ])
    lines.append(report.markdown_table(
        ["request", "empty p50 / p99", "seeded p50 / p99", "CPU/request empty -> seeded",
         "DB transactions/request", "DB rows read/request"], rows))
    lines += ["", "Seeding took %.1f s." % result["seeded"]["seconds"]]
    return "\n".join(lines)


SHORT = {"list_attachments": "GET os-volume_\nattachments",
         "servers_detail": "GET servers/\ndetail",
         "server_show": "GET servers/{id}",
         "admin_detail_page": "GET servers/detail\nall_tenants (admin)",
         "admin_detail_marker": "admin page\nafter a marker",
         "admin_detail_status": "admin page\nstatus=ERROR",
         "attach_post": "POST attach 2.101\n(whole workflow)"}


def plot(result, path):
    import matplotlib.pyplot as plt
    empty, full = result["phases"][0]["requests"], result["phases"][1]["requests"]
    kinds = list(empty)
    fig, axes = plt.subplots(1, 3, figsize=(18, 5))
    x = range(len(kinds))
    panels = (
        (axes[0], lambda d: d["latency"]["p50"] * 1000, "latency p50 (bar) and p99 (tick), ms",
         False),
        (axes[1], lambda d: d["cpu_per_request"]["deployment"] * 1000,
         "deployment CPU per request, ms (log)", True),
        (axes[2], lambda d: d["db_per_request"]["nova"].get("tup_returned", 0)
         + d["db_per_request"]["nova"].get("tup_fetched", 0),
         "compute DB rows read per request (log)", True))
    for ax, value, title, log in panels:
        for offset, (phase, data, color) in enumerate((("empty", empty, "tab:blue"),
                                                      ("seeded", full, "tab:orange"))):
            xs = [i + (offset - 0.5) * 0.4 for i in x]
            ax.bar(xs, [max(1e-3, value(data[k])) for k in kinds], width=0.4, color=color,
                   label=phase)
            if ax is axes[0]:
                ax.scatter(xs, [data[k]["latency"]["p99"] * 1000 for k in kinds],
                           marker="_", s=200, color="black")
        if log:
            ax.set_yscale("log")
        ax.set_xticks(list(x))
        ax.set_xticklabels([SHORT.get(k, k) for k in kinds], fontsize=7)
        ax.set_title(title)
        ax.legend()
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle("Scenario C: empty database vs %d servers / %d attachments" % (
        result["seeded"]["rows_after"]["instances"],
        result["seeded"]["rows_after"]["block_device_mappings"]))
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
