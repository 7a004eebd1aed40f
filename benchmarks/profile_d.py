"""Where the CPU of an attach+detach cycle goes (scenario D's process).

``python -m benchmarks.profile_d [--cycles N] [--pyspy-seconds S]``

Two measurements, each written to ``<output-dir>/<timestamp>-profile-D.*``:

1. **Counts** (in this process, no sampling): every role of ``volattach-all``
   (``AllInOne``) runs here, with wrappers that attribute work to the entry
   point running on the current thread (``api:<METHOD> <route>``,
   ``volume:<METHOD> <route>``, ``rpc:<method>``): the thread's CPU time
   (``time.thread_time``), SQL statements (by verb, per database), database
   connection checkouts, RPC calls and casts sent (by method), requests to the
   volume service sent by the API/conductor (by route), versioned-object
   serializations and JSON encodings/decodings.  One client runs ``--cycles``
   sequential cycles (the cycle of scenarios B/D); everything is divided by
   the number of cycles.  The wrappers cost some CPU of their own: compare
   the shares, not the absolute figures, with scenario D.
2. **py-spy** (``pip install py-spy``): ``volattach-all`` in a subprocess,
   sampled by ``py-spy record --pid`` while ``--concurrency`` clients run
   cycles for ``--pyspy-seconds``; the raw collapsed stacks are kept
   (``.pyspy.txt``) and summarized by own time per function and by the
   share of samples under each library (SQLAlchemy, oslo.messaging,
   keystoneauth/requests, falcon, the HTTP servers, logging, JSON...).
"""
import argparse
import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks import deploy  # noqa: E402
from benchmarks import load  # noqa: E402
from benchmarks import report  # noqa: E402

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_HEX = re.compile(r"/[0-9a-f]{32}")


def route_of(path):
    return _HEX.sub("/{project}", _UUID.sub("{id}", path))


# -- 1. counts ---------------------------------------------------------------------

class Counters:
    """Counters keyed by (role, what); the role is a thread-local stack."""

    def __init__(self):
        self.counts = collections.Counter()
        self.cpu = collections.Counter()
        self.calls = collections.Counter()
        self._local = threading.local()
        self._lock = threading.Lock()
        self.enabled = False

    def _stack(self):
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def role(self):
        stack = self._stack()
        return stack[-1][0] if stack else "other"

    def count(self, what, n=1):
        if self.enabled:
            with self._lock:
                self.counts[(self.role(), what)] += n

    def enter(self, role):
        # [role, start, CPU of nested entries on this thread]
        self._stack().append([role, time.thread_time(), 0.0])

    def leave(self):
        role, t0, nested = self._stack().pop()
        spent = time.thread_time() - t0
        stack = self._stack()
        if stack:
            stack[-1][2] += spent     # the outer entry is charged its own time only
        if self.enabled:
            with self._lock:
                self.cpu[role] += spent - nested
                self.calls[role] += 1

    def wrap_role(self, role_of, func):
        counters = self

        def wrapper(*args, **kwargs):
            counters.enter(role_of(*args, **kwargs))
            try:
                return func(*args, **kwargs)
            finally:
                counters.leave()
        return wrapper


def _wsgi_role(prefix):
    def role_of(environ, start_response):
        return "%s:%s %s" % (prefix, environ.get("REQUEST_METHOD"),
                             route_of(environ.get("PATH_INFO", "")))
    return role_of


