"""CPU per volume-service call of the all-in-one: over loopback vs in-process.

``python -m benchmarks.inprocess_volume_calls [--requests N] [--rounds R]``

Starts the volume service as ``volattach-all`` does (``volume.service``:
SQLite under a temporary directory, waitress in a thread of this process,
the access log at INFO through oslo.log's formatter to /dev/null), creates
one volume, then sends ``--requests`` ``GET /volumes/{id}`` with the real
client (``volume_client.cinder.VolumeAPI.get``) per variant, alternating
the variants every round:

- ``socket``: urllib3 over a kept-alive loopback connection to waitress
  (today's path);
- ``inprocess``: the same calls handed to the WSGI application in the
  caller's thread (``volume_client.in_process``);
- ``app_only``: ``in_process.App.request`` called directly with the
  client's headers (no ``VolumeAPI``): the service's application alone,
  so that socket minus it splits the client's and the server's side;
- ``wsgi_intercept``: when the package is importable, the pool's
  connection class replaced with wsgi_intercept's (http.client over a
  fake socket, the application in the caller's thread).

Per request: the caller thread's CPU (``time.thread_time``: client, plus
the application for the in-process variants) and the whole process's CPU
(``time.process_time``: waitress's threads included), medians over rounds.
"""
import argparse
import logging
import statistics
import tempfile
import time

VARIANTS = ("socket", "inprocess", "wsgi_intercept")


def _setup(workdir):
    from oslo_log import log as oslo_logging

    from benchmarks import deploy
    from volattach import conf as volattach_conf
    from volattach import context
    from volattach.volume import service as volume_service
    from volattach.volume_client import cinder

    conf = volattach_conf.CONF
    port = deploy.free_port()
    deploy.override_in_process(conf, workdir, deploy.free_port(), port,
                               extra=(("cinder", "retry_seconds", 0.0),))
    volattach_conf.set_embedded_defaults(conf)
    conf.set_override("log_file", "/dev/null")
    conf.set_override("debug", False)
    oslo_logging.setup(conf, "volattach")
    logging.getLogger().setLevel(logging.INFO)
    volume_service.prepare(conf)
    server, _thread = volume_service.serve_in_thread(conf, heartbeat=False)
    api = cinder.VolumeAPI(conf)
    ctx = context.from_noauth_token("alice:demo")
    volume = api.create_volume(ctx, 1, name="bench")
    return conf, server, api, ctx, volume["id"]


def _intercepted_transport(conf, server, origin):
    """A Transport whose urllib3 pools use wsgi_intercept's connections."""
    from wsgi_intercept import _urllib3
    import wsgi_intercept
    from urllib3 import connection as u3c
    from urllib3 import connectionpool as u3cp

    from volattach.volume_client import http_transport

    class Pool(u3cp.HTTPConnectionPool):
        pass

    class SPool(u3cp.HTTPSConnectionPool):
        pass

    _urllib3.make_urllib3_override(Pool, SPool, u3c.HTTPConnection,
                                   u3c.HTTPSConnection)[0]()
    host, port = origin.split("//")[1].rsplit(":", 1)
    wsgi_intercept.add_wsgi_intercept(host, int(port),
                                      lambda: server.application)
    transport = http_transport.Transport(conf.cinder)
    manager = transport._new_manager(origin + "/")
    manager.pool_classes_by_scheme = {"http": Pool, "https": SPool}
    return transport


def _run(call, requests):
    for _ in range(50):
        call()
    thread0, proc0, wall0 = (time.thread_time(), time.process_time(),
                             time.perf_counter())
    for _ in range(requests):
        call()
    return ((time.thread_time() - thread0) / requests * 1e6,
            (time.process_time() - proc0) / requests * 1e6,
            (time.perf_counter() - wall0) / requests * 1e6)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args(argv)

    from volattach.volume_client import http_transport
    from volattach.volume_client import in_process

    workdir = tempfile.mkdtemp(prefix="inprocess-volume-calls-")
    conf, server, api, ctx, volume_id = _setup(workdir)
    origin = "http://127.0.0.1:%d" % server.port
    socket_transport = api.transport
    variants = ["socket", "inprocess", "app_only"]
    try:
        intercept_transport = _intercepted_transport(conf, server, origin)
        variants.append("wsgi_intercept")
    except ImportError:
        intercept_transport = None
    app = in_process.App.of_server(server)
    url = "%s/v3/demo/volumes/%s" % (origin, volume_id)
    headers = {"OpenStack-API-Version": "volume 3.48",
               "Accept": "application/json", "User-Agent": "bench",
               "X-OpenStack-Request-ID": ctx.request_id,
               "X-Auth-Token": "alice:demo"}

    def app_only():
        if app.request("GET", url, headers).status_code != 200:
            raise RuntimeError("not 200")
    results = {name: [] for name in variants}
    try:
        for _ in range(args.rounds):
            for name in variants:
                api._transport = (intercept_transport
                                  if name == "wsgi_intercept"
                                  else socket_transport)
                if name == "inprocess":
                    http_transport.serve_in_process(origin, app)
                call = (app_only if name == "app_only"
                        else lambda: api.get(ctx, volume_id))
                try:
                    results[name].append(_run(call, args.requests))
                finally:
                    http_transport.stop_serving_in_process(origin)
    finally:
        server.shutdown()
    print("GET /volumes/{id} via VolumeAPI.get, %d requests x %d rounds, "
          "medians, us per request" % (args.requests, args.rounds))
    print("%-15s %12s %12s %10s" % ("variant", "caller CPU", "process CPU",
                                    "wall"))
    base = None
    for name in variants:
        thread, proc, wall = (statistics.median(r[i] for r in results[name])
                              for i in range(3))
        base = base or proc
        print("%-15s %12.0f %12.0f %10.0f   process CPU x%.2f"
              % (name, thread, proc, wall, proc / base))
    med = {name: [statistics.median(r[i] for r in results[name])
                  for i in range(2)] for name in variants}
    app_cpu = med["app_only"][1]
    print("split of the socket path: client side (VolumeAPI + urllib3) "
          "%.0f us, server side (waitress + app) %.0f us, of which the "
          "app %.0f us and waitress %.0f us; VolumeAPI around the app "
          "in-process %.0f us"
          % (med["socket"][0], med["socket"][1] - med["socket"][0], app_cpu,
             med["socket"][1] - med["socket"][0] - app_cpu,
             med["inprocess"][1] - app_cpu))


if __name__ == "__main__":
    main()
