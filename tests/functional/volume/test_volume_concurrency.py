"""Reservations are guaranteed by the database, not by one process.

``volattach-volume`` runs as its real command (gunicorn, 4 worker
processes) on a free loopback port; 50 separate processes (forked, each one
HTTP request, released together by a barrier) create attachments of ONE
volume at once.  Non-multiattach: exactly one wins, 49 get Cinder's clean
400.  Multiattach: all 50 win (bug 1747985 fixed), then 50 concurrent
completes and 50 concurrent deletes keep the volume's status consistent.
Runs on SQLite, and on PostgreSQL when $VOLATTACH_TEST_PG_URL is set.
"""
import http.client
import json
import multiprocessing
import pathlib
import signal
import subprocess
import sys
import time
import uuid

import pytest

from tests.functional.volume.volume_testlib import (
    ADMIN, P1, USER1, PgSchema, connector, free_port, pg_url_or_skip)

REPO = pathlib.Path(__file__).resolve().parents[3]
N = 50


class VolumeService:
    """``python -m volattach.cmd.volume`` as a subprocess."""

    def __init__(self, tmp_path, db_url, workers=4):
        self.port = free_port()
        self.log_path = tmp_path / "volume.log"
        conf_path = tmp_path / "volattach.conf"
        conf_path.write_text(
            "[DEFAULT]\nstate_path = %s\nreport_interval = 1\n"
            "[volume]\nlisten = 127.0.0.1\nport = %d\nworkers = %d\n"
            "host = concurrency\nconnection = %s\nauth_strategy = noauth\n"
            % (tmp_path / "state", self.port, workers, db_url))
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "volattach.cmd.volume",
             "--config-file", str(conf_path)],
            cwd=str(REPO), stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            if self.proc.poll() is not None:
                raise AssertionError("volattach-volume exited: %s"
                                     % self.log_path.read_text())
            try:
                if request("GET", self.port, "/")[0] == 300:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("volattach-volume not ready: %s"
                                     % self.log_path.read_text())
            time.sleep(0.1)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)   # the gunicorn master
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self.log.close()


def request(method, port, path, body=None, token=USER1, mv="3.54"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"OpenStack-API-Version": "volume %s" % mv,
               "Content-Type": "application/json"}
    if token:
        headers["X-Auth-Token"] = token
    conn.request(method, path, json.dumps(body) if body is not None else None,
                 headers)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, (json.loads(data) if data else None)


def _child(barrier, results, index, method, port, path, body):
    try:
        barrier.wait(30)
        results.put((index,) + request(method, port, path, body))
    except Exception as exc:  # reported to the parent, not swallowed
        results.put((index, -1, repr(exc)))


def concurrently(port, calls):
    """Run each (method, path, body) of ``calls`` in its own process, all
    released at once; returns [(status, body)] in the order of ``calls``."""
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(len(calls))
    results = ctx.Queue()
    procs = [ctx.Process(target=_child,
                         args=(barrier, results, i, m, port, p, b))
             for i, (m, p, b) in enumerate(calls)]
    for proc in procs:
        proc.start()
    collected = dict((r[0], r[1:]) for r in
                     (results.get(timeout=60) for _ in procs))
    for proc in procs:
        proc.join(10)
    assert len({proc.pid for proc in procs}) == len(calls)
    return [collected[i] for i in range(len(calls))]


@pytest.fixture(params=["sqlite", pytest.param(
    "postgresql", marks=pytest.mark.postgres)])
def volume_service(request, tmp_path):
    if request.param == "sqlite":
        svc = VolumeService(tmp_path,
                            "sqlite:///%s" % (tmp_path / "volume.sqlite"))
        yield svc
        svc.stop()
        return
    schema = PgSchema(pg_url_or_skip())
    svc = VolumeService(tmp_path, schema.url)
    yield svc
    svc.stop()
    schema.drop()


def create_volume(svc, multiattach=False):
    volume = {"size": 1}
    if multiattach:
        status, body = request("POST", svc.port, "/v3/%s/types" % P1, {
            "volume_type": {"name": "multiattach",
                            "extra_specs": {"multiattach": "<is> True"}}},
            token=ADMIN)
        assert status == 200, body
        volume["volume_type"] = "multiattach"
    status, body = request("POST", svc.port, "/v3/%s/volumes" % P1,
                           {"volume": volume})
    assert status == 202, body
    return body["volume"]["id"]


def reserve_calls(volume_id, with_connector=False):
    calls = []
    for _ in range(N):
        attachment = {"volume_uuid": volume_id,
                      "instance_uuid": str(uuid.uuid4())}
        if with_connector:
            attachment["connector"] = connector()
        calls.append(("POST", "/v3/%s/attachments" % P1,
                      {"attachment": attachment}))
    return calls


def volume_status(svc, volume_id):
    status, body = request("GET", svc.port, "/v3/%s/volumes/%s"
                           % (P1, volume_id))
    assert status == 200, body
    return body["volume"]["status"]


def attachments_of(svc, volume_id):
    status, body = request("GET", svc.port, "/v3/%s/attachments?volume_id=%s"
                           % (P1, volume_id))
    assert status == 200, body
    return body["attachments"]


def test_one_reservation_wins_on_non_multiattach(volume_service):
    svc = volume_service
    volume_id = create_volume(svc)
    results = concurrently(svc.port, reserve_calls(volume_id))
    statuses = sorted(status for status, _ in results)
    assert statuses == [200] + [400] * (N - 1), results
    refused = {body["badRequest"]["message"] for status, body in results
               if status == 400}
    assert refused == {
        "Invalid volume: Volume %s status must be available or downloading "
        "to reserve, but the current status is reserved." % volume_id}
    (winner,) = [body["attachment"] for status, body in results
                 if status == 200]
    assert [a["id"] for a in attachments_of(svc, volume_id)] == [winner["id"]]
    assert volume_status(svc, volume_id) == "reserved"

    # The service that did this is registered and heartbeating.
    status, body = request("GET", svc.port, "/v3/%s/os-services" % P1,
                           token=ADMIN)
    assert [(s["host"], s["state"]) for s in body["services"]] == [
        ("concurrency@fake", "up")]


def test_all_reservations_win_on_multiattach(volume_service):
    svc = volume_service
    volume_id = create_volume(svc, multiattach=True)
    results = concurrently(svc.port, reserve_calls(volume_id,
                                                   with_connector=True))
    assert [status for status, _ in results] == [200] * N, results
    ids = {body["attachment"]["id"] for _, body in results}
    assert len(ids) == N
    listed = attachments_of(svc, volume_id)
    assert {a["id"] for a in listed} == ids
    assert {a["status"] for a in listed} == {"attaching"}
    assert volume_status(svc, volume_id) == "attaching"

    results = concurrently(svc.port, [
        ("POST", "/v3/%s/attachments/%s/action" % (P1, att_id),
         {"os-complete": None}) for att_id in ids])
    assert [status for status, _ in results] == [204] * N, results
    assert volume_status(svc, volume_id) == "in-use"

    # Each delete sees the others that are still there: the remaining
    # counts are exactly N-1 .. 0, once each, and the volume ends free.
    results = concurrently(svc.port, [
        ("DELETE", "/v3/%s/attachments/%s" % (P1, att_id), None)
        for att_id in ids])
    assert [status for status, _ in results] == [200] * N, results
    remaining = sorted(len(body["attachments"]) for _, body in results)
    assert remaining == list(range(N))
    assert attachments_of(svc, volume_id) == []
    assert volume_status(svc, volume_id) == "available"