def instrument(counters):
    """Patch the libraries and volattach's entry points (this process only)."""
    import oslo_messaging
    from oslo_messaging.rpc import client as rpc_client
    from oslo_messaging.rpc import dispatcher
    from oslo_versionedobjects import base as ovo_base
    from sqlalchemy import event
    from sqlalchemy.engine import Engine
    from sqlalchemy.pool import Pool

    @event.listens_for(Engine, "before_cursor_execute")
    def _sql(conn, cursor, statement, parameters, context, executemany):
        db = "volume-db" if "volume" in str(conn.engine.url) else "compute-db"
        verb = statement.lstrip().split(None, 1)[0].upper()
        table = ""
        m = re.search(r"\b(FROM|INTO|UPDATE)\s+\"?(\w+)", statement, re.I)
        if m:
            table = " " + m.group(2)
        counters.count("sql %s %s%s" % (db, verb, table))
        counters.count("sql %s (all)" % db)

    @event.listens_for(Pool, "checkout")
    def _checkout(dbapi_conn, record, proxy):
        counters.count("db connection checkout")

    orig_dispatch = dispatcher.RPCDispatcher._do_dispatch
    def rpc_role(self, endpoint, method, ctxt, args):
        target = getattr(endpoint, "_endpoint", endpoint)   # _IndirectionEndpoint
        return "rpc:%s.%s" % (type(target).__name__, method)
    dispatcher.RPCDispatcher._do_dispatch = counters.wrap_role(rpc_role, orig_dispatch)

    for name in ("call", "cast"):
        cls = rpc_client._BaseCallContext
        orig = getattr(cls, name)

        def make(orig, name):
            def sender(self, ctxt, method, **kwargs):
                counters.count("rpc %s sent: %s" % (name, method))
                return orig(self, ctxt, method, **kwargs)
            return sender
        setattr(cls, name, make(orig, name))

    from volattach.volume_client import cinder
    orig_send = cinder.VolumeAPI._send_once

    def send_once(self, method, url, *args, **kwargs):
        counters.count("volume HTTP sent: %s %s" % (method, route_of(
            re.sub(r"^https?://[^/]+", "", url.partition("?")[0]))))
        return orig_send(self, method, url, *args, **kwargs)
    cinder.VolumeAPI._send_once = send_once

    # every object here is a VolattachObject (objects.base), which
    # serializes itself at its own version and hands other versions to
    # oslo's method (whose nested objects come back through this one)
    from volattach.objects import base as volattach_base
    orig_to_primitive = volattach_base.VolattachObject.obj_to_primitive

    def to_primitive(self, *args, **kwargs):
        counters.count("object serialized: %s" % self.obj_name())
        return orig_to_primitive(self, *args, **kwargs)
    volattach_base.VolattachObject.obj_to_primitive = to_primitive

    orig_from_primitive = ovo_base.VersionedObject.obj_from_primitive.__func__

    def from_primitive(cls, primitive, context=None):
        name = next((v for k, v in primitive.items() if k.endswith(".name")), "?")
        counters.count("object deserialized: %s" % name)
        return orig_from_primitive(cls, primitive, context)
    ovo_base.VersionedObject.obj_from_primitive = classmethod(from_primitive)

    for mod_name, func_name in (("json", "dumps"), ("json", "loads")):
        mod = sys.modules[mod_name]
        orig = getattr(mod, func_name)

        def make_json(orig, func_name):
            def f(*args, **kwargs):
                counters.count("json.%s" % func_name)
                return orig(*args, **kwargs)
            return f
        setattr(mod, func_name, make_json(orig, func_name))

    # waitress: the event loop reads, parses and writes; a pool thread runs
    # each task (environ, start_response, framing) around the application,
    # whose own time is charged to its role: the rest is the server's
    from waitress import channel as waitress_channel
    from waitress import task as waitress_task

    def server_role(name):
        def role_of(obj, *args, **kwargs):
            channel = getattr(obj, "channel", obj)        # a task
            server = getattr(channel, "server", channel)  # a channel
            return "http-server:%s (parsing, writing)" % (
                "volume" if "volume" in server.name else "api")
        return role_of
    for cls, method in ((waitress_channel.HTTPChannel, "handle_read"),
                        (waitress_channel.HTTPChannel, "handle_write"),
                        (waitress_task.WSGITask, "service")):
        setattr(cls, method, counters.wrap_role(
            server_role(method), getattr(cls, method)))
    from volattach import embedded_server
    orig_accept = embedded_server.Server.handle_accept
    embedded_server.Server.handle_accept = counters.wrap_role(
        server_role("accept"), orig_accept)

    orig_cycle = load.one_cycle
    load.one_cycle = counters.wrap_role(lambda *a, **k: "client (benchmark)", orig_cycle)

    import volattach.volume.wsgi
    orig_make_app = volattach.volume.wsgi.make_app
    volattach.volume.wsgi.make_app = lambda *a, **k: counters.wrap_role(
        _wsgi_role("volume"), orig_make_app(*a, **k))
    return oslo_messaging


