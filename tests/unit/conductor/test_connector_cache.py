"""conductor.connectors: ``ConnectorCache`` and ``HostConnectors.get``: a
compute's connector read a moment ago is not read again; a host without a
service or a connector is read every time."""
import types
from unittest import mock

import pytest

import volattach  # noqa: F401
from volattach import objects
from volattach.conductor import connectors
from volattach.conductor import manager
from volattach import exception

objects.register_all()

CONNECTOR = {"host": "h1", "initiator": "iqn.h1", "ip": "10.0.0.1"}


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def _loader(rows):
    """load() returning the next of ``rows``, counting the reads."""
    calls = []

    def load():
        calls.append(1)
        return rows[min(len(calls), len(rows)) - 1]
    return load, calls


def _service(connector):
    return types.SimpleNamespace(connector=connector)


def test_a_connector_read_within_ttl_is_not_read_again():
    clock = Clock()
    cache = connectors.ConnectorCache(ttl=3.0, clock=clock)
    load, calls = _loader([_service(CONNECTOR)])
    assert cache.get("h1", load) == CONNECTOR
    clock.now += 2.9
    assert cache.get("h1", load) == CONNECTOR
    assert len(calls) == 1


def test_after_ttl_the_connector_is_read_again():
    clock = Clock()
    cache = connectors.ConnectorCache(ttl=3.0, clock=clock)
    changed = dict(CONNECTOR, initiator="iqn.h1-new")
    load, calls = _loader([_service(CONNECTOR), _service(changed)])
    cache.get("h1", load)
    clock.now += 3.0
    assert cache.get("h1", load) == changed
    assert len(calls) == 2


@pytest.mark.parametrize("row", [None, _service(None), _service({})])
def test_a_host_without_connector_is_never_remembered(row):
    cache = connectors.ConnectorCache(ttl=3.0, clock=Clock())
    load, calls = _loader([row, _service(CONNECTOR)])
    assert cache.get("h1", load) is None
    assert cache.get("h1", load) == CONNECTOR      # registered since: seen at once
    assert len(calls) == 2


def test_hosts_are_cached_apart():
    cache = connectors.ConnectorCache(ttl=3.0, clock=Clock())
    other = dict(CONNECTOR, host="h2")
    assert cache.get("h1", lambda: _service(CONNECTOR)) == CONNECTOR
    assert cache.get("h2", lambda: _service(other)) == other
    assert cache.get("h1", lambda: pytest.fail("read again")) == CONNECTOR


def test_callers_get_copies_they_may_change():
    cache = connectors.ConnectorCache(ttl=3.0, clock=Clock())
    row = _service(dict(CONNECTOR))
    first = cache.get("h1", lambda: row)
    first["mountpoint"] = "/dev/vdb"
    second = cache.get("h1", lambda: pytest.fail("read again"))
    assert second == CONNECTOR and "mountpoint" not in row.connector
    second["mode"] = "ro"
    assert cache.get("h1", lambda: None) == CONNECTOR


def test_clear_forgets_every_host():
    cache = connectors.ConnectorCache(ttl=3.0, clock=Clock())
    load, calls = _loader([_service(CONNECTOR)])
    cache.get("h1", load)
    cache.clear()
    cache.get("h1", load)
    assert len(calls) == 2


# -- HostConnectors, the conductor's collaborator ---------------------------------
@pytest.fixture
def task_manager():
    with mock.patch.object(manager, "compute_rpcapi"), \
            mock.patch.object(connectors.objects, "Service") as service:
        tm = manager.ComputeTaskManager(volume_api=mock.Mock())
        yield tm, service.get_by_host_and_binary


def test_connector_adds_mountpoint_and_mode_to_a_cached_read(task_manager):
    tm, get = task_manager
    get.return_value = _service(dict(CONNECTOR))
    ctx = mock.Mock()
    first = tm.connectors.get(ctx, "h1", "/dev/vdb", "ro")
    second = tm.connectors.get(ctx, "h1", "/dev/vdc", None)
    assert first == dict(CONNECTOR, mountpoint="/dev/vdb", mode="ro")
    assert second == dict(CONNECTOR, mountpoint="/dev/vdc", mode="rw")
    assert get.call_count == 1


@pytest.mark.parametrize("row", [None, _service(None)])
def test_connector_of_an_unknown_host_raises_every_time(task_manager, row):
    tm, get = task_manager
    get.return_value = row
    for _ in range(2):
        with pytest.raises(exception.ComputeHostNotFound):
            tm.connectors.get(mock.Mock(), "h9")
    assert get.call_count == 2
