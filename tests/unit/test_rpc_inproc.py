"""The in-process oslo.messaging driver (rpc/inproc.py): RPC calls, casts,
fanout and round robin, timeouts, remote exceptions, notifications with
pools, stopping, clean-up, copies, and no CPU while idle.  Each test has a
bus of its own (a virtual host in the URL)."""
import datetime
import itertools
import queue
import threading
import time

import oslo_messaging as messaging
import pytest

import volattach  # noqa: F401
from volattach.rpc import inproc
from volattach import exception
from volattach.conf import CONF

_vhosts = itertools.count(1)


class Recorder:
    """An RPC endpoint that records what it is sent and answers."""

    def __init__(self, name="server"):
        self.name = name
        self.seen = queue.Queue()
        self.kept = []

    def echo(self, ctxt, value):
        self.seen.put(("echo", value))
        return {"server": self.name, "value": value}

    def keep(self, ctxt, value):
        self.kept.append(value)
        value["changed_by_server"] = True
        self.seen.put(("keep", value))
        return value

    def whoami(self, ctxt):
        self.seen.put(("whoami", None))
        return self.name

    def fail(self, ctxt, volume_id):
        raise exception.VolumeNotAttached(volume_id=volume_id, server_id="srv-1")

    def fail_foreign(self, ctxt):
        raise messaging.InvalidTarget("not allowed back as itself", None)

    def slow(self, ctxt, seconds):
        time.sleep(seconds)
        return "done"


@pytest.fixture
def url():
    CONF([], project="volattach", default_config_files=[])
    return "%s:///unit-%d" % (inproc.SCHEME, next(_vhosts))


@pytest.fixture
def transport(url):
    transport = messaging.get_rpc_transport(
        CONF, url=url, allowed_remote_exmods=["volattach.exception"])
    yield transport
    transport.cleanup()


@pytest.fixture
def servers(transport):
    started = []

    def start(topic, server, endpoint):
        srv = messaging.get_rpc_server(transport, messaging.Target(topic=topic, server=server),
                                       [endpoint])
        srv.start()
        started.append(srv)
        return srv

    yield start
    stop_all(started)


def stop_all(servers):
    """Stop RPC servers or notification listeners; their wait()s run in
    parallel (each takes up to a second: futurist's idle workers poll)."""
    for srv in servers:
        srv.stop()
    waits = [threading.Thread(target=srv.wait) for srv in servers]
    for thread in waits:
        thread.start()
    for thread in waits:
        thread.join()


def client(transport, topic, server=None, fanout=False, timeout=5, **kwargs):
    target = messaging.Target(topic=topic, server=server, fanout=fanout)
    return messaging.get_rpc_client(transport, target, timeout=timeout, **kwargs)


def test_entry_point_loads_the_driver(transport):
    assert isinstance(transport._driver, inproc.InProcessDriver)
    assert messaging.TransportURL.parse(CONF, inproc.URL).transport == inproc.SCHEME


def test_call_returns_the_reply(transport, servers):
    servers("t", "a", Recorder("a"))
    assert client(transport, "t").call({}, "echo", value=[1, 2]) == {
        "server": "a", "value": [1, 2]}
    assert client(transport, "t", server="a").call({}, "whoami") == "a"


def test_cast_is_delivered(transport, servers):
    endpoint = Recorder()
    servers("t", "a", endpoint)
    assert client(transport, "t").cast({}, "echo", value="cast") is None
    assert endpoint.seen.get(timeout=5) == ("echo", "cast")


def test_fanout_reaches_every_server_of_the_topic(transport, servers):
    a, b, other = Recorder("a"), Recorder("b"), Recorder("other")
    servers("t", "a", a)
    servers("t", "b", b)
    servers("elsewhere", "c", other)
    client(transport, "t", fanout=True).cast({}, "echo", value="all")
    assert a.seen.get(timeout=5) == ("echo", "all")
    assert b.seen.get(timeout=5) == ("echo", "all")
    time.sleep(0.1)
    assert other.seen.empty()


def test_topic_queue_is_shared_round_robin(transport, servers):
    servers("t", "a", Recorder("a"))
    servers("t", "b", Recorder("b"))
    rpc = client(transport, "t")
    answers = [rpc.call({}, "whoami") for _ in range(20)]
    # both idle servers take turns (the one waiting longest gets the next)
    assert answers.count("a") >= 5 and answers.count("b") >= 5, answers


