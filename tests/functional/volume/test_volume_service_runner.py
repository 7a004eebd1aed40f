"""volume.service: prepare (db sync + registration) and serve_in_thread
(what volattach-all uses), with its heartbeat and clean shutdown."""
import http.client
import json
import time

import pytest

from tests.functional.volume.volume_testlib import ADMIN, PADMIN, make_conf
from volattach.volume import service


def get_services(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("GET", "/v3/%s/os-services" % PADMIN,
                 headers={"X-Auth-Token": ADMIN})
    resp = conn.getresponse()
    body = json.loads(resp.read())
    conn.close()
    assert resp.status == 200, body
    return body["services"]


def test_prepare_is_idempotent(tmp_path):
    conf = make_conf(tmp_path)
    first = service.prepare(conf)
    second = service.prepare(conf)
    assert first["uuid"] == second["uuid"]
    assert (first["host"], first["binary"]) == ("testhost@fake",
                                                "cinder-volume")


def test_serve_in_thread_heartbeats_and_shuts_down(tmp_path):
    conf = make_conf(tmp_path)
    conf.set_override("report_interval", 1)
    service.prepare(conf)
    server, thread = service.serve_in_thread(conf, host="127.0.0.1", port=0)
    try:
        (before,) = get_services(server.port)
        assert before["state"] == "up"
        time.sleep(1.3)
        (after,) = get_services(server.port)
        assert after["updated_at"] > before["updated_at"]
    finally:
        server.shutdown()
    thread.join(2)
    assert not thread.is_alive()
    server.heartbeat.join(2)
    assert not server.heartbeat.is_alive()
    with pytest.raises(ConnectionRefusedError):
        get_services(server.port)
