"""volattach.rpc's clients across a broker restart: a message no queue took
(its servers have not declared their queues again yet) is sent again until
one does, a call left without answer fails as a 503-family error that is
still a MessagingTimeout, and a stopped listener gives back the requests
delivered to it.  Over the in-process transport (rpc/inproc.py), which
routes like RabbitMQ; each test has a bus of its own."""
import itertools
import queue
import threading
import time

import oslo_messaging as messaging
import pytest

import volattach  # noqa: F401
from volattach import exception
from volattach import rpc
from volattach.conf import CONF
from volattach.rpc import inproc

_vhosts = itertools.count(1)


class Endpoint:
    def __init__(self):
        self.seen = queue.Queue()

    def echo(self, ctxt, value):
        self.seen.put(value)
        return value


@pytest.fixture
def transport():
    CONF([], project="volattach", default_config_files=[])
    transport = messaging.get_rpc_transport(
        CONF, url="%s:///retries-%d" % (inproc.SCHEME, next(_vhosts)),
        allowed_remote_exmods=rpc.ALLOWED_EXMODS)
    yield transport
    transport.cleanup()


@pytest.fixture
def start_server(transport):
    started = []

    def start(topic, endpoint):
        server = messaging.get_rpc_server(
            transport, messaging.Target(topic=topic, server="s1"), [endpoint])
        server.start()
        started.append(server)
    yield start
    for server in started:
        server.stop()
        server.wait()


def _client(transport, topic, timeout):
    # what rpc.get_client builds, on this test's transport
    return rpc.Client(messaging.get_rpc_client(
        transport, messaging.Target(topic=topic), timeout=timeout,
        transport_options=messaging.TransportOptions(at_least_once=True)))


def _start_later(start_server, topic, endpoint, seconds=0.3):
    thread = threading.Timer(seconds, start_server, (topic, endpoint))
    thread.start()
    return thread


def test_a_cast_nobody_took_is_sent_again_until_a_server_declares_its_queue(
        transport, start_server):
    endpoint = Endpoint()
    later = _start_later(start_server, "late", endpoint)
    _client(transport, "late", timeout=10).cast({}, "echo", value="cast")
    later.join()
    assert endpoint.seen.get(timeout=5) == "cast"


def test_a_call_nobody_took_is_sent_again_and_answered(transport, start_server):
    endpoint = Endpoint()
    later = _start_later(start_server, "late", endpoint)
    assert _client(transport, "late", timeout=10).prepare().call(
        {}, "echo", value=1) == 1
    later.join()


def test_a_cast_nobody_ever_takes_fails_as_service_unavailable(transport):
    start = time.monotonic()
    with pytest.raises(rpc.RPCUndeliverable) as caught:
        _client(transport, "nobody", timeout=0.5).cast({}, "echo", value=1)
    assert 0.5 <= time.monotonic() - start < 3
    assert isinstance(caught.value, exception.ServiceUnavailable)
    assert isinstance(caught.value, messaging.MessageDeliveryFailure)


def test_a_call_without_answer_is_a_503_family_messaging_timeout(transport):
    # a listener that takes the call and never answers
    listener = transport._driver.listen(
        messaging.Target(topic="mute", server="m"), 1, None)
    try:
        with pytest.raises(rpc.RPCTimeout) as caught:
            _client(transport, "mute", timeout=0.3).call({}, "echo", value=1)
    finally:
        listener.cleanup()
    assert isinstance(caught.value, exception.ServiceUnavailable)
    assert isinstance(caught.value, messaging.MessagingTimeout)


def test_a_remote_rpc_timeout_comes_back_as_itself():
    from oslo_messaging._drivers import common as rpc_common
    error = rpc.RPCTimeout(topic="compute", method="attach_volume")
    failure = rpc_common.serialize_remote_exception((type(error), error, None))
    back = rpc_common.deserialize_remote_exception(failure, rpc.ALLOWED_EXMODS)
    assert isinstance(back, rpc.RPCTimeout)
    assert isinstance(back, exception.ServiceUnavailable)


class FakeMessage:
    def __init__(self):
        self.acked = self.requeued = False

    def acknowledge(self):
        self.acked = True

    def requeue(self):
        self.requeued = True


def test_a_stopped_listener_gives_a_request_back_to_the_broker():
    from oslo_messaging._drivers import amqpdriver
    rpc._requeue_after_stop()
    rpc._requeue_after_stop()           # idempotent: wrapped once
    listener = amqpdriver.RpcAMQPListener.__new__(amqpdriver.RpcAMQPListener)
    listener._shutdown = threading.Event()
    listener._shutdown.set()
    listener.incoming = []
    message = FakeMessage()
    listener(message)
    assert message.requeued and not message.acked
    assert listener.incoming == []


def test_a_running_listener_still_acknowledges_and_keeps_a_request():
    from oslo_messaging._drivers import amqpdriver
    rpc._requeue_after_stop()
    listener = amqpdriver.RpcAMQPListener.__new__(amqpdriver.RpcAMQPListener)
    listener._shutdown = threading.Event()
    delivered = []
    listener.incoming = delivered
    message = FakeMessage()
    # what the original listener does with it (ack, then queue for the
    # server) is oslo.messaging's: stand it in to see it is reached
    original = amqpdriver.AMQPListener.__call__
    try:
        amqpdriver.AMQPListener.__call__ = (
            lambda self, msg: delivered.append(msg))
        listener(message)
    finally:
        amqpdriver.AMQPListener.__call__ = original
    assert message.acked and not message.requeued
    assert delivered == [message]


