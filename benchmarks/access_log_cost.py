"""CPU cost of the access log (``volattach.wsgi.access_log``) per request.

Wraps a trivial WSGI application (it sets a context and answers 200 with
the compute API's headers) and times it bare, with the access log at INFO
(oslo.log's ContextFormatter writing to /dev/null) and with INFO off; also
one oslo.log line with a context alone, for comparison.  Times are this
thread's CPU time (``time.thread_time``: the machine is shared), the
minimum over rounds of 20,000 requests each.

``--against REV`` also loads ``volattach/wsgi/access_log.py`` as it was at
git revision REV (same logger, same handler) and alternates the two, in
short rounds (2,000 requests: a shared machine disturbs fewer of them),
printing each one's minimum and median over ``--rounds``; it
first checks that both write the same line for the same request (the
caller fields and the time aside).  Run from the repository root:
    .venv/bin/python -m benchmarks.access_log_cost
    .venv/bin/python -m benchmarks.access_log_cost --against 4fd635f
"""
import argparse
import io
import logging
import statistics
import subprocess
import time
import timeit
import types

from oslo_log import formatters

from volattach import context
from volattach.conf import CONF
from volattach.wsgi import access_log

N = 20000
SHORT = 2000    # requests per alternating round (--against)
HEADERS = [("Content-Type", "application/json"), ("Content-Length", "2"),
           ("x-openstack-request-id", "req-1"),
           ("x-compute-request-id", "req-1"),
           ("OpenStack-API-Version", "compute 2.1"),
           ("Vary", "OpenStack-API-Version")]
ENVIRON = {"REQUEST_METHOD": "GET", "PATH_INFO": "/v2.1/servers",
           "QUERY_STRING": "", "REQUEST_URI": "/v2.1/servers",
           "REMOTE_ADDR": "127.0.0.1"}


def app(environ, start_response):
    context.from_noauth_token("alice:demo", request_id="req-1")
    start_response("200 OK", HEADERS)
    return [b"{}"]


def start_response(*args):
    return None


def served(application):
    """One request to ``application`` as a WSGI server makes it: the
    answer read whole, then closed (the access log writes its line on
    ``close()``, once the answer is sent)."""
    answer = application(ENVIRON, start_response)
    for _chunk in answer:
        pass
    close = getattr(answer, "close", None)
    if close is not None:
        close()


def _rounds(func, rounds, number=N):
    """us of thread CPU per call, one figure per round of ``number``."""
    return [t / number * 1e6 for t in timeit.repeat(
        func, number=number, repeat=rounds, timer=time.thread_time)]


def _per_call(func):
    return min(_rounds(func, 5))


def _module_at(revision):
    """access_log.py as it was at ``revision``, as a module of the same
    name (so the same logger) that is not in sys.modules."""
    source = subprocess.run(
        ["git", "show", "%s:volattach/wsgi/access_log.py" % revision],
        check=True, capture_output=True, text=True).stdout
    module = types.ModuleType(access_log.__name__)
    exec(compile(source, "%s:access_log.py" % revision, "exec"),
         module.__dict__)
    return module


def _same_line(old, new, logger):
    """Both modules' lines for one request, times and caller aside."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatters.ContextFormatter(
        config=CONF))
    records = []
    handler.emit = records.append
    logger.addHandler(handler)
    try:
        served(old.AccessLog(app))
        served(access_log.AccessLog(app))
    finally:
        logger.removeHandler(handler)
    lines = []
    for record in records[-2:]:
        record.created, record.msecs, record.relativeCreated = 0.0, 0.0, 0.0
        record.args = record.args[:-1] + (0.0,)
        lines.append(handler.format(record))
    assert lines[0] == lines[1], lines
    return lines[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", metavar="REV",
                        help="also time access_log.py of this revision")
    parser.add_argument("--rounds", type=int, default=50,
                        help="alternating rounds of %d requests each "
                        "(--against)" % SHORT)
    args = parser.parse_args()

    CONF([], project="volattach", default_config_files=[])
    handler = logging.FileHandler("/dev/null")
    handler.setFormatter(formatters.ContextFormatter(
        config=CONF, datefmt=CONF.log_date_format))
    logger = logging.getLogger(access_log.LOG.name)
    logger.addHandler(handler)
    logger.propagate = False
    wrapped = access_log.AccessLog(app)

    bare = _per_call(lambda: served(app))
    print("bare application: %.1f us of thread CPU per request" % bare)
    for level, name in ((logging.INFO, "INFO on"), (logging.WARNING,
                                                     "INFO off")):
        logger.setLevel(level)
        cost = _per_call(lambda: served(wrapped)) - bare
        print("access log, %s: %.1f us per request" % (name, cost))
    logger.setLevel(logging.INFO)
    ctx = context.from_noauth_token("alice:demo", request_id="req-1")
    one = _per_call(lambda: logger.info("x %s", 1, extra={"context": ctx}))
    print("one oslo.log line with a context, for comparison: %.1f us" % one)

    if args.against:
        old = _module_at(args.against)
        print("same line from both: %s" % _same_line(old, access_log,
                                                     logger))
        old_wrapped = old.AccessLog(app)
        figures = {"bare": [], "old": [], "new": []}
        for _ in range(args.rounds):
            for name, func in (("bare", app), ("old", old_wrapped),
                               ("new", wrapped)):
                figures[name] += _rounds(lambda: served(func), 1, SHORT)
        bare_min = min(figures["bare"])
        bare_median = statistics.median(figures["bare"])
        print("alternating, %d rounds of %d: bare application min %.1f "
              "median %.1f us" % (args.rounds, SHORT, bare_min, bare_median))
        for name, label in (("old", args.against), ("new", "this tree")):
            print("access log at INFO, %s: min %.1f median %.1f us per "
                  "request (bare application subtracted)" % (
                      label, min(figures[name]) - bare_min,
                      statistics.median(figures[name]) - bare_median))


if __name__ == "__main__":
    main()
