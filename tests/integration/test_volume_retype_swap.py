"""A retype of an attached volume through the real daemons: volattach-volume
(one gunicorn worker) asks the compute API to swap, the conductor swaps on
the compute and calls os-migrate_volume_completion back."""
import time
import uuid

import pytest

from tests.integration.client import ComputeClient, VolumeClient

pytestmark = pytest.mark.integration

WAIT = 60


@pytest.fixture
def compute(deployment):
    client = ComputeClient(deployment.api_url, microversion="2.37")
    yield client
    client.close()


@pytest.fixture
def volumes(deployment):
    client = VolumeClient(deployment.volume_url)
    yield client
    client.close()


def _wait(fetch, done, what):
    deadline = time.monotonic() + WAIT
    while True:
        value = fetch()
        if done(value):
            return value
        assert time.monotonic() < deadline, (what, value)
        time.sleep(0.5)


def test_retype_of_an_attached_volume_swaps_the_server(compute, volumes):
    status, body, _ = volumes.create_volume_type(
        "gold-%s" % uuid.uuid4().hex[:6], {})
    assert status == 200, body
    gold = body["volume_type"]["name"]
    status, body, _ = volumes.create_volume(size=1, name="retyped")
    assert status == 202, body
    volume_id = body["volume"]["id"]
    volumes.wait_for_volume_status(volume_id, "available", WAIT)
    status, body, _ = compute.create_server(name="retype", networks="none")
    assert status == 202, body
    server_id = body["server"]["id"]
    compute.wait_for_server_status(server_id, "ACTIVE", WAIT)
    status, body, _ = compute.attach_volume(server_id, volume_id,
                                            microversion="2.1")
    assert status == 200, body
    device = body["volumeAttachment"]["device"]
    volumes.wait_for_volume_status(volume_id, "in-use", WAIT)

    status, body, _ = volumes.request(
        "POST", volumes._path("/volumes/%s/action" % volume_id),
        {"os-retype": {"new_type": gold, "migration_policy": "on-demand"}})
    assert status == 202, body
    volume = _wait(lambda: volumes.show_volume(volume_id)[1]["volume"],
                   lambda v: v["migration_status"] in ("success", "error"),
                   "migration")
    assert volume["migration_status"] == "success", volume
    assert volume["volume_type"] == gold
    listed = _wait(
        lambda: compute.list_volume_attachments(
            server_id, microversion="2.1")[1]["volumeAttachments"],
        lambda atts: [a["volumeId"] for a in atts] == [volume_id],
        "server record")
    assert listed[0]["device"] == device
    volume = volumes.wait_for_volume_status(volume_id, "in-use", WAIT)
    assert [a["server_id"] for a in volume["attachments"]] == [server_id]

    status, body, _ = compute.delete_server(server_id)
    assert status == 204, body
    volumes.wait_for_volume_status(volume_id, "available", WAIT)
    status, body, _ = volumes.delete_volume(volume_id)
    assert status == 202, body