def count_run(cycles, workdir):
    """AllInOne in this process, instrumented; ``cycles`` sequential cycles."""
    from volattach import conf as volattach_conf
    from volattach import embedded_server
    from volattach.cmd.all import AllInOne

    counters = Counters()
    instrument(counters)
    api_port, volume_port = deploy.free_port(), deploy.free_port()
    conf = volattach_conf.CONF
    deploy.override_in_process(conf, workdir, api_port, volume_port)
    import logging
    logging.basicConfig(level=logging.WARNING)
    aio = AllInOne(conf, serve_api=False).start()
    api_server = embedded_server.serve_in_thread(
        counters.wrap_role(_wsgi_role("api"), aio.api_app), "127.0.0.1",
        api_port, name="api", conf=conf)
    api_url = "http://127.0.0.1:%d" % api_port
    volume_url = "http://127.0.0.1:%d" % volume_port
    try:
        server = load.create_servers(api_url, 1)[0]
        volumes = load.create_volumes(volume_url, 2)
        load.run_cycles(api_url, volume_url, [(server, volumes)], cycles=4)   # warm-up
        time.sleep(0.5)
        cpu0 = time.process_time()
        counters.enabled = True
        samples, errors, wall = load.run_cycles(api_url, volume_url, [(server, volumes)],
                                                cycles=cycles)
        time.sleep(0.3)   # the last cycle's trailing work (BDM destroy, events)
        counters.enabled = False
        process_cpu = time.process_time() - cpu0
    finally:
        api_server.shutdown()
        aio.stop()
    n = len(samples)
    attributed = sum(counters.cpu.values())
    by_role = {r: 1000 * v / n for r, v in counters.cpu.most_common()}
    by_role["(unattributed: RPC pollers, heartbeats, thread starts...)"] = \
        1000 * (process_cpu - attributed) / n
    return {
        "cycles": n, "process_cpu_ms_per_cycle": 1000 * process_cpu / n, "errors": errors,
        "wall_s": wall,
        "requests_per_cycle": sum(s["requests"] for s in samples) / n,
        "polls_per_cycle": sum(s["polls"] for s in samples) / n,
        "cpu_ms_per_cycle_by_role": by_role,
        "entries_per_cycle_by_role": {r: v / n for r, v in counters.calls.most_common()},
        "counts_per_cycle": {"%s | %s" % k: v / n for k, v in counters.counts.most_common()},
        "latency": {k: report.summarize([s[k] for s in samples])
                    for k in ("attach_post", "list_attachments", "detach_delete",
                              "attach_e2e", "detach_e2e")},
    }


# -- 2. py-spy ------------------------------------------------------------------------

LIBRARIES = (
    ("SQLAlchemy (ORM + core)", "sqlalchemy/"),
    ("sqlite3 driver (C)", "sqlite3/"),
    ("oslo.messaging", "oslo_messaging/"),
    ("kombu", "kombu/"),
    ("oslo.versionedobjects", "oslo_versionedobjects/"),
    ("keystoneauth1 (volume client)", "keystoneauth1/"),
    ("requests/urllib3 (volume client)", "requests/|urllib3/"),
    ("http.client", "http/client.py"),
    ("HTTP servers (waitress, gunicorn)", "waitress/|gunicorn/|embedded_server.py"),
    ("falcon", "falcon/"),
    ("jsonschema", "jsonschema/"),
    ("json", "json/"),
    ("logging / oslo.log", "logging/|oslo_log/"),
    ("oslo.context", "oslo_context/"),
    ("oslo.policy / policy", "oslo_policy/|api/policy.py"),
    ("microversion-parse", "microversion_parse/"),
    ("threading / queue waits", "threading.py|queue.py"),
    ("uuid", "uuid.py"),
    ("copy / deepcopy", "copy.py"),
)
VOLATTACH_DIRS = ("api/", "compute/", "conductor/", "objects/", "db/", "volume/",
                  "volattach/", "rpc/")


def _frames(stack):
    return stack.split(";")


def _in_dir(directory, stack):
    """A frame of volattach's ``directory`` (py-spy shortens paths under
    sys.path: ``(conductor/manager.py:10)``, else ``/work/main/conductor/``)."""
    return re.search(r"\((?:%s/)?%s/" % (re.escape(REPO), directory), stack) is not None


def thread_kind(stack):
    """What the sampled thread was doing, from its whole stack."""
    if ("PollStyleListenerAdapter._runner" in stack or "AMQPListener.poll" in stack
            or "ReplyWaiter.poll" in stack):
        return "RPC listener/reply poll loop (oslo.messaging/kombu, no message)"
    if "wasyncore" in stack and stack.rstrip().split(";")[-1].startswith(
            ("poll", "poll2", "loop")):
        return "HTTP server event loop (waitress, waiting)"
    if "_do_dispatch" in stack:
        for directory, label in (("conductor", "conductor"), ("compute", "compute")):
            if _in_dir(directory, stack):
                return "RPC dispatch: " + label
        return "RPC dispatch: other"
    if ("handler_thread" in stack or "waitress/" in stack
            or "gunicorn/" in stack):
        if _in_dir("api", stack):
            return "HTTP: compute API request"
        if _in_dir("volume", stack):
            return "HTTP: volume service request"
        return "HTTP: server (parsing, writing; waitress or gunicorn)"
    if "_wait_for_work" in stack:
        return "idle executor thread (waiting for work)"
    if "serve_forever" in stack:
        return "HTTP: accept loop"
    if "heartbeat" in stack.lower():
        return "heartbeats"
    return "other"