def test_server_queue_reaches_only_that_server(transport, servers):
    a, b = Recorder("a"), Recorder("b")
    servers("t", "a", a)
    servers("t", "b", b)
    answers = {client(transport, "t", server="b").call({}, "whoami") for _ in range(5)}
    assert answers == {"b"}
    assert a.seen.empty()


def test_call_times_out_when_the_server_is_too_slow(transport, servers):
    servers("t", "a", Recorder())
    start = time.monotonic()
    with pytest.raises(messaging.MessagingTimeout):
        client(transport, "t", timeout=0.3).call({}, "slow", seconds=1.5)
    assert 0.3 <= time.monotonic() - start < 1.2


def test_call_to_a_topic_nobody_serves_times_out(transport):
    # routed to no queue: dropped, as by a broker exchange with no binding
    with pytest.raises(messaging.MessagingTimeout):
        client(transport, "nobody", timeout=0.2).call({}, "whoami")


def test_at_least_once_to_a_topic_nobody_serves_is_undeliverable(transport):
    options = messaging.TransportOptions(at_least_once=True)
    with pytest.raises(messaging.MessageUndeliverable):
        client(transport, "nobody", transport_options=options).cast({}, "whoami")


def test_message_waits_in_a_declared_queue_for_the_server_restart(transport, servers):
    first = servers("t", "a", Recorder())
    first.stop()
    first.wait()
    client(transport, "t", server="a").cast({}, "echo", value="while stopped")
    endpoint = Recorder()
    servers("t", "a", endpoint)
    assert endpoint.seen.get(timeout=5) == ("echo", "while stopped")


def test_call_monitor_heartbeats_keep_a_long_call_alive(transport, servers):
    servers("t", "a", Recorder())
    # the server heartbeats every second (half the monitor's 2 s, which
    # would expire without them)
    rpc = client(transport, "t", timeout=10, call_monitor_timeout=2)
    assert rpc.call({}, "slow", seconds=3) == "done"


def test_call_monitor_expires_without_heartbeats(transport):
    # a bare listener takes the call and never answers nor heartbeats
    adapter = transport._driver.listen(messaging.Target(topic="mute", server="m"), 1, None)
    rpc = client(transport, "mute", timeout=10, call_monitor_timeout=0.3)
    start = time.monotonic()
    with pytest.raises(messaging.MessagingTimeout):
        rpc.call({}, "whoami")
    assert time.monotonic() - start < 2
    assert len(adapter._poll_style_listener.poll(timeout=1)) == 1  # it was delivered
    adapter.cleanup()


def test_remote_domain_exception_comes_back_as_its_class(transport, servers):
    servers("t", "a", Recorder())
    with pytest.raises(exception.VolumeNotAttached) as raised:
        client(transport, "t").call({}, "fail", volume_id="vol-1")
    assert "vol-1" in str(raised.value) and "srv-1" in str(raised.value)
    assert raised.value.kwargs == {"volume_id": "vol-1", "server_id": "srv-1"}


def test_exception_of_a_module_not_allowed_is_a_remote_error(transport, servers):
    servers("t", "a", Recorder())
    with pytest.raises(messaging.RemoteError) as raised:
        client(transport, "t").call({}, "fail_foreign")
    assert raised.value.exc_type == "InvalidTarget"


def test_sender_and_receiver_share_no_mutable_state(transport, servers):
    endpoint = Recorder()
    servers("t", "a", endpoint)
    sent = {"nested": {"list": [1, 2]}, "pair": (1, 2)}
    reply = client(transport, "t").call({}, "keep", value=sent)
    assert sent == {"nested": {"list": [1, 2]}, "pair": (1, 2)}
    received = endpoint.kept[0]
    assert received["pair"] == [1, 2]  # as over JSON
    assert received is not reply and received["nested"] is not reply["nested"]
    reply["nested"]["list"].append(3)
    assert received["nested"]["list"] == [1, 2]


