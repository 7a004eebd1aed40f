"""An oslo.messaging transport driver for one process, without polling.

``volattach-all`` and the functional tests run every role in one process;
their RPC and notifications never leave it.  kombu's in-memory transport
served them through the AMQP driver (polling loops, kombu's JSON and base64
of every message, a reply queue poller); this driver hands messages over
directly: a listener blocks on a condition variable until a message arrives
or it is stopped, a caller blocks on its own reply slot, so an idle process
spends no CPU on the bus at all.

URL: ``volattach-inproc://`` (``volattach-inproc:///<name>`` for a separate
bus; the entry point ``oslo.messaging.drivers`` / ``volattach-inproc`` in
setup.cfg loads this module).  Every driver of one process with the same
URL shares one ``_Broker``, which goes away when the last of them is
cleaned up.

The broker behaves like RabbitMQ under oslo.messaging's rabbit driver (and
like kombu's memory transport, which the tests were written against):

- an RPC server declares three queues: ``topic`` (shared round-robin by the
  servers of the topic), ``topic.server`` and a fanout queue of its own;
  the first two outlive the server (a message sent while it is stopped waits
  for its restart), the fanout queue goes with it;
- a message routed to no queue (a topic no server ever declared) is dropped,
  as by an exchange with no binding: a call then times out
  (``MessagingTimeout``), a cast is lost; ``TransportOptions(at_least_once=
  True)`` raises ``MessageUndeliverable`` instead, like the rabbit driver;
- a notification goes to the queue ``topic.priority`` (declared by the
  sender, so it waits for a listener) and to the queue of every listener
  pool bound to it; the listeners of one pool share it round-robin;
- a queue keeps at most ``MAX_QUEUE_LENGTH`` messages and drops the oldest
  beyond (RabbitMQ's ``x-max-length``), so notifications nobody consumes
  cannot grow the process without bound.

Sender and receiver never share mutable state: each delivery gets its own
copy of the context and message, equal to what a JSON round trip gives (what
kombu did), by a fast copy of plain JSON types with a JSON round trip for
anything else.  Remote exceptions travel as oslo.messaging's other drivers
send them (``serialize_remote_exception`` / ``deserialize_remote_exception``
with the transport's ``allowed_remote_exmods``).
"""
import collections
import itertools
import logging
import queue
import threading
import time

import oslo_messaging
from oslo_messaging._drivers import base
from oslo_messaging._drivers import common as rpc_common
from oslo_serialization import jsonutils

LOG = logging.getLogger(__name__)

SCHEME = "volattach-inproc"
URL = SCHEME + "://"
MAX_QUEUE_LENGTH = 10000


# -- copies ------------------------------------------------------------------------

class _NotPlain(Exception):
    """A value the fast copy does not handle: the JSON round trip does."""


_IMMUTABLE = frozenset((str, int, float, bool, type(None)))


def _plain_copy(value):
    """A deep copy of JSON types, with tuples as lists (as JSON gives them).

    Immutable items are taken without a call of their own: most of a
    message's values are strings, numbers and None (an object's fields),
    and a Python call per value was most of the copy's cost."""
    kind = type(value)
    if kind is dict:
        copy = {}
        for key, item in value.items():
            if type(key) is not str:  # JSON would turn it into a string
                raise _NotPlain()
            copy[key] = item if type(item) in _IMMUTABLE else _plain_copy(item)
        return copy
    if kind is list or kind is tuple:
        return [item if type(item) in _IMMUTABLE else _plain_copy(item)
                for item in value]
    if kind in _IMMUTABLE:
        return value
    raise _NotPlain()


def wire_copy(value):
    """What the receiver of ``value`` would get over a broker (a JSON round
    trip), never sharing a mutable object with the sender."""
    try:
        return _plain_copy(value)
    except (_NotPlain, RecursionError):
        return jsonutils.loads(jsonutils.dumps(value))


# -- the broker ----------------------------------------------------------------------

class _Delivery:
    """One message in one queue: context, body, and where to answer."""
    __slots__ = ("ctxt", "message", "reply_slot", "call_monitor_timeout")

    def __init__(self, ctxt, message, reply_slot=None, call_monitor_timeout=None):
        self.ctxt = ctxt
        self.message = message
        self.reply_slot = reply_slot
        self.call_monitor_timeout = call_monitor_timeout


