"""RPC plumbing over oslo.messaging: one transport per process, a serializer
for contexts and versioned objects, and helpers to build clients and servers.

``init(conf)`` must run in each process after any fork (gunicorn workers call
it from ``api.wsgi``).  Servers use oslo.messaging's default threading
executor; eventlet is never used.  Domain exceptions raised by a remote
endpoint come back to the caller as the same classes (``allowed_remote_exmods``).

A broker restart, as its clients see it (``get_client``): the broker loses
its queues (they are not durable) and each RPC server declares its own again
only once it has reconnected.  A message published meanwhile is routed to no
queue; the broker would drop it without a word, leaving a call to time out
after ``rpc_response_timeout`` and a cast lost.  So every call and cast is
published with the mandatory flag (``TransportOptions(at_least_once=True)``):
such a message comes back at once as ``MessageUndeliverable`` (nothing was
delivered: sending it again is safe), and it is sent again (tenacity,
backoff) for as long as the call may wait (its timeout, else
``rpc_response_timeout``).  Then a call raises ``RPCTimeout`` and a cast
``RPCUndeliverable``; a call that sent its message but got no answer in time
raises ``RPCTimeout`` too.  A request or an answer the broker lost when it
stopped (they are not durable either) would leave a call waiting for the
whole ``rpc_response_timeout``, holding its workflow's rollback, and a
graceful stop would cut that workflow at its limit: calls carry
oslo.messaging's call monitor (``[DEFAULT] rpc_call_monitor_timeout``),
whose server heartbeats while it works, and fail once they hear nothing
for that long.  Both are ``exception.ServiceUnavailable`` (503 at
the HTTP edges) and still oslo.messaging's ``MessagingTimeout`` and
``MessageDeliveryFailure`` for the code that catches those.

Reconnecting: oslo.messaging's rabbit driver backs off between attempts
up to ``[oslo_messaging_rabbit] rabbit_interval_max`` (30 s by default), so
after a broker restart of a dozen seconds a publisher could wait several
seconds more before it tried again, holding a workflow (and a graceful
stop, cut at ``graceful_shutdown_timeout``) meanwhile.  ``init`` makes the
default ``RABBIT_INTERVAL_MAX`` (2 s: one cheap connect attempt); a value
set in the config file still wins.

A server that is stopping (``Service.stop``: the listener is stopped, then
the connection closed) is still a consumer of its queues until the
connection closes, and oslo.messaging's rabbit listener acknowledges a
request as it arrives: one delivered in that window (a cast held back by a
publisher that was reconnecting, say) was acknowledged and then dropped, a
detach left ``detaching``.  ``init`` makes that listener give such a request
back to the broker (requeue), which hands it to another server of the
topic (``_requeue_after_stop``).

Polling less: oslo.messaging's AMQP RPC listener and reply poller wait
for the next message in ``consume`` with a timeout that restarts at 1 ms
after every message and doubles up to 5 s (``amqpdriver.
ACK_REQUEUE_EVERY_SECONDS_MIN`` / ``_MAX``), so each message costs a
daemon a dozen timed-out wakeups of its two poll threads (the driver's
retry and timeout handling, the socket's timeout, an exception each).
Those wakeups run the acknowledgements and requeues other threads hand to
the poll thread; an RPC message is acknowledged by the poll thread as it
arrives, and its replies and call-monitor heartbeats go out on a sending
connection, so for RPC they serve nothing (a message wakes ``consume``
at once, whatever the timeout).  ``init`` makes the first wait
``RPC_POLL_MIN_SECONDS`` (``_poll_less_often``).

A broker that cannot be reached at all (every node down): oslo.messaging's
rabbit driver reconnects for ever before it publishes (``retry`` None),
which held an API request until its client gave up.  The compute API's
processes call ``fail_fast_when_unreachable()`` after ``init``: their
clients give up after ``API_PUBLISH_RETRIES`` reconnects (about 3 s with
``rabbit_retry_interval`` 1 and ``rabbit_interval_max`` 2) with
``RPCUndeliverable``, a 503 with nothing reserved (the API reserves
nothing before its cast).  The conductors and computes keep reconnecting:
their workflows ride out a broker restart.  A message the broker took is
confirmed (oslo.messaging sets kombu's ``confirm_publish``).

Refusals that are the caller's fault (``exception.CLIENT_FAULTS``: an
invalid volume, a device path in use, a server in the wrong state...) are
not errors of the server that refuses: every endpoint a server dispatches to
declares them expected (oslo.messaging's ``expected_exceptions``, so its
dispatcher does not log them with a traceback), and the server that raised
one logs it once, at INFO, without a traceback (``_RefusalsExpected``).  The
caller still receives the exception's own class, and ``Client.call`` gives
it back without the remote traceback oslo.messaging appends to its text; a
server that passes such a refusal on from a compute does not log it again.

At DEBUG every RPC is logged where it is sent (``Client.call`` and
``cast``: ``RPC call|cast <method> (version <v>) to <topic>[.<server>]``)
and where it is received (``_LoggingDispatcher``: ``RPC received <method>
(version <v>) on <topic>.<server>``), each line with the request id and
caller of its context: one hook on each side, so no client or endpoint
can leave one out.
"""
import logging
import threading

