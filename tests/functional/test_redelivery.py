"""At-least-once delivery, exactly-once effect (issue 31): RabbitMQ hands a
message again when its acknowledgement was lost, so every conductor and
compute message of an attach/detach cycle is delivered twice here (the
in-process bus's duplicate hook, ``rpc.inproc.set_duplicate_hook``) and
the cycle must have the effect of one: one attachment in the volume
service, one device in the guest, one entry in os-volume_attachments; a
detach leaves none."""
import collections
import logging
import threading

import pytest

from tests.functional.test_attach_detach import (
    _attachment_rows, _new_server, _new_volume, _server_host)
from tests.functional.instance_actions import action_events
from volattach.rpc import inproc

ASYNC = "2.101"


class Redelivery:
    """While on, every message to a conductor or compute topic is delivered
    twice; ``seen`` counts the (topic, method) pairs duplicated."""

    def __init__(self):
        self.seen = collections.Counter()
        self._lock = threading.Lock()

    def _hook(self, exchange, routing_key, message):
        if not routing_key.startswith(("conductor", "compute")):
            return False
        with self._lock:
            self.seen[(routing_key.split(".")[0], message.get("method"))] += 1
        return True

    def on(self):
        inproc.set_duplicate_hook(self._hook)

    def off(self):
        inproc.set_duplicate_hook(None)


@pytest.fixture
def redelivery():
    redelivery = Redelivery()
    try:
        yield redelivery
    finally:
        redelivery.off()


def _devices(deployment, server_id):
    host = _server_host(deployment, server_id)
    return deployment.computes[host].driver.guests[server_id]["devices"]


def test_attach_and_detach_delivered_twice_act_once(api, admin_api, volumes,
                                                     deployment, redelivery,
                                                     caplog):
    caplog.set_level(logging.INFO, logger="volattach.conductor.tasks.base")
    server_id = _new_server(api)
    volume_id = _new_volume(volumes)
    devices_before = dict(_devices(deployment, server_id))
    redelivery.on()

    status, body, _ = api.attach_volume(server_id, volume_id,
                                        microversion=ASYNC)
    assert status == 202, body
    volumes.wait_for_volume_status(volume_id, "in-use")
    assert any(topic.startswith("conductor") for topic, _ in redelivery.seen), redelivery.seen
    assert any(topic == "compute" for topic, _ in redelivery.seen), redelivery.seen

    status, body, _ = api.list_volume_attachments(server_id)
    assert status == 200, body
    assert [a["volumeId"] for a in body["volumeAttachments"]] == [volume_id]
    assert len(_attachment_rows(volumes, volume_id)) == 1
    added = set(_devices(deployment, server_id)) - set(devices_before)
    assert len(added) == 1, _devices(deployment, server_id)

    status, body, _ = api.detach_volume(server_id, volume_id,
                                        microversion=ASYNC)
    assert status == 202, body
    volumes.wait_for_volume_status(volume_id, "available")
    api.wait_for_volume_attachment_gone(server_id, volume_id)
    assert _attachment_rows(volumes, volume_id) == []
    assert set(_devices(deployment, server_id)) == set(devices_before)
    # the second deliveries were seen and dropped, not failed and rolled back
    dropped = [r for r in caplog.records if "delivered again" in r.getMessage()]
    assert {r.getMessage().split()[0] for r in dropped} == {
        "AttachVolumeTask", "DetachVolumeTask"}, dropped
    assert all(r.levelno == logging.INFO and not r.exc_info for r in dropped)
    for action in ("attach_volume", "detach_volume"):
        events = action_events(admin_api, server_id, action)
        assert [e["result"] for e in events] == ["Success"], events



def test_live_migration_and_shelve_delivered_twice_act_once(
        api, admin_api, volumes, deployment, redelivery, caplog):
    caplog.set_level(logging.INFO, logger="volattach.conductor.tasks.base")
    server_id = _new_server(api)
    volume_id = _new_volume(volumes)
    status, body, _ = api.attach_volume(server_id, volume_id,
                                        microversion=ASYNC)
    assert status == 202, body
    volumes.wait_for_volume_status(volume_id, "in-use")
    source = _server_host(deployment, server_id)
    dest = "compute2" if source == "compute1" else "compute1"
    devices = len(_devices(deployment, server_id))
    redelivery.on()

    admin_api.live_migrate(server_id, dest)
    assert _server_host(deployment, server_id) == dest
    status, body, _ = api.request("POST", "/servers/%s/action" % server_id,
                                  {"shelve": None}, microversion="2.37")
    assert status == 202, body
    api.wait_for_server_status(server_id, "SHELVED_OFFLOADED", timeout=30)
    status, body, _ = api.request("POST", "/servers/%s/action" % server_id,
                                  {"unshelve": None}, microversion="2.37")
    assert status == 202, body
    api.wait_for_server_status(server_id, "ACTIVE", timeout=30)
    redelivery.off()

    # one attachment, one device, after all that
    assert len(_attachment_rows(volumes, volume_id)) == 1
    status, body, _ = api.list_volume_attachments(server_id)
    assert [a["volumeId"] for a in body["volumeAttachments"]] == [volume_id]
    assert len(_devices(deployment, server_id)) == devices
    dropped = {r.getMessage().split()[0] for r in caplog.records
               if "delivered again" in r.getMessage()}
    assert {"LiveMigrationTask", "ShelveTask", "UnshelveTask"} <= dropped
    for action in ("live-migration", "shelve", "unshelve"):
        events = action_events(admin_api, server_id, action)
        assert events and all(e["result"] == "Success" for e in events), (
            action, events)
    status, body, _ = api.detach_volume(server_id, volume_id,
                                        microversion=ASYNC)
    assert status == 202, body
    volumes.wait_for_volume_status(volume_id, "available")