class _Queue:
    """Messages waiting for a consumer, and the listeners blocked on them."""
    __slots__ = ("name", "messages", "waiting", "auto_delete", "overflowed")

    def __init__(self, name, auto_delete=False):
        self.name = name
        self.messages = collections.deque()
        self.waiting = collections.deque()  # listeners blocked, longest first
        self.auto_delete = auto_delete
        self.overflowed = False


class _Broker:
    """Queues bound to (exchange, routing key) pairs, under one lock.

    Every listener has a condition on this lock: a message put in a queue
    wakes the listener of that queue that has waited longest (round robin
    between the servers of one topic), nobody else.
    """

    def __init__(self):
        self.lock = threading.Lock()
        self.queues = {}
        self.bindings = collections.defaultdict(list)  # (exchange, key) -> [_Queue]

    # declarations (under self.lock)
    def declare(self, name, exchange, routing_key, auto_delete=False):
        queue_ = self.queues.get(name)
        if queue_ is None:
            queue_ = self.queues[name] = _Queue(name, auto_delete)
        bound = self.bindings[(exchange, routing_key)]
        if queue_ not in bound:
            bound.append(queue_)
        return queue_

    def delete(self, queue_):
        if self.queues.get(queue_.name) is queue_:
            del self.queues[queue_.name]
        for key, bound in list(self.bindings.items()):
            if queue_ in bound:
                bound.remove(queue_)
                if not bound:
                    del self.bindings[key]

    # publishing
    def publish(self, exchange, routing_key, ctxt, message, reply_slot=None,
                call_monitor_timeout=None, mandatory=False, declare_as=None):
        """Copy the message into every queue bound to the key; False when
        none is (the message is dropped).  ``declare_as`` names a queue to
        declare first (notifications: the default queue of the topic)."""
        with self.lock:
            if declare_as is not None:
                self.declare(declare_as, exchange, routing_key)
            targets = list(self.bindings.get((exchange, routing_key), ()))
        if not targets:
            if mandatory:
                raise oslo_messaging.MessageUndeliverable(
                    Exception("no queue bound"), exchange, routing_key, message)
            LOG.debug("no queue bound to %s/%s: message dropped", exchange, routing_key)
            return False
        hook = _duplicate_hook
        if hook is not None and not hook(exchange, routing_key, message):
            hook = None
        if hook is not None:    # a test's redelivery: each queue gets it twice
            targets = [q for q in targets for _ in range(2)]
        # copied outside the lock: the copy is most of the cost of a send
        deliveries = [_Delivery(wire_copy(ctxt), wire_copy(message), reply_slot,
                                call_monitor_timeout) for _ in targets]
        with self.lock:
            for queue_, delivery in zip(targets, deliveries):
                self._put(queue_, delivery)
        return True

    def requeue(self, queue_, delivery):
        with self.lock:
            queue_.messages.appendleft(delivery)
            self._wake_one(queue_)

    def _put(self, queue_, delivery):
        queue_.messages.append(delivery)
        if len(queue_.messages) > MAX_QUEUE_LENGTH:
            queue_.messages.popleft()
            if not queue_.overflowed:
                queue_.overflowed = True
                LOG.warning("in-process queue %s holds %d messages: dropping the "
                            "oldest (is its consumer running?)", queue_.name,
                            MAX_QUEUE_LENGTH)
        self._wake_one(queue_)

    @staticmethod
    def _wake_one(queue_):
        while queue_.waiting:
            listener = queue_.waiting.popleft()
            if listener.blocked:
                listener.blocked = False
                listener.cond.notify()
                return

    # consuming
    def take(self, listener, timeout):
        """The next message for ``listener`` (a (queue, delivery) pair), or
        None once ``timeout`` seconds pass or the listener is stopped."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.lock:
            while not listener.stopped:
                taken = listener.take_one()
                if taken is not None:
                    self._hand_on(listener)
                    return taken
                remaining = None
                if deadline is not None:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return None
                self._wait(listener, remaining)
            return None

    def _wait(self, listener, remaining):
        listener.blocked = True
        for queue_ in listener.queues:
            queue_.waiting.append(listener)
        try:
            listener.cond.wait(remaining)
        finally:
            listener.blocked = False
            for queue_ in listener.queues:
                try:
                    queue_.waiting.remove(listener)
                except ValueError:
                    pass  # the publisher popped it when it woke us

    def _hand_on(self, listener):
        """Messages left in this listener's queues go to other waiting
        listeners now rather than when this one polls again."""
        for queue_ in listener.queues:
            if queue_.messages and queue_.waiting:
                self._wake_one(queue_)

    def stop(self, listener):
        with self.lock:
            listener.stopped = True
            listener.cond.notify_all()
            for queue_ in listener.queues:
                if queue_.auto_delete:
                    self.delete(queue_)


# tests: ``hook(exchange, routing_key, message)`` true puts a message in
# each of its queues twice, as RabbitMQ redelivers one whose
# acknowledgement was lost (set_duplicate_hook)
_duplicate_hook = None


def set_duplicate_hook(hook):
    """Deliver every message for which ``hook(exchange, routing_key,
    message)`` is true twice (None: once again); a test fixture that plays
    RabbitMQ's at-least-once delivery.  Returns the previous hook."""
    global _duplicate_hook
    previous, _duplicate_hook = _duplicate_hook, hook
    return previous


