"""The WSGI assembly of the compute API: ``application`` for gunicorn.

``gunicorn volattach.api.wsgi:application`` builds the application in each worker, on
first access of ``application`` (gunicorn's app loading, after the fork):
it parses the configuration (files from the colon-separated environment
variable ``VOLATTACH_CONFIG_FILE`` unless the configuration was already
parsed, as under ``volattach-api`` whose master parsed it before forking),
registers the objects, creates this process's RPC transport and calls
``make_app``.  ``volattach-all`` and the functional tests call ``make_app``
themselves, with a transport already initialized (or a compute facade of
their own).

A request goes through, outermost first (``MIDDLEWARE`` below is the list
that builds it; this is the only place the order is written down):

1. access log   (``volattach.wsgi.access_log``): one INFO line per
   request, whatever answered it; empties the thread's context store
   before and after;
2. request id   (``api.middleware.RequestId``): ``req-<uuid4>``, answered in
   ``x-openstack-request-id`` and ``x-compute-request-id`` on every
   response, whatever happens inside;
3. fault wrapper (``api.middleware.FaultWrapper``): an exception escaping
   the layers below becomes a logged 500 ``computeFault``;
4. body limit  (``api.middleware.BodyLimit``): 413 above ``[oslo_middleware]
   max_request_body_size``, 400 for JSON nested too deep to parse;
5. auth         (``api.auth``, ``[api] auth_strategy``): noauth tokens or
   keystonemiddleware; sets the RequestContext (in the thread's store too)
   or answers 401 (the version documents need no token);
6. microversion (``api.middleware.Microversion``): negotiates the version,
   400/406 on bad requests, version headers and ``Vary`` on every versioned
   response;
7. router       (the falcon App): ``api.routes.ROUTES``; ``api.common.
   RequestScope`` fills ``req.context``; ``api.path_ids`` answers 404 for
   a route id no object can have and 400 for a NUL in the query string
   (``volattach.wsgi.storable``); ``api.faults`` renders errors.

``make_app`` also builds the policy enforcer of the configuration
(``api.policy``, ``[oslo_policy] policy_file``).
"""
import logging
import os
import threading

import falcon

from volattach.api import auth
from volattach.api import common
from volattach.api import faults
from volattach.api import middleware
from volattach.api import path_ids
from volattach.api import policy
from volattach.api import routes
from volattach.wsgi import access_log

LOG = logging.getLogger(__name__)

CONFIG_FILE_ENV = "VOLATTACH_CONFIG_FILE"

# Outermost first.  Each entry takes (application, conf) and wraps it.
MIDDLEWARE = (
    ("access log", lambda app, conf: access_log.AccessLog(app)),
    ("request id", lambda app, conf: middleware.RequestId(app)),
    ("fault wrapper", lambda app, conf: middleware.FaultWrapper(app)),
    ("body limit", lambda app, conf: middleware.BodyLimit(app, conf)),
    ("auth", lambda app, conf: auth.middleware_for(conf)(app)),
    ("microversion", lambda app, conf: middleware.Microversion(app)),
)


def make_router(conf, compute_api):
    """The falcon App: routes, request scope and error rendering."""
    app = falcon.App(middleware=[common.RequestScope(conf),
                                 path_ids.middleware()])
    app.req_options.strip_url_path_trailing_slash = True
    app.req_options.auto_parse_qs_csv = False
    faults.register(app)
    routes.add_routes(app, compute_api, conf)
    return app


def make_app(conf, compute_api=None):
    """The compute API as a WSGI application.

    ``compute_api`` defaults to ``volattach.api.compute.API()`` (which needs
    ``rpc.init`` to have run in this process).
    """
    if compute_api is None:
        from volattach.api import compute as compute_api_module
        compute_api = compute_api_module.API()
    policy.init(conf)
    application = make_router(conf, compute_api)
    for _name, wrap in reversed(MIDDLEWARE):
        application = wrap(application, conf)
    return application


def config_files_from_env(environ=None):
    environ = os.environ if environ is None else environ
    return [p for p in environ.get(CONFIG_FILE_ENV, "").split(":") if p]


def load_application(conf=None):
    """Configuration, objects, RPC transport, then ``make_app`` (in a worker)."""
    from volattach import objects
    from volattach import rpc
    from volattach import conf as volattach_conf

    conf = volattach_conf.CONF if conf is None else conf
    # oslo.config has no public "parsed?" flag: _args is None until parsed.
    if getattr(conf, "_args", None) is None:
        volattach_conf.parse_args([], default_config_files=(
            config_files_from_env() or None), conf=conf)
    objects.register_all()
    rpc.init(conf)
    # a broker that cannot be reached: 503 within seconds, not a hang
    rpc.fail_fast_when_unreachable()
    register_api_service()
    LOG.info("compute API worker %d ready", os.getpid())
    return make_app(conf)


def register_api_service():
    """Put this API host in the services table and keep it heartbeating
    (every worker beats for the same row)."""
    import socket

    from volattach import service
    svc = service.Service(binary="volattach-api", host=socket.gethostname(),
                          topic=None, endpoints=[], rpc_version=None)
    svc.start(tolerate_registration_failure=True)
    return svc


_lock = threading.Lock()
_application = None


def __getattr__(name):
    # ``application`` is built on first access (in the gunicorn worker, so
    # that the RPC transport is created after the fork), not on import:
    # importing make_app must not parse configuration or connect anywhere.
    global _application
    if name != "application":
        raise AttributeError(name)
    with _lock:
        if _application is None:
            _application = load_application()
        return _application
