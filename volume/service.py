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
import threading

from oslo_log import log as logging

from volattach import embedded_server
from volattach.volume import manager as manager_mod
from volattach.volume import wsgi
from volattach.volume.db import engine as db_engine
from volattach.volume.db import migration

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
        manager.restore_backend()
        manager.extend.recover()
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


class VolumeWSGIServer(embedded_server.Server):
    """The in-process server of ``volattach.embedded_server`` whose
    ``shutdown`` also stops the heartbeat."""

    heartbeat = None

    def shutdown(self, timeout=5.0):
        if self.heartbeat is not None:
            self.heartbeat.stop()
        super().shutdown(timeout)


def serve_in_thread(conf, host=None, port=None, heartbeat=True, sock=None):
    """Serve the volume API from a daemon thread of this process.

    ``host``/``port`` default to ``[volume] listen``/``port`` (port 0: any
    free port, see ``server.port``); ``sock``: a socket already bound to
    them (``volattach.listen.bind``).  Returns ``(server, thread)``.
    """
    manager = manager_mod.VolumeManager(conf)
    server = embedded_server.serve_in_thread(
        wsgi.make_app(conf, manager), host or conf.volume.listen,
        conf.volume.port if port is None else port,
        name="volattach-volume-wsgi", conf=conf,
        server_class=VolumeWSGIServer, sock=sock)
    thread = server.thread
    if heartbeat:
        server.heartbeat = start_heartbeat(conf, manager)
    LOG.info("Volume service listening on %s", server.url)
    return server, thread