def test_wire_copy_is_a_json_round_trip():
    when = datetime.datetime(2026, 11, 21, 8, 30, 1)
    value = {"a": [1, (2, 3), {"b": None}], "t": True, "f": 1.5, "when": when, 3: "x"}
    copied = inproc.wire_copy(value)
    assert copied == {"a": [1, [2, 3], {"b": None}], "t": True, "f": 1.5,
                      "when": "2026-11-21T08:30:01.000000", "3": "x"}
    plain = {"a": [{"b": [1]}]}
    copied = inproc.wire_copy(plain)
    assert copied == plain and copied["a"][0] is not plain["a"][0]


def test_stopping_a_server_unblocks_its_listener(transport, servers):
    srv = servers("t", "a", Recorder())
    time.sleep(0.1)  # its listener blocks, waiting for a message
    start = time.monotonic()
    srv.stop()
    srv.wait()
    assert time.monotonic() - start < 1.0


def test_poll_blocks_until_a_message_or_stop(transport):
    driver = transport._driver
    adapter = driver.listen(messaging.Target(topic="p", server="s"), 1, None)
    listener = adapter._poll_style_listener
    start = time.monotonic()
    assert listener.poll(timeout=0.2) == []
    assert 0.2 <= time.monotonic() - start < 1.0

    threading.Timer(0.1, driver.send, (messaging.Target(topic="p"), {"c": 1},
                                       {"method": "m", "args": {}})).start()
    got = listener.poll(timeout=5)
    assert [(m.ctxt, m.message) for m in got] == [({"c": 1}, {"method": "m", "args": {}})]

    threading.Timer(0.1, listener.stop).start()
    start = time.monotonic()
    assert listener.poll() == []  # no timeout: only stop() ends it
    assert time.monotonic() - start < 1.0
    listener.cleanup()


def test_idle_server_uses_no_cpu(transport, servers):
    servers("t", "a", Recorder())
    servers("t", "b", Recorder())
    time.sleep(0.1)
    cpu = time.process_time()
    time.sleep(0.5)
    # every thread of the process: a polling listener would show here
    assert time.process_time() - cpu < 0.005


def test_cleanup_discards_the_bus(url):
    first = messaging.get_rpc_transport(CONF, url=url)
    second = messaging.get_notification_transport(CONF, url=url)
    broker = first._driver.broker
    assert second._driver.broker is broker  # one bus per URL in a process
    first.cleanup()
    assert inproc._brokers[url.rsplit("/", 1)[1]][0] is broker
    second.cleanup()
    second.cleanup()  # twice is harmless
    assert url.rsplit("/", 1)[1] not in inproc._brokers
    fresh = messaging.get_rpc_transport(CONF, url=url)
    try:
        assert fresh._driver.broker is not broker
    finally:
        fresh.cleanup()


# -- notifications -----------------------------------------------------------------------

class NotificationRecorder:
    def __init__(self, requeue_first=False):
        self.seen = queue.Queue()
        self.requeue_first = requeue_first

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        if self.requeue_first:
            self.requeue_first = False
            return messaging.NotificationResult.REQUEUE
        self.seen.put((event_type, payload))
        return messaging.NotificationResult.HANDLED


@pytest.fixture
def notifications(url):
    transport = messaging.get_notification_transport(CONF, url=url)
    notifier = messaging.Notifier(transport, driver="messagingv2",
                                  publisher_id="unit", topics=["n"])
    listeners = []

    def listen(endpoint, pool=None, allow_requeue=False):
        listener = messaging.get_notification_listener(
            transport, [messaging.Target(topic="n")], [endpoint],
            pool=pool, allow_requeue=allow_requeue)
        listener.start()
        listeners.append(listener)
        return listener

    yield notifier, listen
    stop_all(listeners)
    transport.cleanup()


def test_notification_reaches_a_listener(notifications):
    notifier, listen = notifications
    endpoint = NotificationRecorder()
    listen(endpoint)
    notifier.info({}, "thing.happened", {"id": 1})
    assert endpoint.seen.get(timeout=5) == ("thing.happened", {"id": 1})


def test_notification_waits_in_its_queue_for_a_listener(notifications):
    notifier, listen = notifications
    notifier.info({}, "before.listening", {"id": 1})
    endpoint = NotificationRecorder()
    listen(endpoint)
    assert endpoint.seen.get(timeout=5) == ("before.listening", {"id": 1})


