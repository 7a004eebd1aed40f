"""Running the daemons' WSGI applications under gunicorn.

``volattach-api`` and ``volattach-volume`` both use ``run``: gunicorn's own
command line is equally fine (``gunicorn -c etc/volattach/gunicorn.conf.py
volattach.api.wsgi:application``).  Each worker builds its own RPC transport
and database engine after the fork (see ``post_fork``); the master holds
neither.  The worker is always gthread, even with one thread: gunicorn's
sync worker closes the connection after every response, and the compute API
and the conductor make several calls per attachment to the volume service.

gunicorn's own refusals (a control character in a header, a malformed
request line) answer in the APIs' fault format (``write_json_error``, in
place of gunicorn's HTML page), as ``volattach.embedded_server`` does.

gunicorn's own lines (its start, its workers) go to the handlers
``volattach.log_setup`` configured, through its escaping formatter
(``_Logger``), not to a stream of their own.  ``run`` logs the daemon's
start and, in the master, its stop (``log_setup.started``/``stopped``).

Everything that shares one process (``volattach-all``, the functional tests)
serves with ``volattach.embedded_server`` instead.
"""
import json
import os
import socket

from gunicorn import glogging
from gunicorn.app.base import BaseApplication
from gunicorn import util as gunicorn_util

from volattach import log_setup


def write_json_error(sock, status_int, reason, mesg):
    """gunicorn's ``util.write_error``, answering a JSON fault body
    (``{"badRequest": {"code": 400, "message": ...}}``)."""
    from volattach.wsgi import faults
    body = json.dumps(faults.fault_body(
        status_int, " ".join(str(mesg).split()) or reason)).encode()
    head = ("HTTP/1.1 %d %s\r\nConnection: close\r\n"
            "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % (status_int, reason, len(body)))
    gunicorn_util.write_nonblock(sock, head.encode("latin-1") + body)


def use_json_errors():
    """Make this process's gunicorn answer its refusals in JSON (the
    workers fork from it and inherit it)."""
    gunicorn_util.write_error = write_json_error


class _Logger(glogging.Logger):
    """gunicorn's logger, its error log handed to the root logger's
    handlers (oslo.log's, escaping) instead of a stream of its own."""

    def setup(self, cfg):
        super().setup(cfg)
        for handler in list(self.error_log.handlers):
            if getattr(handler, "_gunicorn", False):
                self.error_log.removeHandler(handler)
        self.error_log.propagate = True


class _Application(BaseApplication):

    def __init__(self, app_uri, options):
        self.app_uri = app_uri
        self.options = options
        super().__init__()

    def load_config(self):
        for key, value in self.options.items():
            if key in self.cfg.settings and value is not None:
                self.cfg.set(key, value)

    def load(self):
        from gunicorn.util import import_app
        return import_app(self.app_uri)


def gunicorn_options(bind, workers=1, threads=1, timeout=120, keepalive=60):
    """The gunicorn settings of volattach's daemons.  ``keepalive``:
    ``[wsgi] keepalive_timeout``, as for the in-process server."""
    return {
        "bind": bind,
        "workers": workers,
        "threads": threads,
        # gthread even for one thread: it keeps connections alive (for
        # ``keepalive`` seconds), the sync worker closes each one after its
        # response.
        "worker_class": "gthread",
        # Not gunicorn's 2 s: a client that sends on a connection the
        # server closes at that instant gets no answer, which for a POST
        # it must not retry (``RemoteDisconnected``; interleaving tier on
        # the daemons, a reused connection idle ~2 s).  A long timeout
        # leaves that race to idle periods clients rarely reach.
        "keepalive": max(1, int(keepalive)),
        "timeout": timeout,
        "graceful_timeout": 10,
        "accesslog": None,
        "preload_app": False,
        # gunicorn 27's control socket is one path per user: two daemons
        # (api and volume) on one host would fight over it.
        "control_socket_disable": True,
        "logger_class": "volattach.wsgi_server._Logger",
    }


def run(app_uri, bind, workers=1, threads=1, timeout=120, keepalive=60,
        extra=None, name=None, conf=None):
    """Run gunicorn in the foreground until it is told to stop.  ``bind``:
    gunicorn's address, or a socket already bound and listening
    (``volattach.listen.bind``), which gunicorn then takes over
    (``fd://``).  ``name`` (and ``conf``): the daemon whose start and stop
    are logged."""
    if name is not None:
        log_setup.started(name, conf, [_address(bind)])
    master = os.getpid()
    try:
        _run(app_uri, bind, workers, threads, timeout, keepalive, extra)
    finally:
        # gunicorn's master and its workers leave by SystemExit: only the
        # master's is the daemon's stop
        if name is not None and os.getpid() == master:
            log_setup.stopped(name)


def _address(bind):
    if isinstance(bind, socket.socket):
        host, port = bind.getsockname()[:2]
        return "http://%s:%s" % ("[%s]" % host if ":" in host else host, port)
    return str(bind)


def _run(app_uri, bind, workers, threads, timeout, keepalive, extra):
    if isinstance(bind, socket.socket):
        # gunicorn closes the descriptor once it has its own copy: this
        # process gives the socket up (detach) instead of closing it later
        bind = "fd://%d" % bind.detach()
    options = gunicorn_options(bind, workers, threads, timeout, keepalive)
    options.update(extra or {})
    use_json_errors()
    _Application(app_uri, options).run()
