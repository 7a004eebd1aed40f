"""External events through the real daemons over RabbitMQ and PostgreSQL:
the 2.93 rebuild of a volume-backed server waits in volattach-conductor for
the volume-reimaged event that volattach-volume posts to volattach-api
(gunicorn) after its os-reimage, which the API hands to the conductors in a
fanout cast; a volume-extended event reaches the compute daemon."""
import time

import pytest

from tests.integration.client import DEFAULT_IMAGE, ComputeClient, VolumeClient

pytestmark = pytest.mark.integration

WAIT = 60
SERVICE_TOKEN = "cinder:service:service"
# the fake driver's other image (and the volume service's)
IMAGE_ALT = "2c8d8b3e-3b1b-4e5f-9b4f-5bd1c0de0a11"


@pytest.fixture
def compute(deployment):
    client = ComputeClient(deployment.api_url, microversion="2.93")
    yield client
    client.close()


@pytest.fixture
def volumes(deployment):
    client = VolumeClient(deployment.volume_url)
    yield client
    client.close()


def _events(compute, server_id, action):
    status, body, _ = compute.request(
        "GET", "/servers/%s/os-instance-actions" % server_id,
        microversion="2.84")
    assert status == 200, body
    found = []
    for one in body["instanceActions"]:
        if one["action"] == action:
            status, detail, _ = compute.request(
                "GET", "/servers/%s/os-instance-actions/%s"
                % (server_id, one["request_id"]), microversion="2.84")
            found += detail["instanceAction"]["events"]
    return found


def test_reimage_and_extend_events_through_the_daemons(compute, volumes,
                                                       deployment):
    status, body, _ = volumes.create_volume(size=1, imageRef=DEFAULT_IMAGE)
    assert status == 202, body
    root = body["volume"]["id"]
    volumes.wait_for_volume_status(root, "available", WAIT)
    status, body, _ = compute.create_server(
        name="bfv-events", image_ref="", networks="none",
        block_device_mapping_v2=[{"boot_index": 0, "uuid": root,
                                  "source_type": "volume",
                                  "destination_type": "volume"}])
    assert status == 202, body
    server_id = body["server"]["id"]
    compute.wait_for_server_status(server_id, "ACTIVE", WAIT)
    before = volumes.list_attachments(volume_id=root)[1]["attachments"]

    status, body, _ = compute.request(
        "POST", "/servers/%s/action" % server_id, {"rebuild": {
            "imageRef": IMAGE_ALT}})
    assert status == 202, body
    compute.wait_for_server_status(server_id, "ACTIVE", WAIT)
    volume = volumes.show_volume(root)[1]["volume"]
    assert volume["volume_image_metadata"]["image_id"] == IMAGE_ALT
    after = volumes.list_attachments(volume_id=root)[1]["attachments"]
    assert [a["id"] for a in after] != [a["id"] for a in before]
    rebuild = _events(compute, server_id, "rebuild")
    assert [e["result"] for e in rebuild] == ["Success"], rebuild

    service = ComputeClient(deployment.api_url, SERVICE_TOKEN)
    status, body, _ = service.request(
        "POST", "/os-server-external-events",
        {"events": [{"name": "volume-extended", "server_uuid": server_id,
                     "tag": root}]}, microversion="2.51")
    assert status == 200, body
    finished = []
    deadline = time.monotonic() + WAIT
    while not finished and time.monotonic() < deadline:
        time.sleep(0.2)
        finished = [e for e in _events(compute, server_id, "extend_volume")
                    if e["finish_time"]]
    assert [e["result"] for e in finished] == ["Success"], finished
    assert compute.delete_server(server_id)[0] == 204
    compute.wait_for_server_deleted(server_id, timeout=WAIT)
