"""volattach-all: every role in one process, on embedded defaults.

noauth is its default ``auth_strategy`` (the daemons default to keystone).
The compute API, the conductor, the computes named by ``[all]
compute_hosts`` and the volume service, on SQLite and the in-process
oslo.messaging driver (``volattach-inproc://``, ``rpc/inproc.py``) unless the
configuration says otherwise (``transport_url``: ``kombu+memory:////`` for
kombu's in-memory transport, or a RabbitMQ URL).  The README's first command
runs this.  The API is served by waitress in this process
(``volattach.embedded_server``: gunicorn would fork, and an in-process
bus does not cross processes).  Both listening sockets are bound before
anything else (``volattach.listen``): a port in use is one line naming the
address and the option, exit status 1, with nothing migrated or started.
The Cinder client and the volume service's compute client follow ``[volume]``
and ``[api]`` listen/port unless ``[cinder] endpoint`` and ``[volume]
compute_endpoint`` say otherwise.  When ``[cinder] endpoint`` is this
process's own volume service (``[all] volume_in_process``, default on),
the Cinder client hands its requests to that service's WSGI application in
the calling thread, with no socket (``volattach.volume_client.in_process``);
other clients still reach it over HTTP.  On the in-process bus the calls
carry no call monitor (``[DEFAULT] rpc_call_monitor_timeout`` defaults to
0 there: nothing between the roles can lose a message), and the computes'
object calls go to the conductor's object endpoints in the calling thread
(``conductor.local_indirection``) instead of over the bus.
"""
import contextlib
import logging
import sys
import urllib.parse

from volattach import conf as volattach_conf
from volattach import startup

LOG = logging.getLogger(__name__)


class AllInOne:
    """Starts and stops every role in this process (also used by tests)."""

    def __init__(self, conf, serve_api=True):
        self.conf = conf
        self.serve_api = serve_api
        self.services = []
        self.servers = []
        self.computes = {}
        self.api_app = None
        self.volume_origin = None   # served in-process (volume_in_process)

    def start(self):
        from volattach.wsgi import insecure

        conf = self.conf
        volattach_conf.set_embedded_defaults(conf)
        if self.serve_api:
            insecure.check_api(conf)
        if conf.all.run_volume_service:
            insecure.check_volume(conf)
        startup.check_drivers(conf, compute=bool(conf.all.compute_hosts),
                              volume=conf.all.run_volume_service)
        startup.check_sqlite_url(conf.database.connection,
                                 "[database] connection")
        if conf.all.run_volume_service:
            startup.check_sqlite_url(conf.volume.connection,
                                     "[volume] connection")
        # first, before any import that logs or any role starts
        sockets = self._bind()
        try:
            return self._start(sockets)
        except BaseException:
            for sock in sockets.values():
                sock.close()
            self.stop()
            raise

    def _start(self, sockets):
        conf = self.conf

        from volattach import objects
        from volattach import rpc
        from volattach.db import migration
        from volattach.compute import service as compute_service
        from volattach.conductor import local_indirection
        from volattach.conductor import service as conductor_service
        from volattach import embedded_server

        objects.register_all()
        rpc.init(conf, url=_bus_url(conf))
        with _database("[database] connection", conf.database.connection):
            migration.db_sync(conf.database.connection)
        if conf.all.run_volume_service:
            from volattach.volume import service as volume_service
            with _database("[volume] connection", conf.volume.connection):
                volume_service.prepare(conf)
            server, _thread = volume_service.serve_in_thread(
                conf, sock=sockets.get("volume"))
            self.servers.append(server)
            LOG.info("volume service on http://%s:%s", conf.volume.listen, conf.volume.port)
            if conf.all.volume_in_process:
                self._volume_in_process(server)
        conductor = conductor_service.ConductorService()
        conductor.start()
        self.services.append(conductor)
        self.conductor = conductor
        objects_here = local_indirection.LocalIndirection()
        for host in conf.all.compute_hosts:
            compute = compute_service.ComputeService(
                host, in_process_with_conductor=True,
                indirection_api=objects_here)
            compute.start()
            self.services.append(compute)
            self.computes[host] = compute
        from volattach.api import wsgi as api_wsgi
        self.services.append(api_wsgi.register_api_service())
        self.api_app = api_wsgi.make_app(conf)
        if self.serve_api:
            server = embedded_server.serve_in_thread(
                self.api_app, conf.api.listen, conf.api.port, name="api",
                conf=conf, sock=sockets.get("api"))
            self.servers.append(server)
            LOG.info("compute API on http://%s:%s", conf.api.listen, conf.api.port)
        return self

    def _volume_in_process(self, server):
        """Send the Cinder client's requests to ``server``'s application
        in-process when ``[cinder] endpoint`` is that server's socket."""
        from volattach.volume_client import http_transport
        from volattach.volume_client import in_process
        endpoint = volattach_conf.cinder_endpoint(self.conf)
        if not _same_socket(endpoint, self.conf.volume.listen, server.port):
            return
        parts = urllib.parse.urlsplit(endpoint)
        self.volume_origin = "%s://%s" % (parts.scheme, parts.netloc)
        http_transport.serve_in_process(self.volume_origin,
                                        in_process.App.of_server(server))
        LOG.info("volume client: %s served in this process", endpoint)

    def _bind(self):
        """Bind the compute API's and the volume service's sockets before
        anything starts: a port in use raises ``listen.ListenError`` with
        nothing migrated, registered or running."""
        from volattach import listen
        conf = self.conf
        wanted = []
        if self.serve_api:
            wanted.append(("api", conf.api.listen, conf.api.port))
        if conf.all.run_volume_service:
            wanted.append(("volume", conf.volume.listen, conf.volume.port))
        sockets = {}
        try:
            for group, host, port in wanted:
                sockets[group] = listen.bind(host, port, group)
        except listen.ListenError:
            for sock in sockets.values():
                sock.close()
            raise
        return sockets

    def stop(self):
        from volattach import rpc
        if self.volume_origin is not None:
            from volattach.volume_client import http_transport
            http_transport.stop_serving_in_process(self.volume_origin)
            self.volume_origin = None
        for server in self.servers:
            server.shutdown()
        for svc in reversed(self.services):
            svc.stop()
        rpc.cleanup()


