"""gunicorn settings for the compute API, read from the volattach config.

    VOLATTACH_CONFIG_FILE=/etc/volattach/volattach.conf \\
        gunicorn -c etc/volattach/gunicorn.conf.py volattach.api.wsgi:application

(``volattach.api.wsgi:application`` may be left out: ``wsgi_app`` below names it.)
Bind address, workers and threads come from ``[api] listen``, ``port``,
``workers`` and ``threads`` of the file named by ``VOLATTACH_CONFIG_FILE``,
else of /etc/volattach/volattach.conf when it exists, else the defaults
(127.0.0.1:8774, 2 workers, 4 threads).  Options on gunicorn's command line
or in GUNICORN_CMD_ARGS override these.  ``volattach-api`` does the same
without this file (volattach/wsgi_server.py, the daemons' gunicorn runner).
"""
import os

from oslo_config import cfg

from volattach import conf as volattach_conf

DEFAULT_CONFIG_FILE = "/etc/volattach/volattach.conf"


def _config_files():
    path = os.environ.get("VOLATTACH_CONFIG_FILE")
    if path:
        if not os.path.exists(path):
            raise SystemExit(f"VOLATTACH_CONFIG_FILE={path}: no such file")
        return [path]
    return [DEFAULT_CONFIG_FILE] if os.path.exists(DEFAULT_CONFIG_FILE) else []


def _options():
    conf = cfg.ConfigOpts()
    volattach_conf.register_opts(conf)
    conf(args=[], project="volattach", default_config_files=_config_files())
    return conf


_conf = _options()
_api = _conf.api
_host = _api.listen
if ":" in _host and not _host.startswith("["):
    _host = f"[{_host}]"

wsgi_app = "volattach.api.wsgi:application"
bind = [f"{_host}:{_api.port}"]
workers = _api.workers
threads = _api.threads
# gthread even with one thread: it keeps client connections alive
# (``keepalive`` seconds), where the sync worker closes every one after its
# response (as volattach/wsgi_server.py's ``run``).
worker_class = "gthread"
# [wsgi] keepalive_timeout, not gunicorn's 2 s (volattach/wsgi_server.py).
keepalive = max(1, int(_conf.wsgi.keepalive_timeout))
timeout = 120
graceful_timeout = 10
# Each worker builds its own RPC transport and database engine after the
# fork: never load the application in the master.
preload_app = False
# The API sees the same config file as this one.
raw_env = ([f"VOLATTACH_CONFIG_FILE={_config_files()[0]}"]
           if _config_files() else [])
