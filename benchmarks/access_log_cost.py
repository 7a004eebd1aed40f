"""CPU cost of the access log (``volattach.wsgi.access_log``) per request.

Wraps a trivial WSGI application (it sets a context and answers 200 with
the compute API's headers) and times it bare, with the access log at INFO
(oslo.log's ContextFormatter writing to /dev/null) and with INFO off; also
one oslo.log line with a context alone, for comparison.  Run from the
repository root:
    .venv/bin/python -m benchmarks.access_log_cost
"""
import logging
import timeit

from oslo_log import formatters

from volattach import context
from volattach.conf import CONF
from volattach.wsgi import access_log

N = 20000
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


def _per_call(func):
    return min(timeit.repeat(func, number=N, repeat=5)) / N * 1e6


def main():
    CONF([], project="volattach", default_config_files=[])
    handler = logging.FileHandler("/dev/null")
    handler.setFormatter(formatters.ContextFormatter(config=CONF))
    logger = logging.getLogger(access_log.LOG.name)
    logger.addHandler(handler)
    logger.propagate = False
    wrapped = access_log.AccessLog(app)

    def start_response(*args):
        return None

    bare = _per_call(lambda: app(ENVIRON, start_response))
    for level, name in ((logging.INFO, "INFO on"), (logging.WARNING,
                                                     "INFO off")):
        logger.setLevel(level)
        cost = _per_call(lambda: wrapped(ENVIRON, start_response)) - bare
        print("access log, %s: %.1f us per request" % (name, cost))
    logger.setLevel(logging.INFO)
    ctx = context.from_noauth_token("alice:demo", request_id="req-1")
    one = _per_call(lambda: logger.info("x %s", 1, extra={"context": ctx}))
    print("one oslo.log line with a context, for comparison: %.1f us" % one)


if __name__ == "__main__":
    main()