_brokers_lock = threading.Lock()
_brokers = {}  # virtual host -> [broker, number of drivers using it]


def _acquire_broker(name):
    with _brokers_lock:
        entry = _brokers.get(name)
        if entry is None:
            entry = _brokers[name] = [_Broker(), 0]
        entry[1] += 1
        return entry[0]


def _release_broker(name, broker):
    with _brokers_lock:
        entry = _brokers.get(name)
        if entry is not None and entry[0] is broker:
            entry[1] -= 1
            if entry[1] <= 0:
                del _brokers[name]


# -- listeners and incoming messages ---------------------------------------------------

class _Listener(base.PollStyleListener):
    """Blocks in ``poll`` until one of its queues has a message."""

    def __init__(self, driver, queues, incoming_class):
        super().__init__()
        self.driver = driver
        self.queues = queues
        self.incoming_class = incoming_class
        self.cond = threading.Condition(driver.broker.lock)
        self.blocked = False
        self.stopped = False
        self._next = 0  # the queue looked at first: rotates, so none starves

    def take_one(self):
        """(called under the broker lock)"""
        count = len(self.queues)
        for i in range(count):
            queue_ = self.queues[(self._next + i) % count]
            if queue_.messages:
                self._next = (self._next + i + 1) % count
                return queue_, queue_.messages.popleft()
        return None

    @base.batch_poll_helper
    def poll(self, timeout=None):
        taken = self.driver.broker.take(self, timeout)
        if taken is None:
            return None
        queue_, delivery = taken
        return self.incoming_class(self.driver, queue_, delivery)

    def stop(self):
        self.driver.broker.stop(self)

    def cleanup(self):
        self.stop()


class InProcessIncomingMessage(base.RpcIncomingMessage):
    """An RPC request, cast or notification taken from a queue."""

    _ids = itertools.count(1)

    def __init__(self, driver, queue_, delivery):
        # a counter, not uuid4: the id only names the message in debug logs
        super().__init__(delivery.ctxt, delivery.message,
                         msg_id="inproc-%d" % next(self._ids))
        self._driver = driver
        self._queue = queue_
        self._delivery = delivery
        self.client_timeout = delivery.call_monitor_timeout

    def acknowledge(self):
        """Taking the message from its queue was the acknowledgement."""

    def requeue(self):
        self._driver.broker.requeue(self._queue, self._delivery)

    def reply(self, reply=None, failure=None):
        slot = self._delivery.reply_slot
        if slot is None:  # a cast: nobody waits
            return
        if failure is not None:
            slot.put(_Reply(None, rpc_common.serialize_remote_exception(failure)))
        else:
            slot.put(_Reply(wire_copy(reply), None))

    def heartbeat(self):
        slot = self._delivery.reply_slot
        if slot is not None:
            slot.put(_HEARTBEAT)


class _Reply:
    __slots__ = ("result", "failure")

    def __init__(self, result, failure):
        self.result = result
        self.failure = failure


_HEARTBEAT = object()
_fanout_ids = itertools.count(1)  # names each listener's own fanout queue


# -- the driver ----------------------------------------------------------------------

