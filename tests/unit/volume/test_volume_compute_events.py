"""volume.compute_events against a tiny real HTTP server in this process:
what the volume-extended post carries, and that a compute API that fails
or does not answer is one WARNING line with its cause, never an error."""
import logging
import socket
import threading

import pytest

from tests.functional.volume.volume_testlib import ComputeStub, make_conf
from volattach.volume import compute_client
from volattach.volume import compute_events

VOLUME = "0b6d8a0e-52a6-4d6b-9a59-1f1c3b5d2e11"
S1 = "3f177cef-3b27-4014-9f98-8409645dc0f0"
S2 = "24b868d8-4372-40c4-b8a7-66041a34d6d9"


def _all_ok(events):
    return 200, {"events": [dict(e, code=200, status="completed")
                            for e in events]}


@pytest.fixture
def stub():
    made = []

    def make(reply=_all_ok):
        s = ComputeStub(reply)
        made.append(s)
        return s
    yield make
    for s in made:
        s.close()


def _events(tmp_path, url, timeout=30.0):
    conf = make_conf(tmp_path, auth_strategy="noauth", compute_endpoint=url,
                     compute_timeout=timeout)
    return compute_events.ComputeEvents(conf)


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING]


def test_one_event_per_server_at_2_51_with_the_service_token(tmp_path, stub):
    compute = stub()
    events = _events(tmp_path, compute.url + "/")
    assert events.volume_extended(VOLUME, [S1, S2]) is True
    [(path, headers, body)] = compute.requests
    assert path == "/v2.1/os-server-external-events"
    assert headers["X-OpenStack-Nova-API-Version"] == "2.51"
    assert headers["X-Auth-Token"] == compute_client.NOAUTH_TOKEN
    assert body == {"events": [
        {"name": "volume-extended", "server_uuid": S1, "tag": VOLUME},
        {"name": "volume-extended", "server_uuid": S2, "tag": VOLUME}]}


def test_no_server_posts_nothing(tmp_path, stub):
    compute = stub()
    assert _events(tmp_path, compute.url).volume_extended(VOLUME, []) is True
    assert compute.requests == []


def test_a_failed_event_of_a_207_is_one_warning(tmp_path, stub, caplog):
    def partial(events):
        return 207, {"events": [
            dict(events[0], code=200, status="completed"),
            dict(events[1], code=404, status="failed")]}
    compute = stub(partial)
    assert _events(tmp_path, compute.url).volume_extended(
        VOLUME, [S1, S2]) is False
    [line] = _warnings(caplog)
    assert "failed 1 event(s): %s 404 failed" % S2 in line
    assert VOLUME in line


def test_a_5xx_is_one_warning_with_the_answer(tmp_path, stub, caplog):
    compute = stub(lambda events: (503, {"error": "compute down for now"}))
    assert _events(tmp_path, compute.url).volume_extended(
        VOLUME, [S1]) is False
    [line] = _warnings(caplog)
    assert "answered 503" in line and "compute down for now" in line


def test_a_404_without_events_is_one_warning(tmp_path, stub, caplog):
    compute = stub(lambda events: (404, {"itemNotFound": {
        "code": 404, "message": "No instances found for any event"}}))
    assert _events(tmp_path, compute.url).volume_extended(
        VOLUME, [S1]) is False
    [line] = _warnings(caplog)
    assert "answered 404" in line and "No instances found" in line


def test_connection_refused_is_one_warning_with_the_cause(tmp_path, caplog):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]       # closed: nothing listens there
    url = "http://127.0.0.1:%d/v2.1" % port
    assert _events(tmp_path, url).volume_extended(VOLUME, [S1]) is False
    [line] = _warnings(caplog)
    assert "did not answer: ConnectFailure" in line
    assert "Connection refused" in line and url in line
    assert "\n" not in line


def test_a_compute_api_that_hangs_times_out_as_one_warning(tmp_path, stub,
                                                           caplog):
    compute = stub()
    compute.hold = threading.Event()    # never answers before the timeout
    assert _events(tmp_path, compute.url, timeout=0.2).volume_extended(
        VOLUME, [S1]) is False
    [line] = _warnings(caplog)
    assert "did not answer" in line and "Timeout" in line
    assert len(compute.requests) == 1
