"""Running the volume service: database preparation, registration,
heartbeat, and serving the WSGI app inside an existing process.

``volattach-volume`` (``volattach.cmd.volume``) calls ``prepare`` and
``start_heartbeat`` and then serves ``volume.wsgi:application`` with
gunicorn.  ``volattach-all`` serves it in a thread of its own process::

    service.prepare(conf)
    server, thread = service.serve_in_thread(conf)
    ...
    server.shutdown()   # stops serving, closes the socket, stops heartbeat
"""
import os
import socketserver
import threading
from wsgiref import simple_server

from oslo_log import log as logging

from volume import manager as manager_mod
from volume import wsgi
from volume.db import engine as db_engine
from volume.db import migration

LOG = logging.getLogger(__name__)


def prepare(conf):
    """Migrate the volume database and register this service; returns the
    service row (a dict with its ``uuid``)."""
    url = conf.volume.connection
    if db_engine.is_sqlite(url):
        os.makedirs(conf.state_path, exist_ok=True)
    migration.db_sync(url)
    manager = manager_mod.VolumeManager(conf)
    try:
        service = manager.register()
        manager.heartbeat()
    finally:
        manager.db.dispose()
    LOG.info("Volume service %s (%s) registered", service["host"],
             service["uuid"])
    return service


class Heartbeat(threading.Thread):
    """Updates this service's row every ``report_interval`` seconds."""

    def __init__(self, manager, interval):
        super().__init__(name="volattach-volume-heartbeat", daemon=True)
        self.manager = manager
        self.interval = interval
        self._stop_event = threading.Event()

    def run(self):
        while not self._stop_event.wait(self.interval):
            try:
                self.manager.heartbeat()
            except Exception:
                LOG.exception("Volume service heartbeat failed")

    def stop(self):
        self._stop_event.set()


def start_heartbeat(conf, manager=None):
    heartbeat = Heartbeat(manager or manager_mod.VolumeManager(conf),
                          conf.report_interval)
    heartbeat.start()
    return heartbeat


class _RequestHandler(simple_server.WSGIRequestHandler):
    def log_message(self, fmt, *args):
        LOG.debug("%s - %s", self.address_string(), fmt % args)


class VolumeWSGIServer(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    """A threaded wsgiref server; ``shutdown`` also closes the socket and
    stops the heartbeat."""

    daemon_threads = True
    allow_reuse_address = True
    heartbeat = None

    @property
    def port(self):
        return self.server_address[1]

    @property
    def url(self):
        return "http://%s:%d" % (self.server_address[0], self.port)

    def shutdown(self):
        if self.heartbeat is not None:
            self.heartbeat.stop()
        super().shutdown()
        self.server_close()


def serve_in_thread(conf, host=None, port=None, heartbeat=True):
    """Serve the volume API from a daemon thread of this process.

    ``host``/``port`` default to ``[volume] listen``/``port`` (port 0: any
    free port, see ``server.port``).  Returns ``(server, thread)``.
    """
    manager = manager_mod.VolumeManager(conf)
    server = simple_server.make_server(
        host or conf.volume.listen,
        conf.volume.port if port is None else port,
        wsgi.make_app(conf, manager),
        server_class=VolumeWSGIServer, handler_class=_RequestHandler)
    thread = threading.Thread(target=server.serve_forever,
                              kwargs={"poll_interval": 0.1},
                              name="volattach-volume-wsgi", daemon=True)
    thread.start()
    if heartbeat:
        server.heartbeat = start_heartbeat(conf, manager)
    LOG.info("Volume service listening on %s", server.url)
    return server, thread
