"""The RPC queues volattach consumes on RabbitMQ, as the broker holds them:
what ``volattach-manage rpc queues`` reports and what it deletes when a
deployment moves from classic to quorum queues (README "Faults").

Each RPC server (a conductor, a compute) consumes three queues of its
topic: ``<topic>`` (shared by the servers of the topic),
``<topic>.<host>`` and ``<topic>_fanout_<random>`` (transient, deleted with
its consumer).  The first two outlive their consumers and keep their type:
RabbitMQ refuses to declare them again as another type or durability
(PRECONDITION_FAILED), so a switch of ``[oslo_messaging_rabbit]
rabbit_quorum_queue`` needs them deleted once they are drained, and with
them the control exchange when it is not durable (quorum queues make
oslo.messaging declare it durable).

Nothing here lists the broker's queues (that needs the management plugin):
the names come from the topics and the hosts of the services table.  Each
queue is looked at with passive declarations, which change nothing: its
messages and consumers, then its kind (a non-durable classic queue accepts
a non-durable declaration; a quorum queue only one with its type).
``delete_drained_classic`` deletes with ``if-empty`` and ``if-unused``, so
the broker itself refuses a queue that took a message or a consumer
meanwhile: nothing queued is ever deleted.
"""
import collections

import amqp.exceptions
import kombu
import oslo_messaging as messaging

# topics served by the conductors and the computes (conductor.rpcapi,
# compute.rpcapi)
CONDUCTOR_TOPICS = ("conductor", "conductor_compute_task")
COMPUTE_TOPICS = ("compute",)
CONDUCTOR_BINARY = "volattach-conductor"
COMPUTE_BINARY = "volattach-compute"

CLASSIC = "classic"
QUORUM = "quorum"
DURABLE_CLASSIC = "classic (durable)"
MISSING = "missing"

Queue = collections.namedtuple("Queue", "name kind messages consumers")


def queue_names(conductor_hosts, compute_hosts):
    """The names of the queues that outlive their consumers."""
    names = []
    for topics, hosts in ((CONDUCTOR_TOPICS, conductor_hosts),
                          (COMPUTE_TOPICS, compute_hosts)):
        for topic in topics:
            names.append(topic)
            names.extend("%s.%s" % (topic, host) for host in sorted(hosts))
    return names


def kombu_url(transport_url):
    """oslo.messaging's ``rabbit://u:p@h1:p1,u:p@h2:p2/vhost`` as kombu's
    failover list ``amqp://u:p@h1:p1/vhost;amqp://...``."""
    from oslo_config import cfg
    url = messaging.TransportURL.parse(cfg.ConfigOpts(), transport_url)
    if url.transport not in ("rabbit", "kombu", "amqp"):
        raise ValueError("not a RabbitMQ transport URL: %s" % url.transport)
    vhost = url.virtual_host or ""
    parts = []
    for host in url.hosts:
        auth = ""
        if host.username:
            auth = "%s:%s@" % (host.username, host.password or "")
        parts.append("amqp://%s%s:%s/%s" % (auth, host.hostname,
                                            host.port or 5672, vhost))
    return ";".join(parts)


class Broker:
    """A connection to the broker of ``transport_url`` (the first node of
    the list that answers)."""

    def __init__(self, transport_url, control_exchange):
        self.control_exchange = control_exchange
        self._conn = kombu.Connection(kombu_url(transport_url),
                                      failover_strategy="round-robin")
        self._conn.ensure_connection(max_retries=3)
        self._channel = None

    def close(self):
        self._conn.release()

    def _chan(self):
        if self._channel is None or not self._channel.is_open:
            self._channel = self._conn.connection.channel()
        return self._channel

    def _try(self, method, *args, **kwargs):
        """``channel.method(...)``; a refusal closes the channel (a new one
        is opened next time) and comes back as the exception."""
        try:
            return getattr(self._chan(), method)(*args, **kwargs)
        except (amqp.exceptions.NotFound,
                amqp.exceptions.PreconditionFailed) as error:
            self._channel = None
            return error

    def inspect(self, name):
        """A ``Queue`` for ``name`` (MISSING when the broker has none)."""
        found = self._try("queue_declare", name, passive=True)
        if isinstance(found, Exception):
            return Queue(name, MISSING, 0, 0)
        _, messages, consumers = found
        return Queue(name, self._kind(name), messages, consumers)

    def _kind(self, name):
        # equivalent declarations of an existing queue change nothing
        if not isinstance(self._try("queue_declare", name, durable=False,
                                        auto_delete=False),
                          Exception):
            return CLASSIC
        if not isinstance(self._try("queue_declare", name, durable=True,
                                    auto_delete=False, arguments={"x-queue-type": "quorum"}),
                          Exception):
            return QUORUM
        return DURABLE_CLASSIC

    def exchange_durable(self):
        """True/False for the control exchange, None when it is missing."""
        name = self.control_exchange
        if isinstance(self._try("exchange_declare", name, "topic",
                                passive=True), Exception):
            return None
        return isinstance(self._try("exchange_declare", name, "topic",
                                    durable=False, auto_delete=False), Exception)

    def delete_if_drained(self, name):
        """Delete queue ``name`` if the broker finds it empty and unused;
        returns None, or the broker's refusal."""
        result = self._try("queue_delete", name, if_unused=True,
                           if_empty=True)
        return result if isinstance(result, Exception) else None

    def delete_exchange_if_unused(self):
        result = self._try("exchange_delete", self.control_exchange,
                           if_unused=True)
        return result if isinstance(result, Exception) else None


def report(broker, names):
    """``Queue`` of each name, the missing ones left out."""
    return [q for q in (broker.inspect(n) for n in names) if q.kind != MISSING]


def delete_drained_classic(broker, names):
    """Delete the classic queues among ``names`` that are empty and have no
    consumer, then the control exchange if it is not durable and unused.
    Returns (deleted names, [(name, reason)] of those left)."""
    deleted, left = [], []
    for queue in report(broker, names):
        if queue.kind == QUORUM:
            continue
        if queue.messages or queue.consumers:
            left.append((queue.name, "%d message(s), %d consumer(s)" % (
                queue.messages, queue.consumers)))
            continue
        refusal = broker.delete_if_drained(queue.name)
        if refusal is None:
            deleted.append(queue.name)
        else:
            left.append((queue.name, str(refusal)))
    if broker.exchange_durable() is False:
        if left:
            left.append((broker.control_exchange,
                         "exchange kept while queues are left"))
        else:
            refusal = broker.delete_exchange_if_unused()
            if refusal is None:
                deleted.append("exchange " + broker.control_exchange)
            else:
                left.append((broker.control_exchange, str(refusal)))
    return deleted, left