IDLE_KINDS = ("RPC listener/reply poll loop (oslo.messaging/kombu, no message)",
              "idle executor thread (waiting for work)",
              "idle keep-alive connection (waiting for its next request)")


def summarize_pyspy(raw_path, top=30):
    """What the threads did (all samples); then, over the *work* samples
    (not the RPC poll loops nor idle executor threads): share under each
    library, by outermost volattach frame, and own time per function."""
    total = work = 0
    own = collections.Counter()
    under = collections.Counter()
    entry = collections.Counter()
    kinds = collections.Counter()
    inclusive = collections.Counter()
    with open(raw_path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, count = line.rpartition(" ")
            try:
                count = int(count)
            except ValueError:
                continue
            total += count
            kind = thread_kind(stack)
            kinds[kind] += count
            if kind in IDLE_KINDS:
                continue
            work += count
            frames = _frames(stack)
            own[frames[-1]] += count
            for fr in {re.sub(r":\d+\)", ")", fr) for fr in frames}:
                if any(_in_dir(d.rstrip("/"), fr) for d in VOLATTACH_DIRS):
                    inclusive[fr] += count
            for label, pattern in LIBRARIES:
                if re.search(pattern, stack):
                    under[label] += count
            # the volattach entry point nearest the thread's root
            first = next((fr for fr in frames if any(
                _in_dir(d.rstrip("/"), fr) for d in VOLATTACH_DIRS)),
                "(no volattach frame)")
            entry[re.sub(r":\d+\)", ")", first)] += count

    def pct(c, of):
        return round(100.0 * c / of, 1) if of else 0.0
    return {"samples": total, "work_samples": work,
            "thread_kind_pct": [(k, pct(c, total)) for k, c in kinds.most_common()],
            "own_time_top": [(fn, pct(c, work)) for fn, c in own.most_common(top)],
            "under_library_pct": [(lab, pct(c, work)) for lab, c in under.most_common()],
            "first_volattach_frame_pct": [(fn, pct(c, work))
                                          for fn, c in entry.most_common(20)],
            "volattach_inclusive_pct": [(fn, pct(c, work))
                                        for fn, c in inclusive.most_common(40)]}


def pyspy_run(seconds, concurrency, workdir, out_raw, rate=100):
    exe = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
    if not os.path.exists(exe):
        return {"skipped": "py-spy is not installed (pip install py-spy)"}
    with deploy.AllInOneProcess(workdir) as dep:
        servers = load.create_servers(dep.api_url, concurrency)
        volumes = load.create_volumes(dep.volume_url, 2 * concurrency)
        pairs = [(servers[i], volumes[2 * i:2 * i + 2]) for i in range(concurrency)]
        load.run_cycles(dep.api_url, dep.volume_url, pairs, cycles=2 * concurrency)
        spy = subprocess.Popen([exe, "record", "--pid", str(dep.pid), "--format", "raw",
                                "--rate", str(rate), "--duration", str(int(seconds) + 1),
                                "--nonblocking", "-o", out_raw],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        time.sleep(1.0)
        samples, errors, wall = load.run_cycles(dep.api_url, dep.volume_url, pairs,
                                                duration=seconds)
        # py-spy falls behind on a loaded 2-core machine and then samples for
        # longer than --duration: give it time, then make it write (SIGINT).
        try:
            output, _ = spy.communicate(timeout=4 * seconds + 60)
        except subprocess.TimeoutExpired:
            spy.send_signal(signal.SIGINT)
            output, _ = spy.communicate(timeout=60)
    if spy.returncode != 0 or not os.path.exists(out_raw):
        return {"skipped": "py-spy failed (%s): %s" % (spy.returncode,
                                                       output.decode(errors="replace")[-800:])}
    summary = summarize_pyspy(out_raw)
    summary.update(cycles=len(samples), wall_s=wall, concurrency=concurrency,
                   errors=len(errors), raw=out_raw)
    return summary


# -- report ------------------------------------------------------------------------------

def summary_md(result):
    lines = ["## Profile of scenario D (all-in-one process): per attach+detach cycle", ""]
    c = result.get("counts")
    if c:
        lines += ["### Counts per cycle (%d sequential cycles, %.1f HTTP requests per cycle "
                  "of which %.1f volume polls by the client)" % (
                      c["cycles"], c["requests_per_cycle"], c["polls_per_cycle"]), "",
                  "Thread CPU per entry point (instrumented, so a little inflated):", ""]
        rows = [[role, "%.2f" % ms, "%.2f" % c["entries_per_cycle_by_role"].get(role, 0),
                 "%.2f" % (ms / c["entries_per_cycle_by_role"][role])
                 if c["entries_per_cycle_by_role"].get(role) else "-"]
                for role, ms in c["cpu_ms_per_cycle_by_role"].items()]
        total = sum(c["cpu_ms_per_cycle_by_role"].values())
        rows.append(["**total**", "**%.2f**" % total, "", ""])
        lines.append(report.markdown_table(["entry point (thread)", "CPU ms/cycle",
                                            "calls/cycle", "CPU ms/call"], rows))
        lines += ["", "What each entry point does per cycle (SQL statements, connection "
                      "checkouts, RPC and volume-service requests sent, objects, JSON):", ""]
        rows = [[k.split(" | ")[0], k.split(" | ")[1], "%.2f" % v]
                for k, v in c["counts_per_cycle"].items() if v >= 0.5]
        rows.sort(key=lambda r: (r[0], -float(r[2])))
        lines.append(report.markdown_table(["entry point", "what", "per cycle"], rows))
        totals = collections.Counter()
        for k, v in c["counts_per_cycle"].items():
            what = k.split(" | ")[1]
            if what.startswith("sql ") and "(all)" in what:
                totals[what] += v
            elif what.startswith(("rpc ", "volume HTTP", "db connection", "json.",
                                  "object ")):
                totals[what.split(":")[0]] += v
        lines += ["", "Totals per cycle: " + ", ".join(
            "%s %.1f" % (k, v) for k, v in sorted(totals.items()))]
    p = result.get("pyspy")
    if p:
        lines += ["", "### py-spy (%s)" % (
            "skipped: " + p["skipped"] if "skipped" in p else
            "%d samples over %.1f s, %d clients, %d cycles" % (
                p["samples"], p["wall_s"], p["concurrency"], p["cycles"]))]
        if "skipped" not in p:
            lines += ["", "What the sampled threads were doing:", ""]
            lines.append(report.markdown_table(["thread activity", "% of samples"],
                                               p["thread_kind_pct"]))
            lines += ["", "The rest is over the %d *work* samples (not the poll loops nor "
                          "idle executor threads).  Share under each library (a sample "
                          "counts for every library on its stack):" % p["work_samples"], ""]
            lines.append(report.markdown_table(["library", "% of samples"],
                                               p["under_library_pct"]))
            lines += ["", "Share of samples by the outermost volattach frame:", ""]
            lines.append(report.markdown_table(["volattach entry frame", "%"],
                                               p["first_volattach_frame_pct"]))
            lines += ["", "Inclusive share of volattach functions (the function or "
                          "anything it calls is running):", ""]
            lines.append(report.markdown_table(["volattach function", "% of work samples"],
                                               p["volattach_inclusive_pct"][:40]))
            lines += ["", "Own time, top functions:", ""]
            lines.append(report.markdown_table(["function", "% of samples"],
                                               p["own_time_top"][:25]))
    return "\n".join(lines)


def main(argv=None):
    warnings.filterwarnings("ignore", message=".*[Ee]ventlet.*")
    p = argparse.ArgumentParser(prog="python -m benchmarks.profile_d", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cycles", type=int, default=100, help="counted cycles (default 100)")
    p.add_argument("--pyspy-seconds", type=float, default=20.0,
                   help="seconds sampled by py-spy (0: skip; default 20)")
    p.add_argument("--concurrency", type=int, default=8,
                   help="clients during the py-spy run (default 8)")
    p.add_argument("--output-dir", default=os.path.join(HERE, "results"))
    args = p.parse_args(argv)
    stem = report.output_stem(args.output_dir, "profile-D")
    from benchmarks import run as bench_run
    result = {"scenario": "profile-D", "options": vars(args),
              "code": bench_run.code_version()}
    if args.pyspy_seconds > 0:
        workdir = tempfile.mkdtemp(prefix="volattach-bench-pyspy-")
        try:
            result["pyspy"] = pyspy_run(args.pyspy_seconds, args.concurrency, workdir,
                                        stem + ".pyspy.txt")
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    if args.cycles > 0:
        workdir = tempfile.mkdtemp(prefix="volattach-bench-count-")
        try:
            result["counts"] = count_run(args.cycles, workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    result["summary_md"] = summary_md(result)
    report.write_outputs(result, args.output_dir, stem=stem)
    return 0


if __name__ == "__main__":
    sys.exit(main())