def test_each_pool_gets_a_copy_shared_by_its_listeners(notifications):
    notifier, listen = notifications
    pool_a1, pool_a2, pool_b = (NotificationRecorder() for _ in range(3))
    listen(pool_a1, pool="a")
    listen(pool_a2, pool="a")
    listen(pool_b, pool="b")
    for i in range(6):
        notifier.info({}, "e", {"i": i})
    got_b = sorted(pool_b.seen.get(timeout=5)[1]["i"] for _ in range(6))
    assert got_b == list(range(6))
    time.sleep(0.2)
    got_a = []
    for endpoint in (pool_a1, pool_a2):
        while not endpoint.seen.empty():
            got_a.append(endpoint.seen.get()[1]["i"])
    assert sorted(got_a) == list(range(6))  # once each, within pool a


def test_requeued_notification_is_delivered_again(notifications):
    notifier, listen = notifications
    endpoint = NotificationRecorder(requeue_first=True)
    listen(endpoint, allow_requeue=True)
    notifier.info({}, "again", {"id": 2})
    assert endpoint.seen.get(timeout=5) == ("again", {"id": 2})


def test_queue_keeps_at_most_max_length(monkeypatch, notifications):
    notifier, listen = notifications
    monkeypatch.setattr(inproc, "MAX_QUEUE_LENGTH", 3)
    for i in range(5):
        notifier.info({}, "e", {"i": i})
    endpoint = NotificationRecorder()
    listen(endpoint)
    got = [endpoint.seen.get(timeout=5)[1]["i"] for _ in range(3)]
    assert got == [2, 3, 4]  # the oldest were dropped
    time.sleep(0.1)
    assert endpoint.seen.empty()


# -- rpc.init without the entry point ------------------------------------------------------

def test_rpc_init_builds_the_driver_without_its_entry_point(monkeypatch, url):
    from volattach import rpc

    def not_installed(conf, url=None, allowed_remote_exmods=None):
        raise messaging.DriverLoadFailure(inproc.SCHEME, RuntimeError("no entry point"))

    monkeypatch.setattr(messaging, "get_rpc_transport", not_installed)
    monkeypatch.setattr(messaging, "get_notification_transport", not_installed)
    rpc.cleanup()
    try:
        transport = rpc.init(CONF, url=url)
        assert isinstance(transport, messaging.transport.RPCTransport)
        assert isinstance(rpc.NOTIFICATION_TRANSPORT, messaging.transport.NotificationTransport)
        assert transport._driver._allowed_remote_exmods == rpc.ALLOWED_EXMODS
        assert rpc.NOTIFICATION_TRANSPORT._driver.broker is transport._driver.broker
    finally:
        rpc.cleanup()


def test_rpc_init_still_fails_for_other_missing_drivers(monkeypatch, url):
    from volattach import rpc

    def not_installed(conf, url=None, allowed_remote_exmods=None):
        raise messaging.DriverLoadFailure("nosuch", RuntimeError("no entry point"))

    monkeypatch.setattr(messaging, "get_rpc_transport", not_installed)
    rpc.cleanup()
    with pytest.raises(messaging.DriverLoadFailure):
        rpc.init(CONF, url="nosuch://")
    rpc.cleanup()


def test_wire_copy_copies_every_container_and_refuses_the_rest():
    leaf = {"c": [1, "x", None, 2.5, False]}
    value = {"a": [leaf, (leaf, [])], "b": leaf, "s": "t", "n": None}
    copied = inproc.wire_copy(value)
    assert copied == {"a": [leaf, [leaf, []]], "b": leaf, "s": "t", "n": None}
    for got in (copied["b"], copied["a"][0], copied["a"][1][0]):
        assert got is not leaf and got["c"] is not leaf["c"]
    assert inproc.wire_copy("s") == "s" and inproc.wire_copy(None) is None
    assert inproc.wire_copy((1, (2,))) == [1, [2]]
    # values JSON would change (keys that are not strings, other types) go
    # through the JSON round trip, however deep
    assert inproc.wire_copy([{"k": {1: "x"}}]) == [{"k": {"1": "x"}}]
    with pytest.raises(inproc._NotPlain):
        inproc._plain_copy({"k": [object()]})
