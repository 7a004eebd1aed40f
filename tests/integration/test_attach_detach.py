"""Attach and detach a volume through the real daemons, as tempest would.

The compute API (gunicorn), conductor, two computes and the volume service
run as separate processes over RabbitMQ and PostgreSQL (see conftest.py).
The volume's status is checked in the volume service at every step.
"""
import pytest

from tests.integration.client import ComputeClient, VolumeClient

pytestmark = pytest.mark.integration

# Server create with networks "none" needs 2.37; attach at 2.1 is the
# synchronous (200) form.
CREATE_MICROVERSION = "2.37"
ATTACH_MICROVERSION = "2.1"
WAIT = 60


@pytest.fixture
def compute(deployment):
    client = ComputeClient(deployment.api_url, microversion=CREATE_MICROVERSION)
    yield client
    client.close()


@pytest.fixture
def volumes(deployment):
    client = VolumeClient(deployment.volume_url)
    yield client
    client.close()


def _volume_attachments(volume):
    """The server ids the volume service lists as attached."""
    return sorted(a["server_id"] for a in volume.get("attachments") or [])


def test_attach_then_detach_volume(compute, volumes):
    server_id = volume_id = None
    try:
        # A volume in the volume service.
        status, body, _ = volumes.create_volume(size=1, name="v1")
        assert status == 202, (status, body)
        volume_id = body["volume"]["id"]
        volume = volumes.wait_for_volume_status(volume_id, "available", WAIT)
        assert _volume_attachments(volume) == []

        # A server.
        status, body, _ = compute.create_server(
            name="s1", networks="none", microversion=CREATE_MICROVERSION)
        assert status == 202, (status, body)
        server_id = body["server"]["id"]
        compute.wait_for_server_status(server_id, "ACTIVE", WAIT)
        _, body, _ = volumes.show_volume(volume_id)
        assert body["volume"]["status"] == "available"

        # Attach at 2.1: synchronous, 200 with the device.
        status, body, _ = compute.attach_volume(
            server_id, volume_id, microversion=ATTACH_MICROVERSION)
        assert status == 200, (status, body)
        attachment = body["volumeAttachment"]
        assert attachment["volumeId"] == volume_id
        assert attachment["serverId"] == server_id
        device = attachment["device"]
        assert device and device.startswith("/dev/"), attachment

        volume = volumes.wait_for_volume_status(volume_id, "in-use", WAIT)
        assert _volume_attachments(volume) == [server_id]
        assert volume["attachments"][0]["device"] == device

        status, body, _ = compute.list_volume_attachments(
            server_id, microversion=ATTACH_MICROVERSION)
        assert status == 200, (status, body)
        listed = body["volumeAttachments"]
        assert [(a["volumeId"], a["serverId"], a["device"]) for a in listed] \
            == [(volume_id, server_id, device)]

        status, body, _ = compute.show_volume_attachment(
            server_id, volume_id, microversion=ATTACH_MICROVERSION)
        assert status == 200, (status, body)
        assert body["volumeAttachment"]["device"] == device

        # Detach: 202, the volume comes back available with no attachment.
        status, body, _ = compute.detach_volume(
            server_id, volume_id, microversion=ATTACH_MICROVERSION)
        assert status == 202, (status, body)
        volume = volumes.wait_for_volume_status(volume_id, "available", WAIT)
        assert _volume_attachments(volume) == []
        compute.wait_for_volume_attachment_gone(server_id, volume_id, WAIT)
        status, body, _ = compute.show_volume_attachment(
            server_id, volume_id, microversion=ATTACH_MICROVERSION)
        assert status == 404, (status, body)

        # Delete the server: 204, then 404; the volume is untouched.
        status, body, _ = compute.delete_server(server_id)
        assert status == 204, (status, body)
        compute.wait_for_server_deleted(server_id, WAIT)
        server_id = None
        _, body, _ = volumes.show_volume(volume_id)
        assert body["volume"]["status"] == "available"
        assert _volume_attachments(body["volume"]) == []
    finally:
        # Leave nothing behind for the next test of the session.
        if server_id is not None:
            compute.delete_server(server_id)
        if volume_id is not None:
            volumes.delete_volume(volume_id)