@contextlib.contextmanager
def _database(option, url):
    """A database that does not open or migrate is a StartupError naming
    ``option``."""
    from sqlalchemy import exc as sa_exc
    from volattach import exception
    try:
        yield
    except (sa_exc.SQLAlchemyError, exception.DatabaseUnavailable) as exc:
        raise startup.database_error(exc, url, option) from None


def _same_socket(endpoint, listen_host, port):
    """Whether ``endpoint`` (a URL) reaches the plain-HTTP server listening
    on ``listen_host``:``port`` of this machine."""
    parts = urllib.parse.urlsplit(endpoint)
    try:
        endpoint_port = parts.port or 80
    except ValueError:
        return False
    if parts.scheme != "http" or endpoint_port != port:
        return False
    host = (parts.hostname or "").lower()
    listen_host = listen_host.strip("[]").lower()
    if host == listen_host:
        return True
    from volattach import loopback_defaults
    return (listen_host in loopback_defaults.WILDCARDS
            and loopback_defaults.is_loopback(host))


def _no_call_monitor_on_the_inproc_bus(conf):
    """``[DEFAULT] rpc_call_monitor_timeout`` defaults to 0 (off) on the
    in-process bus: no broker stands between the roles, so no request or
    answer can be lost, and the monitor's watchdog thread per call would
    watch for nothing.  A configuration file still wins; RabbitMQ keeps the
    monitor.  (In ``main`` only: the tests that start ``AllInOne`` keep the
    process-wide default.)"""
    from volattach.rpc import inproc
    if inproc.is_inproc_url(_bus_url(conf)):
        conf.set_default("rpc_call_monitor_timeout", 0)


def _bus_url(conf):
    """The transport volattach-all runs on: ``transport_url`` when set,
    else the in-process bus."""
    from volattach import rpc
    return rpc._configured_url(conf) or volattach_conf.MEMORY_TRANSPORT_URL


DESCRIPTION = (
    "Run every role of volattach in one process: the compute API (port "
    "8774), the volume service (port 8776), the conductor and the computes "
    "of [all] compute_hosts, on SQLite under [DEFAULT] state_path "
    "(~/.volattach) and an in-process message bus, with noauth tokens "
    "(X-Auth-Token: <user>:<project>[:admin]). Logs go to stderr unless "
    "--log-file or --log-dir says otherwise.")


def main(argv=None):
    conf = volattach_conf.CONF
    volattach_conf.set_embedded_defaults(conf)
    volattach_conf.parse_args(sys.argv[1:] if argv is None else argv,
                              description=DESCRIPTION)
    if conf.api.workers > 1:
        conf.set_override("workers", 1, group="api")
    _no_call_monitor_on_the_inproc_bus(conf)
    from volattach import listen
    from volattach.volume import backend as volume_backend
    from volattach.volume.backends import file as file_backend
    from volattach.volume.backends import storage_daemons
    from volattach import log_setup
    from volattach.wsgi import insecure
    try:
        lock = startup.StateLock(conf.state_path).acquire()
        deployment = AllInOne(conf).start()
    except (insecure.InsecureNoauth, volume_backend.BackendConfigError,
            startup.StartupError) as exc:
        startup.fail("volattach-all", exc)
    except (listen.ListenError, file_backend.NBDPortInUse) as exc:
        startup.fail("volattach-all", exc, status=startup.EXIT_IN_USE)
    except file_backend.ExportError as exc:
        startup.fail("volattach-all", exc)
    log_setup.started("volattach-all", conf, [
        "compute API http://%s:%s" % (conf.api.listen, conf.api.port),
        "volume service http://%s:%s" % (conf.volume.listen,
                                         conf.volume.port)])
    print("volattach-all: compute API http://%s:%s/v2.1  volume service "
          "http://%s:%s/v3  (token 'X-Auth-Token: <user>:<project>[:admin]')"
          % (conf.api.listen, conf.api.port, conf.volume.listen, conf.volume.port),
          flush=True)
    from volattach import service
    service.run_until_signalled(deployment.services)
    deployment.stop()
    if conf.all.run_volume_service:
        for line in storage_daemons.stop_notes(conf):
            LOG.info(line)
    log_setup.stopped("volattach-all")
    lock.release()


if __name__ == "__main__":
    main()
