"""WSGI assembly of volattach-volume.

``application`` is what gunicorn serves (``volume.wsgi:application``); it
builds the app on its first request, in the worker process, so each worker
opens its own database engine after the fork.  ``make_app(conf)`` builds one
for a given configuration (tests, ``volume.service.serve_in_thread``).

Middleware, outermost first:

0. ``volattach.wsgi.access_log.AccessLog`` (WSGI, around everything, even
   keystonemiddleware): one INFO line per request, whatever answered it;
   empties the thread's context store before and after;
1. ``RequestIdMiddleware``: ``x-openstack-request-id: req-<uuid>`` on every
   response, errors included;
2. ``BodyLimitMiddleware``: 413 above ``[oslo_middleware]
   max_request_body_size``, 400 for JSON nested too deep to parse;
3. ``AuthMiddleware``: the RequestContext (noauth token or keystone
   headers), the project id of the URL checked against it;
4. ``ContentTypeMiddleware``: 415 for a body that is not JSON (Cinder's
   ``SUPPORTED_CONTENT_TYPES``);
5. ``MicroversionMiddleware``: ``OpenStack-API-Version: volume X.Y``;
6. ``volume.path_ids``: 404 for a route id no object can have, 400 for a
   NUL in the query string (``volattach.wsgi.storable``).

Then the route table (``volume.routes``), thin handlers
(``volume.handlers``), and one fault mapper (``volume.faults``) for every
error.  With ``[volume] auth_strategy = keystone`` keystonemiddleware's
auth_token wraps the whole application.  ``make_app`` builds the policy
enforcer of the configuration (``volume.policy``, ``[oslo_policy]``).
"""
import os
import threading

import falcon
from oslo_config import cfg

from volattach.volume import auth
from volattach.volume import faults
from volattach.volume import manager as manager_mod
from volattach.volume import middleware
from volattach.volume import path_ids
from volattach.volume import policy
from volattach.volume import routes
from volattach.wsgi import access_log

CONFIG_FILE_ENV = "VOLATTACH_CONFIG_FILE"


def make_app(conf, manager=None):
    """The volume API WSGI application for ``conf``."""
    policy.init(conf)
    manager = manager or manager_mod.VolumeManager(conf)
    app = falcon.App(middleware=[
        middleware.RequestIdMiddleware(),
        middleware.BodyLimitMiddleware(
            conf.oslo_middleware.max_request_body_size),
        auth.AuthMiddleware(conf.volume.auth_strategy),
        middleware.ContentTypeMiddleware(),
        middleware.MicroversionMiddleware(),
        path_ids.middleware(),
    ])
    app.req_options.auto_parse_qs_csv = False
    faults.install(app)
    routes.install(app, manager, conf)
    if conf.volume.auth_strategy == "keystone":
        app = auth.keystone_wrap(app, conf)
    return access_log.AccessLog(app)


def _global_conf():
    """The global CONF, parsed here when nothing parsed it (plain
    ``gunicorn volume.wsgi:application``: config files from
    $VOLATTACH_CONFIG_FILE, else /etc/volattach/volattach.conf)."""
    from volattach import conf as volattach_conf
    conf = volattach_conf.CONF
    try:
        conf.config_file
    except cfg.NoSuchOptError:
        files = [f for f in os.environ.get(CONFIG_FILE_ENV, "").split(",")
                 if f]
        volattach_conf.parse_args([], default_config_files=files or None)
    return conf


class _LazyApplication:
    """Builds the real application on the first request of a process."""

    def __init__(self):
        self._app = None
        self._pid = None
        self._lock = threading.Lock()

    def __call__(self, environ, start_response):
        if self._app is None or self._pid != os.getpid():
            with self._lock:
                if self._app is None or self._pid != os.getpid():
                    self._app = make_app(_global_conf())
                    self._pid = os.getpid()
        return self._app(environ, start_response)


application = _LazyApplication()
