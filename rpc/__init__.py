"""RPC plumbing over oslo.messaging: one transport per process, a serializer
for contexts and versioned objects, and helpers to build clients and servers.

``init(conf)`` must run in each process after any fork (gunicorn workers call
it from ``api.wsgi``).  Servers use oslo.messaging's default threading
executor; eventlet is never used.  Domain exceptions raised by a remote
endpoint come back to the caller as the same classes (``allowed_remote_exmods``).
"""
import threading

import oslo_messaging as messaging

import volattach  # noqa: F401  (warning filters before oslo.messaging loads)
from volattach.objects import base as objects_base
from volattach import conf as volattach_conf
from volattach import context as volattach_context

ALLOWED_EXMODS = ["volattach.exception"]

_lock = threading.Lock()
TRANSPORT = None
NOTIFICATION_TRANSPORT = None
NOTIFIER = None


class RequestContextSerializer(messaging.Serializer):
    """Serializes the RequestContext and delegates entities to the object serializer."""

    def __init__(self, base=None):
        self._base = base or objects_base.VolattachObjectSerializer()

    def serialize_entity(self, ctxt, entity):
        return self._base.serialize_entity(ctxt, entity)

    def deserialize_entity(self, ctxt, entity):
        return self._base.deserialize_entity(ctxt, entity)

    def serialize_context(self, ctxt):
        return ctxt.to_dict()

    def deserialize_context(self, ctxt):
        return volattach_context.RequestContext.from_dict(ctxt)


def init(conf, url=None):
    """Create this process's transport (idempotent).

    ``url`` overrides ``transport_url``; without either, the RabbitMQ default
    ``rabbit://guest:guest@127.0.0.1:5672/`` is used.  ``volattach-inproc://``
    is the in-process bus (``rpc.inproc``, volattach-all's default),
    ``kombu+memory:////`` kombu's in-memory transport.
    """
    global TRANSPORT, NOTIFICATION_TRANSPORT, NOTIFIER
    with _lock:
        if TRANSPORT is not None:
            return TRANSPORT
        messaging.set_transport_defaults(control_exchange="volattach")
        url = url or _configured_url(conf) or volattach_conf.DEFAULT_TRANSPORT_URL
        TRANSPORT = _transport(conf, url, notification=False)
        NOTIFICATION_TRANSPORT = _transport(conf, url, notification=True)
        # [oslo_messaging_notifications] driver decides (none by default;
        # messagingv2 publishes on the notification topics)
        NOTIFIER = messaging.Notifier(NOTIFICATION_TRANSPORT,
                                      serializer=RequestContextSerializer())
        return TRANSPORT


def _transport(conf, url, notification):
    """oslo's RPC or notification transport for ``url``, its driver loaded by
    its entry point; the in-process driver is built directly when its entry
    point is not installed (a source tree used without ``pip install -e .``)."""
    factory = (messaging.get_notification_transport if notification
               else messaging.get_rpc_transport)
    try:
        return factory(conf, url=url, allowed_remote_exmods=ALLOWED_EXMODS)
    except messaging.DriverLoadFailure:
        from volattach.rpc import inproc
        if not inproc.is_inproc_url(url):
            raise
        return inproc.make_transport(conf, url, notification=notification,
                                     allowed_remote_exmods=ALLOWED_EXMODS)


def _configured_url(conf):
    """``transport_url`` when a config file, the command line or an override
    set it; None when it is only oslo.messaging's default (``rabbit://``), so
    that volattach-all can fall back to the in-memory transport."""
    from oslo_config import cfg
    from oslo_messaging import transport as _transport
    try:
        conf.transport_url
    except cfg.NoSuchOptError:
        conf.register_opts(_transport._transport_opts)
    value = conf.transport_url
    default = next(o.default for o in _transport._transport_opts
                   if o.name == "transport_url")
    location = conf.get_location("transport_url")
    # (oslo.config still reports set_override after clear_override, hence
    # the comparison with the default too)
    if (not value or value == default or location is None
            or location.location == cfg.Locations.opt_default):
        return None
    return value


def cleanup():
    global TRANSPORT, NOTIFICATION_TRANSPORT, NOTIFIER
    with _lock:
        for transport in (TRANSPORT, NOTIFICATION_TRANSPORT):
            if transport is not None:
                transport.cleanup()
        TRANSPORT = NOTIFICATION_TRANSPORT = NOTIFIER = None


def get_client(target, version_cap=None, timeout=None):
    if TRANSPORT is None:
        raise RuntimeError("rpc.init() was not called in this process")
    return messaging.get_rpc_client(TRANSPORT, target, version_cap=version_cap,
                                    serializer=RequestContextSerializer(),
                                    timeout=timeout)


def get_server(target, endpoints):
    if TRANSPORT is None:
        raise RuntimeError("rpc.init() was not called in this process")
    access_policy = messaging.rpc.dispatcher.DefaultRPCAccessPolicy
    return messaging.get_rpc_server(TRANSPORT, target, endpoints,
                                    serializer=RequestContextSerializer(),
                                    access_policy=access_policy)