import oslo_messaging as messaging
import tenacity
from oslo_context import context as oslo_context

import volattach  # noqa: F401  (warning filters before oslo.messaging loads)
from volattach.objects import base as objects_base
from volattach import conf as volattach_conf
from volattach import context as volattach_context
from volattach import exception

LOG = logging.getLogger(__name__)

# volattach.rpc: RPCTimeout and RPCUndeliverable of a remote caller (a
# workflow that called a compute) come back as themselves
ALLOWED_EXMODS = ["volattach.exception", __name__]
# Default of [oslo_messaging_rabbit] rabbit_interval_max (seconds).
RABBIT_INTERVAL_MAX = 2
# The first timeout of oslo.messaging's AMQP poll loops after a message
# (1 ms in oslo.messaging; see the module doc).
RPC_POLL_MIN_SECONDS = 0.05
# Backoff between two sends of a message that no queue took.
UNDELIVERABLE_WAIT_START = 0.1
UNDELIVERABLE_WAIT_MAX = 2.0
# Reconnects of the compute API's RPC clients before a send fails (module
# doc); None (the daemons'): reconnect for ever.
API_PUBLISH_RETRIES = 2
_publish_retry = None


class RPCTimeout(exception.ServiceUnavailable, messaging.MessagingTimeout):
    """No answer to a call in time (its message may have been lost with a
    broker restart, or the server is slow): a MessagingTimeout that the
    HTTP edges answer with 503."""

    msg_fmt = "No reply from %(topic)s to %(method)s in time; retry later."


class RPCUndeliverable(exception.ServiceUnavailable,
                       messaging.MessageDeliveryFailure):
    """No queue of the target took a cast (no server of it has declared its
    queue since the broker started) for as long as it was tried."""

    msg_fmt = ("No server of %(topic)s took %(method)s (the message bus may "
               "be restarting); retry later.")

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
        _requeue_after_stop()
        _poll_less_often()
        _duplicates_at_info()
        _rabbit_defaults(conf)
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


def _rabbit_defaults(conf):
    """``rabbit_interval_max`` defaults to RABBIT_INTERVAL_MAX (module
    doc); the file's value, if any, is kept."""
    try:
        from oslo_messaging._drivers import impl_rabbit
    except ImportError:       # pragma: no cover - no rabbit driver
        return
    conf.register_opts(impl_rabbit.rabbit_opts, group="oslo_messaging_rabbit")
    conf.set_default("rabbit_interval_max", RABBIT_INTERVAL_MAX,
                     group="oslo_messaging_rabbit")


def _requeue_after_stop():
    """Make oslo.messaging's AMQP RPC listener requeue, instead of
    acknowledging and dropping, a request delivered once it was stopped
    (see the module doc).  Idempotent; a listener class without the
    attributes relied on (another oslo.messaging) is left alone."""
    try:
        from oslo_messaging._drivers import amqpdriver
    except ImportError:       # pragma: no cover - a driver-less install
        return
    listener_cls = getattr(amqpdriver, "RpcAMQPListener", None)
    if listener_cls is None or getattr(listener_cls, "_volattach_requeues",
                                       False):
        return
    deliver = listener_cls.__call__

    def __call__(self, message):
        shutdown = getattr(self, "_shutdown", None)
        if shutdown is not None and shutdown.is_set():
            LOG.info("RPC listener stopped: giving a request back to the "
                     "broker for another server")
            try:
                message.requeue()
            except Exception as error:      # the connection is closing
                LOG.warning("could not requeue a request delivered after "
                            "the listener stopped: %s", error)
            return
        return deliver(self, message)

    listener_cls.__call__ = __call__
    listener_cls._volattach_requeues = True


