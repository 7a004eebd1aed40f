"""Serve a WSGI application with gunicorn from inside a console script.

``volattach-api`` and ``volattach-volume`` both use ``run``: gunicorn's own
command line is equally fine (``gunicorn -c etc/volattach/gunicorn.conf.py
api.wsgi:application``).  Each worker builds its own RPC transport and
database engine after the fork (see ``post_fork``); the master holds neither.
"""
from gunicorn.app.base import BaseApplication


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


def run(app_uri, bind, workers=1, threads=1, timeout=120, extra=None):
    """Run gunicorn in the foreground until it is told to stop."""
    options = {
        "bind": bind,
        "workers": workers,
        "threads": threads,
        "worker_class": "gthread" if threads > 1 else "sync",
        "timeout": timeout,
        "graceful_timeout": 10,
        "accesslog": None,
        "preload_app": False,
        # gunicorn 27's control socket is one path per user: two daemons
        # (api and volume) on one host would fight over it.
        "control_socket_disable": True,
    }
    options.update(extra or {})
    _Application(app_uri, options).run()


def serve_in_thread(app, host, port, name="wsgi"):
    """Serve ``app`` with a threaded wsgiref server in a daemon thread.

    For volattach-all and functional tests, where every role shares one
    process (gunicorn would fork, and the in-memory transport does not cross
    processes).  Returns the server; call ``server.shutdown()`` to stop it.
    """
    import socketserver
    import threading
    from wsgiref import simple_server

    class Handler(simple_server.WSGIRequestHandler):
        def log_message(self, *args):
            pass

    class Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
        daemon_threads = True
        allow_reuse_address = True
        request_queue_size = 128

    server = simple_server.make_server(host, port, app, server_class=Server,
                                       handler_class=Handler)
    thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
    thread.start()
    server.thread = thread
    return server
