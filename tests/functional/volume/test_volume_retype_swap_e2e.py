"""A retype or migration of an attached volume, end to end over the whole
deployment: the volume service asks the compute API to swap, the conductor
swaps and calls os-migrate_volume_completion back, and the server ends on
the migrated data under the volume's own id, in the same attach mode."""
import time
import uuid

import pytest

from tests.functional.test_attach_detach import _new_server, _new_volume
from tests.integration import client as clients
from volattach.conf import CONF

MV = "2.105"


@pytest.fixture
def api(deployment):
    return clients.ComputeClient(deployment.api_url, "alice:demo")


@pytest.fixture
def volumes(deployment):
    return clients.VolumeClient(deployment.volume_url, "alice:demo")


@pytest.fixture
def admin_volumes(deployment):
    return clients.VolumeClient(deployment.volume_url, "admin:demo:admin")


@pytest.fixture(autouse=True)
def compute_endpoint(deployment):
    CONF.set_override("compute_endpoint", deployment.api_url + "/v2.1",
                      group="volume")
    yield
    CONF.clear_override("compute_endpoint", group="volume")


def _attachments(api, server_id):
    status, body, _ = api.list_volume_attachments(server_id, microversion=MV)
    assert status == 200, body
    return body["volumeAttachments"]


def _wait_server_names(api, server_id, volume_id, timeout=30):
    """The server's one attachment, once its record names ``volume_id``
    (the conductor saves the kept id right after the completion)."""
    deadline = time.monotonic() + timeout
    while True:
        attachments = _attachments(api, server_id)
        if [a["volumeId"] for a in attachments] == [volume_id]:
            return attachments[0]
        assert time.monotonic() < deadline, attachments
        time.sleep(0.2)


def _wait_migrated(admin_volumes, volume_id, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        status, body, _ = admin_volumes.show_volume(volume_id)
        assert status == 200, body
        volume = body["volume"]
        if volume["migration_status"] in ("success", "error"):
            return volume
        assert time.monotonic() < deadline, volume
        time.sleep(0.2)


def _attached(api, volumes, mode):
    server_id = _new_server(api, name="retype-%s" % mode)
    volume_id = _new_volume(volumes)
    status, body, _ = api.attach_volume(server_id, volume_id,
                                        microversion=MV, attach_mode=mode)
    assert status == 202, body
    volumes.wait_for_volume_status(volume_id, "in-use")
    (attachment,) = _attachments(api, server_id)
    return server_id, volume_id, attachment


def _volume_ids(admin_volumes):
    status, body, _ = admin_volumes.list_volumes(detail=False,
                                                 all_tenants=1)
    assert status == 200, body
    return {v["id"] for v in body["volumes"]}


def test_retype_on_demand_swaps_the_server(api, volumes, admin_volumes):
    status, body, _ = admin_volumes.create_volume_type(
        "gold-%s" % uuid.uuid4().hex[:6], {})
    assert status == 200, body
    gold = body["volume_type"]["name"]
    server_id, volume_id, before = _attached(api, volumes, "ro")
    listed_before = _volume_ids(admin_volumes)

    status, body, _ = volumes.request(
        "POST", volumes._path("/volumes/%s/action" % volume_id),
        {"os-retype": {"new_type": gold, "migration_policy": "on-demand"}})
    assert status == 202, body
    volume = _wait_migrated(admin_volumes, volume_id)
    assert volume["migration_status"] == "success"
    volumes.wait_for_volume_status(volume_id, "in-use")
    volume = admin_volumes.show_volume(volume_id)[1]["volume"]
    assert volume["volume_type"] == gold

    # the server names the volume's own id, on the swapped-in attachment,
    # same device and mode; the migration's target volume is gone
    after = _wait_server_names(api, server_id, volume_id)
    assert after["device"] == before["device"]
    assert after["attach_mode"] == "ro"
    assert [a["server_id"] for a in volume["attachments"]] == [server_id]
    assert _volume_ids(admin_volumes) == listed_before

    # and it detaches like any other
    status, body, _ = api.detach_volume(server_id, volume_id)
    assert status == 202, body
    volumes.wait_for_volume_status(volume_id, "available")


def test_migrate_attached_volume_swaps_the_server(api, volumes,
                                                  admin_volumes):
    server_id, volume_id, before = _attached(api, volumes, "rw")
    status, body, _ = admin_volumes.request(
        "POST", admin_volumes._path("/volumes/%s/action" % volume_id),
        {"os-migrate_volume": {"host": "elsewhere@fake#fake"}})
    assert status == 202, body
    assert _wait_migrated(admin_volumes, volume_id)["migration_status"] == \
        "success"
    volumes.wait_for_volume_status(volume_id, "in-use")
    volume = admin_volumes.show_volume(volume_id)[1]["volume"]
    assert volume["os-vol-host-attr:host"] == "elsewhere@fake#fake"
    after = _wait_server_names(api, server_id, volume_id)
    assert (after["volumeId"], after["attach_mode"], after["device"]) == (
        volume_id, "rw", before["device"])


def test_failed_swap_leaves_the_server_on_its_volume(api, volumes,
                                                     admin_volumes):
    status, body, _ = admin_volumes.create_volume_type(
        "silver-%s" % uuid.uuid4().hex[:6], {})
    assert status == 200, body
    silver = body["volume_type"]["name"]
    server_id, volume_id, before = _attached(api, volumes, "rw")
    type_before = admin_volumes.show_volume(volume_id)[1]["volume"][
        "volume_type"]
    listed_before = _volume_ids(admin_volumes)
    CONF.set_override("fail_operations", ["swap"], group="fake_driver")
    try:
        status, body, _ = volumes.request(
            "POST", volumes._path("/volumes/%s/action" % volume_id),
            {"os-retype": {"new_type": silver,
                           "migration_policy": "on-demand"}})
        assert status == 202, body
        volume = _wait_migrated(admin_volumes, volume_id)
    finally:
        CONF.clear_override("fail_operations", group="fake_driver")
    # the conductor rolled back and told the volume service: the target
    # is gone, the source keeps its type and its attachment
    assert volume["migration_status"] == "error"
    assert volume["volume_type"] == type_before != silver
    volumes.wait_for_volume_status(volume_id, "in-use")
    assert _wait_server_names(api, server_id, volume_id) == before
    assert _volume_ids(admin_volumes) == listed_before