class _DuplicateAtInfo(logging.Filter):
    """oslo.messaging's AMQP listener drops a message it has just seen
    (RabbitMQ delivered it again: its acknowledgement was lost) and logs
    that at ERROR with a traceback; it is expected at-least-once
    delivery: one INFO line without a traceback."""

    def filter(self, record):
        if str(record.msg).startswith("ignoring duplicate message"):
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.msg = ("RPC message %s delivered again (its acknowledgement "
                          "was lost): dropped, it was handled already")
            record.exc_info = record.exc_text = None
        return True


_DUPLICATE_FILTER = _DuplicateAtInfo()


def _duplicates_at_info():
    """Install ``_DuplicateAtInfo`` on oslo.messaging's AMQP driver logger
    (idempotent)."""
    logger = logging.getLogger("oslo_messaging._drivers.amqpdriver")
    if _DUPLICATE_FILTER not in logger.filters:
        logger.addFilter(_DUPLICATE_FILTER)


def _poll_less_often():
    """The AMQP poll loops' first timeout after a message is
    RPC_POLL_MIN_SECONDS (module doc); idempotent, and nothing is changed
    in an oslo.messaging without that constant."""
    try:
        from oslo_messaging._drivers import amqpdriver
    except ImportError:       # pragma: no cover - a driver-less install
        return
    if (hasattr(amqpdriver, "ACK_REQUEUE_EVERY_SECONDS_MIN")
            and amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN
            < RPC_POLL_MIN_SECONDS):
        amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN = RPC_POLL_MIN_SECONDS


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


def get_client(target, version_cap=None, timeout=None, transport=None):
    """An RPC client of ``target`` whose calls and casts are published with
    the mandatory flag and sent again while no queue takes them, and whose
    calls give up once the server shows no sign of life for
    ``[DEFAULT] rpc_call_monitor_timeout`` (see the module doc); ``prepare``
    gives another one.  ``transport``: this process's by default."""
    transport = transport or TRANSPORT
    if transport is None:
        raise RuntimeError("rpc.init() was not called in this process")
    return Client(messaging.get_rpc_client(
        transport, target, version_cap=version_cap,
        serializer=RequestContextSerializer(), timeout=timeout,
        call_monitor_timeout=call_monitor_timeout(), retry=_publish_retry,
        transport_options=messaging.TransportOptions(at_least_once=True)))


def fail_fast_when_unreachable(retries=API_PUBLISH_RETRIES):
    """This process's RPC clients (made after this call) give up after
    ``retries`` reconnects to an unreachable broker (module doc)."""
    global _publish_retry
    _publish_retry = retries


def call_monitor_timeout():
    """``[DEFAULT] rpc_call_monitor_timeout``: None when 0 (off), else at
    least 2 (a server heartbeats every half of it, and oslo.messaging's
    dispatcher sends none more often than every second)."""
    seconds = volattach_conf.CONF.rpc_call_monitor_timeout
    return max(seconds, 2) if seconds else None


class Client:
    """Wraps an oslo.messaging RPC client (or a prepared call context):
    ``call`` and ``cast`` as described in the module doc, everything else
    (``can_send_version``, ``target``, ``timeout``...) as the wrapped one."""

    def __init__(self, wrapped):
        self._wrapped = wrapped

    def __getattr__(self, name):
        return getattr(self._wrapped, name)

    def prepare(self, **kwargs):
        return Client(self._wrapped.prepare(**kwargs))

    def _patience(self):
        timeout = self._wrapped.timeout
        if timeout is None:
            timeout = self._wrapped.conf.rpc_response_timeout
        return timeout

    def _log_sent(self, kind, ctxt, method):
        if LOG.isEnabledFor(logging.DEBUG):
            target = self._wrapped.target
            LOG.debug("RPC %s %s (version %s) to %s", kind, method,
                      target.version or "-", _target_name(target),
                      extra=_log_context(ctxt))

    def call(self, ctxt, method, **kwargs):
        self._log_sent("call", ctxt, method)
        names = {"topic": self._wrapped.target.topic, "method": method}
        try:
            return send_while_undeliverable(
                lambda: self._wrapped.call(ctxt, method, **kwargs),
                self._patience(), names)
        except messaging.MessageUndeliverable as error:
            raise RPCTimeout(**names) from error
        except messaging.MessageDeliveryFailure as error:
            if isinstance(error, RPCUndeliverable):
                raise
            raise RPCUndeliverable(**names) from error
        except messaging.MessagingTimeout as error:
            if isinstance(error, RPCTimeout):
                raise
            raise RPCTimeout(**names) from error
        except exception.CLIENT_FAULTS as error:
            _unwrap_refusal(error)
            raise

    def cast(self, ctxt, method, **kwargs):
        self._log_sent("cast", ctxt, method)
        names = {"topic": self._wrapped.target.topic, "method": method}
        try:
            return send_while_undeliverable(
                lambda: self._wrapped.cast(ctxt, method, **kwargs),
                self._patience(), names)
        except messaging.MessageUndeliverable as error:
            raise RPCUndeliverable(**names) from error
        except messaging.MessageDeliveryFailure as error:
            if isinstance(error, RPCUndeliverable):
                raise
            raise RPCUndeliverable(**names) from error


