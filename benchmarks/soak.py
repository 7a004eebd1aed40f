"""A long soak of the interleaving and fuzzing tiers on the all-in-one
deployment (every role in this process, real HTTP, SQLite), or of fuzzed
requests on the production shape (``--shape daemons``).

    .venv/bin/python -m benchmarks.soak --duration 600
    .venv/bin/python -m benchmarks.soak --duration 1800 --fuzz-examples 400
    .venv/bin/python -m benchmarks.soak --seed 1303 --duration 60   # replay
    .venv/bin/python -m benchmarks.soak --shape daemons --requests 10000

``--shape daemons``: the real daemons (volattach-api under gunicorn, the
conductor, two computes, the volume service; ``tests.integration``'s
deployment) over RabbitMQ and PostgreSQL (``VOLATTACH_TEST_RABBIT_URL``,
``VOLATTACH_TEST_PG_URL``, loopback), sent ``--requests`` fuzzed requests
drawn from the fuzz tier's strategies (schema bodies valid and mutated,
hostile route ids, query values and body strings), one at a time, the
fixture objects restored every ``--restore-every`` requests, at most
``--max-seconds``.  Prints the count per status and every 5xx; exit status
1 when there was one.

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
        # the all-in-one only: --shape daemons soaks the daemons
        [sys.executable, "-m", "pytest", "tests/fuzz", "-q", "-s",
         "--ignore", "tests/fuzz/test_daemons.py",
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


def _daemons(args):
    """``--shape daemons`` (see the module docstring): the Tally."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    from tests.fuzz import harness, test_paths, test_schemas
    from tests.integration import conftest as integration

    import warnings
    from hypothesis.errors import HypothesisWarning
    warnings.filterwarnings("ignore", category=HypothesisWarning)

    cases = [(target, version, schema) for target in test_schemas.TARGETS
             for version, schema in target[4]]
    bodies = {}        # id(schema) -> its strategy (built once each)
    tally = harness.Tally("daemons soak")
    started = time.monotonic()
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="volattach-soak-daemons-"))
    with integration.running_deployment(workdir) as dep:
        state = harness.State(dep)
        print("deployment ready in %.0f s; sending %d requests" % (
            time.monotonic() - started, args.requests), flush=True)

        def schema_request(data):
            target, version, schema = data.draw(st.sampled_from(cases))
            body = state.substitute(data.draw(st.integers(0, 2 ** 16)))(
                data.draw(bodies.setdefault(id(schema),
                                            harness.bodies(schema))))
            status, answer, _ = test_schemas.send(state, target, version,
                                                  body)
            return ("schema", target[0], version), status, answer

        def path_request(data):
            service, method, template, body = data.draw(
                st.sampled_from(test_paths.ID_ROUTES))
            value = data.draw(test_paths.ids)
            path = template.format(id=test_paths._quote(value),
                                   server=state.server)
            status, text = test_paths._send(
                state, service, method, path, test_paths._fill(body, state),
                version="2.89" if service == "compute" else "3.54")
            return ("path", method, template, repr(value)[:60]), status, text

        def query_request(data):
            service, template = data.draw(st.sampled_from(test_paths.LISTS))
            params = data.draw(st.lists(st.tuples(
                st.sampled_from(test_paths.QUERY_KEYS),
                st.one_of(harness.hostile_text,
                          harness.boundary_integers.map(str))),
                min_size=1, max_size=3))
            query = "&".join("%s=%s" % (test_paths._quote(k),
                                        test_paths._quote(v))
                             for k, v in params)
            status, text = test_paths._send(
                state, service, "GET", template.format(server=state.server),
                query=query, version="2.80" if service == "compute"
                else "3.54")
            return ("query", template, repr(params)[:80]), status, text

        def body_request(data):
            service, method, path, body, version = data.draw(
                st.sampled_from(test_paths.BODY_FIELDS))
            hostile = data.draw(harness.hostile_text)
            status, text = test_paths._send(
                state, service, method,
                path.format(free=state.free, server=state.server),
                test_paths._put(body, state, hostile), version=version)
            return ("body", method, path, repr(hostile)[:60]), status, text

        kinds = [schema_request, path_request, query_request, body_request]

        @settings(max_examples=args.requests, deadline=None, database=None,
                  phases=[Phase.generate], derandomize=False,
                  suppress_health_check=list(HealthCheck))
        @given(data=st.data())
        def one(data):
            if (tally.counts["requests"] >= args.requests
                    or time.monotonic() - started > args.max_seconds):
                return
            what, status, answer = data.draw(st.sampled_from(kinds))(data)
            tally.record(what, status, answer)
            done = tally.counts["requests"]
            if done % args.restore_every == 0:
                state.restore()
                print("[%5.0f s] %d requests, 5xx %d" % (
                    time.monotonic() - started, done,
                    len(tally.server_errors)), flush=True)

        while (tally.counts["requests"] < args.requests
               and time.monotonic() - started < args.max_seconds):
            one()
        state.restore()
    return tally


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
    parser.add_argument("--shape", choices=("all-in-one", "daemons"),
                        default="all-in-one")
    parser.add_argument("--requests", type=int, default=10000,
                        help="fuzzed requests of --shape daemons")
    parser.add_argument("--restore-every", type=int, default=250)
    parser.add_argument("--max-seconds", type=float, default=3600,
                        help="time bound of --shape daemons")
    args = parser.parse_args(argv)
    if args.shape == "daemons":
        tally = _daemons(args)
        print(tally.line())
        for what, status, body in tally.server_errors:
            print("5xx", status, what, body)
        return 1 if tally.server_errors else 0
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