class InProcessDriver(base.BaseDriver):
    """oslo.messaging driver delivering within this process (see module doc)."""

    def __init__(self, conf, url, default_exchange=None, allowed_remote_exmods=None):
        super().__init__(conf, url, default_exchange, allowed_remote_exmods)
        self._broker_name = url.virtual_host or ""
        self.broker = _acquire_broker(self._broker_name)
        self._released = False

    def require_features(self, requeue=False):
        """Requeue is supported."""

    def _exchange(self, target):
        return target.exchange or self._default_exchange

    # sending
    def send(self, target, ctxt, message, wait_for_reply=None, timeout=None,
             call_monitor_timeout=None, retry=None, transport_options=None):
        reply_slot = queue.SimpleQueue() if wait_for_reply else None
        mandatory = bool(transport_options is not None
                         and getattr(transport_options, "at_least_once", False))
        if target.fanout:
            # like the rabbit driver: one fanout exchange per topic
            exchange, key = target.topic + "_fanout", target.topic
        elif target.server:
            exchange, key = self._exchange(target), "%s.%s" % (target.topic, target.server)
        else:
            exchange, key = self._exchange(target), target.topic
        self.broker.publish(exchange, key, ctxt, message, reply_slot,
                            call_monitor_timeout if wait_for_reply else None,
                            mandatory=mandatory)
        if reply_slot is None:
            return None
        return self._wait_for_reply(reply_slot, target, timeout, call_monitor_timeout)

    def _wait_for_reply(self, reply_slot, target, timeout, call_monitor_timeout):
        """The reply, or MessagingTimeout after ``timeout`` seconds (or after
        ``call_monitor_timeout`` seconds without a heartbeat)."""
        now = time.monotonic()
        deadline = None if timeout is None else now + timeout
        monitor_deadline = (None if not call_monitor_timeout
                            else now + call_monitor_timeout)
        while True:
            limits = [d for d in (deadline, monitor_deadline) if d is not None]
            wait = None if not limits else max(0.0, min(limits) - time.monotonic())
            try:
                answer = reply_slot.get(timeout=wait)
            except queue.Empty:
                raise oslo_messaging.MessagingTimeout(
                    "Timed out waiting for a reply on topic %s" % target.topic)
            if answer is _HEARTBEAT:
                monitor_deadline = time.monotonic() + call_monitor_timeout
                continue
            if answer.failure is not None:
                raise rpc_common.deserialize_remote_exception(
                    answer.failure, self._allowed_remote_exmods)
            return answer.result

    def send_notification(self, target, ctxt, message, version, retry=None):
        exchange = self._exchange(target)
        # the sender declares the topic's default queue, as the rabbit
        # driver does: notifications wait there for a listener
        self.broker.publish(exchange, target.topic, ctxt, message,
                            declare_as=target.topic)

    # listening
    def listen(self, target, batch_size, batch_timeout):
        exchange = self._exchange(target)
        server_key = "%s.%s" % (target.topic, target.server)
        with self.broker.lock:
            queues = [
                self.broker.declare(target.topic, exchange, target.topic),
                self.broker.declare(server_key, exchange, server_key),
                self.broker.declare("%s_fanout_%d" % (target.topic, next(_fanout_ids)),
                                    target.topic + "_fanout", target.topic,
                                    auto_delete=True),
            ]
        listener = _Listener(self, queues, InProcessIncomingMessage)
        return base.PollStyleListenerAdapter(listener, batch_size, batch_timeout)

    def listen_for_notifications(self, targets_and_priorities, pool,
                                 batch_size, batch_timeout):
        queues = []
        with self.broker.lock:
            for target, priority in targets_and_priorities:
                key = "%s.%s" % (target.topic, priority)
                # a pool shares one queue (named after it) between its
                # listeners, bound to each of their keys
                queue_ = self.broker.declare(pool or key, self._exchange(target), key)
                if queue_ not in queues:
                    queues.append(queue_)
        listener = _Listener(self, queues, InProcessIncomingMessage)
        return base.PollStyleListenerAdapter(listener, batch_size, batch_timeout)

    def cleanup(self):
        if not self._released:
            self._released = True
            _release_broker(self._broker_name, self.broker)


# -- without the entry point -------------------------------------------------------------

def is_inproc_url(url):
    return str(url).startswith(SCHEME + ":")


def make_transport(conf, url, notification=False, allowed_remote_exmods=None):
    """An oslo.messaging transport on this driver, built without looking the
    driver up by its entry point (what ``get_rpc_transport`` /
    ``get_notification_transport`` would return once it is installed)."""
    from oslo_messaging import transport as messaging_transport
    conf.register_opts(messaging_transport._transport_opts)
    if notification:
        from oslo_messaging.notify import notifier
        conf.register_opts(notifier._notifier_opts,
                           group="oslo_messaging_notifications")
    parsed = oslo_messaging.TransportURL.parse(conf, str(url))
    driver = InProcessDriver(conf, parsed, default_exchange=conf.control_exchange,
                             allowed_remote_exmods=allowed_remote_exmods)
    kind = (messaging_transport.NotificationTransport if notification
            else messaging_transport.RPCTransport)
    return kind(driver)
