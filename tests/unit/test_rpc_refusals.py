"""Refusals that are the caller's fault over RPC (``rpc.get_server`` /
``rpc.get_client`` on the in-process bus and on oslo.messaging's AMQP
driver over kombu's memory broker): expected by the server, logged
once at INFO without a traceback, received by the caller as their own
class; other failures still logged at ERROR with their traceback; and each
message handled under its own context."""
import itertools
import logging
import threading

import oslo_messaging as messaging
import pytest
from oslo_context import context as oslo_context

import volattach  # noqa: F401
from volattach import context as volattach_context
from volattach import exception
from volattach import rpc
from volattach.conf import CONF
from volattach.rpc import inproc

_vhosts = itertools.count(1)


class Endpoint:

    def __init__(self, downstream=None):
        self.downstream = downstream
        self.seen = []

    def refuse(self, ctxt):
        raise exception.DevicePathInUse(path="/dev/vdb")

    def pass_on(self, ctxt):
        # a conductor letting a compute's refusal through to its caller
        return self.downstream.call(ctxt, "refuse")

    def break_down(self, ctxt):
        raise RuntimeError("disk on fire")

    def whose(self, ctxt):
        current = oslo_context.get_current()
        self.seen.append(threading.current_thread())
        return current.request_id, current.user_id


@pytest.fixture(params=["inproc", "kombu+memory"])
def bus(monkeypatch, request):
    CONF([], project="volattach", default_config_files=[])
    if request.param == "inproc":
        url = "%s:///refusals-%d" % (inproc.SCHEME, next(_vhosts))
    else:
        # the AMQP driver's replies (RabbitMQ's), on kombu's memory broker
        url = "kombu+memory:////refusals-%d" % next(_vhosts)
    transport = messaging.get_rpc_transport(
        CONF, url=url, allowed_remote_exmods=rpc.ALLOWED_EXMODS)
    monkeypatch.setattr(rpc, "TRANSPORT", transport)
    servers = []

    def serve(topic, endpoint, threads=None):
        server = rpc.get_server(messaging.Target(topic=topic, server="h"),
                                [endpoint])
        if threads:
            CONF.set_override("executor_thread_pool_size", threads)
        server.start()
        servers.append(server)
        return rpc.get_client(messaging.Target(topic=topic), timeout=5,
                              transport=transport)

    yield serve
    for server in servers:
        server.stop()
        server.wait()
    CONF.clear_override("executor_thread_pool_size")
    transport.cleanup()


def _ctx(user="alice", request_id="req-1"):
    return volattach_context.RequestContext(
        user_id=user, project_id="demo", request_id=request_id,
        overwrite=False)


def _warnings(caplog):
    """WARNING and above, but the memory broker's connection notices."""
    return [r for r in caplog.records if r.levelno >= logging.WARNING
            and not r.name.startswith(("kombu", "oslo.messaging._drivers"))]


def _refusal_lines(caplog):
    return [r for r in caplog.records
            if r.name == "volattach.rpc" and "refused" in r.getMessage()]


def test_a_refusal_is_expected_and_logged_once_without_traceback(bus, caplog):
    caplog.set_level(logging.DEBUG)
    client = bus("compute", Endpoint())
    with pytest.raises(exception.DevicePathInUse) as raised:
        client.call(_ctx(), "refuse")
    # the caller gets the class itself (the API maps it to 409), and its
    # text without the server's traceback
    assert type(raised.value) is exception.DevicePathInUse
    assert str(raised.value) == \
        "The supplied device path (/dev/vdb) is in use."
    [line] = _refusal_lines(caplog)
    assert line.levelno == logging.INFO and line.exc_info is None
    assert line.getMessage() == \
        "refuse refused: The supplied device path (/dev/vdb) is in use."
    assert not _warnings(caplog)
    assert not [r for r in caplog.records if r.exc_info]


def test_a_refusal_passed_on_is_logged_by_its_server_only(bus, caplog):
    caplog.set_level(logging.INFO)
    compute = bus("compute", Endpoint())
    conductor = bus("conductor", Endpoint(downstream=compute))
    with pytest.raises(exception.DevicePathInUse) as raised:
        conductor.call(_ctx(), "pass_on")
    assert type(raised.value) is exception.DevicePathInUse
    assert len(_refusal_lines(caplog)) == 1
    assert not _warnings(caplog)


def test_a_server_error_is_still_logged_with_its_traceback(bus, caplog):
    caplog.set_level(logging.INFO)
    client = bus("compute", Endpoint())
    with pytest.raises(RuntimeError):
        client.call(_ctx(), "break_down")
    [error] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert error.name.startswith("oslo_messaging")
    assert error.exc_info and "disk on fire" in str(error.exc_info[1])
    assert not _refusal_lines(caplog)


def test_each_message_is_handled_under_its_own_context(bus):
    endpoint = Endpoint()
    client = bus("compute", endpoint, threads=1)
    assert client.call(_ctx("alice", "req-1"), "whose") == ["req-1", "alice"]
    assert client.call(_ctx("bob", "req-2"), "whose") == ["req-2", "bob"]
    # one thread served both: the second did not inherit the first's
    assert endpoint.seen[0] is endpoint.seen[1]