def send_while_undeliverable(send, seconds, names=None):
    """``send()``, again (backoff) while it raises MessageUndeliverable, for
    up to ``seconds``; the last MessageUndeliverable is raised after."""
    try:
        return send()
    except messaging.MessageUndeliverable:
        pass        # the common path above builds no Retrying

    def _log(retry_state):
        LOG.warning("no queue took %s to %s (the broker may have restarted "
                    "and its servers not declared their queues again yet); "
                    "sending it again", (names or {}).get("method"),
                    (names or {}).get("topic"))
    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(messaging.MessageUndeliverable),
        stop=tenacity.stop_after_delay(seconds),
        wait=tenacity.wait_exponential(multiplier=UNDELIVERABLE_WAIT_START,
                                       max=UNDELIVERABLE_WAIT_MAX),
        before_sleep=_log, reraise=True)
    return retrying(send)


def get_server(target, endpoints):
    """An RPC server of ``target`` whose endpoints' refusals that are the
    caller's fault are expected (module doc)."""
    if TRANSPORT is None:
        raise RuntimeError("rpc.init() was not called in this process")
    access_policy = messaging.rpc.dispatcher.DefaultRPCAccessPolicy
    dispatcher = _LoggingDispatcher(
        target, [_RefusalsExpected(e) for e in endpoints],
        RequestContextSerializer(), access_policy)
    return messaging.rpc.server.RPCServer(TRANSPORT, target, dispatcher)


def _target_name(target):
    return ".".join(p for p in (target.topic, target.server) if p) or "-"


def _log_context(ctxt):
    """``extra`` naming ``ctxt`` as the context of a log record (its
    request id and caller in the prefix), when it is one."""
    if isinstance(ctxt, oslo_context.RequestContext):
        return {"context": ctxt}
    return None


class _LoggingDispatcher(messaging.rpc.dispatcher.RPCDispatcher):
    """oslo.messaging's RPC dispatcher that logs, at DEBUG, each request it
    receives (module doc)."""

    def __init__(self, target, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._target_name = _target_name(target)

    def dispatch(self, incoming):
        if LOG.isEnabledFor(logging.DEBUG):
            message = incoming.message
            try:
                ctxt = self.serializer.deserialize_context(incoming.ctxt)
            except Exception:       # logged by the dispatch itself
                ctxt = None
            LOG.debug("RPC received %s (version %s) on %s",
                      message.get("method"), message.get("version") or "-",
                      self._target_name, extra=_log_context(ctxt))
        return super().dispatch(incoming)


# oslo.messaging names the class of an exception rebuilt from a reply
# ``<class>_Remote``, in a module ``<module>_Remote``
_REMOTE_SUFFIX = "_Remote"
# set on a refusal that its server has logged already
_LOGGED = "_volattach_refusal_logged"


def _unwrap_refusal(error):
    """Give a refusal received from a server its own class back (its text
    without the remote traceback) and mark it logged (by that server)."""
    cls = type(error)
    if cls.__module__.endswith(_REMOTE_SUFFIX) and len(cls.__bases__) == 1:
        error.__class__ = cls.__bases__[0]
    setattr(error, _LOGGED, True)


class _RefusalsExpected:
    """An endpoint whose public methods raise ``exception.CLIENT_FAULTS``
    as expected exceptions, logged once at INFO; everything else (the
    target, private names) is the endpoint's own."""

    def __init__(self, endpoint):
        self._endpoint = endpoint
        self.target = getattr(endpoint, "target", None)

    def __getattr__(self, name):
        attr = getattr(self._endpoint, name)
        if name.startswith("_") or not callable(attr):
            return attr
        return messaging.expected_exceptions(*exception.CLIENT_FAULTS)(
            _logging_refusals(attr, name))

    def __dir__(self):
        return dir(self._endpoint)


def _logging_refusals(method, name):
    def logged(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except exception.CLIENT_FAULTS as error:
            if not (getattr(error, _LOGGED, False) or type(
                    error).__module__.endswith(_REMOTE_SUFFIX)):
                setattr(error, _LOGGED, True)
                LOG.info("%s refused: %s", name, error.format_message())
            raise
    return logged