def test_rabbit_reconnects_back_off_two_seconds_at_most_unless_configured(
        tmp_path):
    from oslo_config import cfg
    conf = cfg.ConfigOpts()
    conf([], project="volattach", default_config_files=[])
    rpc._rabbit_defaults(conf)
    assert conf.oslo_messaging_rabbit.rabbit_interval_max == \
        rpc.RABBIT_INTERVAL_MAX == 2
    path = tmp_path / "v.conf"
    path.write_text("[oslo_messaging_rabbit]\nrabbit_interval_max = 7\n")
    conf = cfg.ConfigOpts()
    conf(["--config-file", str(path)], project="volattach")
    rpc._rabbit_defaults(conf)
    assert conf.oslo_messaging_rabbit.rabbit_interval_max == 7


# -- the call monitor ([DEFAULT] rpc_call_monitor_timeout) --------------------

class Slow:
    def __init__(self, seconds):
        self.seconds = seconds

    def wait(self, ctxt):
        time.sleep(self.seconds)
        return "done"


def _ctxt():
    from volattach import context
    return context.RequestContext(user_id="u", project_id="p")


@pytest.fixture
def monitored(transport):
    """``monitored(topic, seconds)``: the client rpc.get_client builds on
    this test's transport with ``rpc_call_monitor_timeout = seconds``."""
    def client(topic, seconds, timeout=None):
        CONF.set_override("rpc_call_monitor_timeout", seconds)
        return rpc.get_client(messaging.Target(topic=topic), timeout=timeout,
                              transport=transport)
    yield client
    CONF.clear_override("rpc_call_monitor_timeout")


@pytest.mark.parametrize("seconds,expected", [(10, 10), (1, 2), (0, None)])
def test_clients_carry_the_configured_call_monitor(monitored, seconds,
                                                   expected):
    client = monitored("t", seconds)
    assert client.call_monitor_timeout == expected
    assert client.prepare(version="1.0").call_monitor_timeout == expected


def test_a_lost_request_fails_at_the_monitor_not_the_whole_timeout(
        transport, monitored):
    """A listener that takes the call and never answers nor heartbeats
    (the broker lost the request): the call fails after the monitor's
    2 s, not its 30 s timeout."""
    listener = transport._driver.listen(
        messaging.Target(topic="lost", server="m"), 1, None)
    try:
        client = monitored("lost", 2, timeout=30)
        start = time.monotonic()
        with pytest.raises(rpc.RPCTimeout):
            client.call(_ctxt(), "echo", value=1)
        assert 1.5 < time.monotonic() - start < 10
    finally:
        listener.cleanup()


def test_a_call_longer_than_the_monitor_is_answered(monitored, start_server):
    """The server heartbeats while it works: a call of 3 s under a 2 s
    monitor gets its answer."""
    start_server("slow", Slow(3))
    assert monitored("slow", 2, timeout=30).call(_ctxt(), "wait") == "done"


def test_the_amqp_poll_loops_first_wait_after_a_message_is_rpc_poll_min(monkeypatch):
    """oslo.messaging's poll threads wait RPC_POLL_MIN_SECONDS, not 1 ms,
    after a message before timing out, doubling from there (fewer idle
    wakeups per message); a message still ends a wait at once."""
    import types
    from oslo_messaging._drivers import amqpdriver
    from oslo_messaging._drivers import common as rpc_common
    monkeypatch.setattr(amqpdriver, "ACK_REQUEUE_EVERY_SECONDS_MIN", 0.001)
    rpc._poll_less_often()
    rpc._poll_less_often()              # idempotent
    assert amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN == rpc.RPC_POLL_MIN_SECONDS
    waits, stop = [], threading.Event()

    def consume(timeout):
        waits.append(timeout)
        if len(waits) == 3:
            return                      # a message came
        if len(waits) == 5:
            stop.set()
        raise rpc_common.Timeout()
    poller = types.SimpleNamespace(_thread_exit_event=stop,
                                   conn=types.SimpleNamespace(consume=consume))
    amqpdriver.ReplyWaiter.poll(poller)
    first = rpc.RPC_POLL_MIN_SECONDS
    assert waits == [first, 2 * first, 4 * first, first, 2 * first]


class _Unreachable:
    """A wrapped oslo client whose sends fail as oslo.messaging's rabbit
    driver does once its reconnects to an unreachable broker run out."""
    timeout = 1
    target = messaging.Target(topic="t")

    def cast(self, ctxt, method, **kwargs):
        raise messaging.MessageDeliveryFailure("Unable to connect to AMQP")

    call = cast


@pytest.mark.parametrize("send", ["cast", "call"])
def test_an_unreachable_broker_is_a_503_family_error(send):
    client = rpc.Client(_Unreachable())
    with pytest.raises(rpc.RPCUndeliverable) as raised:
        getattr(client, send)({}, "m")
    assert isinstance(raised.value, exception.ServiceUnavailable)


def test_the_api_clients_give_up_reconnecting(transport, monkeypatch):
    monkeypatch.setattr(rpc, "_publish_retry", None)
    assert rpc.get_client(messaging.Target(topic="t"),
                          transport=transport)._wrapped.retry is None
    rpc.fail_fast_when_unreachable()
    assert rpc.get_client(messaging.Target(topic="t"), transport=transport
                          )._wrapped.retry == rpc.API_PUBLISH_RETRIES


def test_a_duplicate_oslo_drops_is_one_info_line(caplog):
    rpc._duplicates_at_info()
    logger = __import__("logging").getLogger(
        "oslo_messaging._drivers.amqpdriver")
    try:
        raise messaging.MessageDeliveryFailure("dup")
    except Exception:
        logger.exception("ignoring duplicate message %s", "m1")
    record = [r for r in caplog.records if "m1" in r.getMessage()][0]
    assert record.levelname == "INFO" and not record.exc_info
    assert "delivered again" in record.getMessage()
