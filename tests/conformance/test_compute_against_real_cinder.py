"""The compute side end to end against a real Cinder 29.0.0.

volattach-all's roles (compute API, conductor, computes) run in this process
with ``[all] run_volume_service = False`` and ``[cinder] endpoint`` pointed
at the real Cinder of ``tests/conformance/conftest.py``; the test drives the
compute API over HTTP as tempest does and checks every state in real
Cinder: create a server, attach (2.1: 200 with the device), the volume
in-use with one completed attachment for the server, list, detach, the
volume available with no attachment left, delete the server.

Real Cinder's noauth takes everything after the token's first colon as the
project, so the Cinder client sends ``<user>:<project>`` without roles
(``[cinder] noauth_include_roles = False``); projects are hex, as Cinder's
URL pattern wants.
"""
import pytest

from tests import utils
from tests.conformance import real_cinder as real_cinder_mod
from tests.integration import client as clients

pytestmark = pytest.mark.conformance

PROJECT_ID = real_cinder_mod.PROJECT_ID


@pytest.fixture(scope="module")
def deployment(real_cinder, tmp_path_factory):
    """AllInOne without its volume service, its Cinder being real Cinder."""
    from oslo_config import cfg
    from oslo_messaging import transport as messaging_transport

    from volattach.db import engine as db_engine
    from volattach import conf as volattach_conf
    from volattach.cmd.all import AllInOne
    from volattach.conf import CONF

    state_path = tmp_path_factory.mktemp("volattach-state")
    CONF([], project="volattach", default_config_files=[])
    try:
        CONF.transport_url
    except cfg.NoSuchOptError:
        CONF.register_opts(messaging_transport._transport_opts)
    settings = {
        # In memory, explicitly: on a shared RabbitMQ other volattach
        # processes would answer this deployment's RPC calls.
        (None, "transport_url"): volattach_conf.MEMORY_TRANSPORT_URL,
        (None, "state_path"): str(state_path),
        (None, "report_interval"): 1,
        ("database", "connection"):
            "sqlite:///%s/volattach.sqlite" % state_path,
        ("api", "port"): utils.free_port(),
        ("all", "run_volume_service"): False,
        ("cinder", "endpoint"): real_cinder + "/v3",
        ("cinder", "noauth_include_roles"): False,
        ("cinder", "retry_seconds"): 5.0,
    }
    for (group, name), value in settings.items():
        CONF.set_override(name, value, group=group)
    db_engine.dispose_all()
    running = AllInOne(CONF).start()
    running.api_url = "http://127.0.0.1:%d" % CONF.api.port
    try:
        yield running
    finally:
        running.stop()
        db_engine.dispose_all()
        for group, name in settings:
            CONF.clear_override(name, group=group)


@pytest.fixture
def api(deployment):
    return clients.ComputeClient(deployment.api_url, "alice:%s" % PROJECT_ID)


@pytest.fixture
def cinder(real_cinder):
    return clients.VolumeClient(real_cinder, real_cinder_mod.TOKEN)


def _cinder_attachments(cinder, volume_id):
    status, body, _ = cinder.list_attachments(volume_id=volume_id)
    assert status == 200, body
    return body["attachments"]


@pytest.mark.timeout(900)  # may install real Cinder first (30-60 s)
def test_attach_list_detach_against_real_cinder(api, cinder):
    status, body, _ = cinder.create_volume(size=1, name="compute-e2e")
    assert status == 202, body
    volume_id = body["volume"]["id"]
    cinder.wait_for_volume_status(volume_id, "available")

    status, body, _ = api.create_server(name="e2e", networks="none",
                                        microversion="2.37")
    assert status == 202, body
    server_id = body["server"]["id"]
    api.wait_for_server_status(server_id, "ACTIVE")
    try:
        status, body, _ = api.attach_volume(server_id, volume_id,
                                            microversion="2.1")
        assert status == 200, body
        device = body["volumeAttachment"]["device"]
        assert device == "/dev/vdb", body
        assert body["volumeAttachment"]["volumeId"] == volume_id

        # Real Cinder: in-use, one completed attachment for this server.
        volume = cinder.wait_for_volume_status(volume_id, "in-use")
        assert [(a["server_id"], a["device"])
                for a in volume["attachments"]] == [(server_id, device)]
        [attachment] = _cinder_attachments(cinder, volume_id)
        assert attachment["instance"] == server_id
        assert attachment["status"] == "attached"

        status, body, _ = api.list_volume_attachments(server_id)
        assert status == 200, body
        assert [(a["volumeId"], a["device"])
                for a in body["volumeAttachments"]] == [(volume_id, device)]

        _detach(api, cinder, server_id, volume_id)
    finally:
        _delete_server(api, server_id)
    # Nothing left in real Cinder: the volume deletes.
    _delete_volume(cinder, volume_id)


@pytest.mark.timeout(900)
def test_read_only_attach_against_real_cinder(api, cinder):
    """2.105 ``attach_mode: "ro"`` (asynchronous attach, 202): the conductor
    creates the attachment with mode ro (Cinder 3.54) and real Cinder's
    attachment says ``attach_mode: "ro"``; our list at 2.105 too."""
    status, body, _ = cinder.create_volume(size=1, name="compute-ro")
    assert status == 202, body
    volume_id = body["volume"]["id"]
    cinder.wait_for_volume_status(volume_id, "available")

    status, body, _ = api.create_server(name="ro", networks="none",
                                        microversion="2.37")
    assert status == 202, body
    server_id = body["server"]["id"]
    api.wait_for_server_status(server_id, "ACTIVE")
    try:
        status, body, _ = api.attach_volume(server_id, volume_id,
                                            microversion="2.105",
                                            attach_mode="ro")
        assert status == 202, body
        assert body is None, body
        volume = cinder.wait_for_volume_status(volume_id, "in-use")
        [cinder_att] = volume["attachments"]
        assert (cinder_att["server_id"], cinder_att["device"]) == (
            server_id, "/dev/vdb"), volume

        # Real Cinder: the attachment is read-only.
        status, body, _ = cinder.request(
            "GET", cinder._path("/attachments/%s"
                                % cinder_att["attachment_id"]),
            microversion="3.54")
        assert status == 200, body
        attachment = body["attachment"]
        assert attachment["instance"] == server_id
        assert attachment["status"] == "attached"
        assert attachment["attach_mode"] == "ro", attachment

        # Ours at 2.105: the same attachment, read-only.
        status, body, _ = api.list_volume_attachments(server_id,
                                                      microversion="2.105")
        assert status == 200, body
        assert [(a["volumeId"], a["attachment_id"], a["attach_mode"],
                 a["device"]) for a in body["volumeAttachments"]] == [
            (volume_id, attachment["id"], "ro", cinder_att["device"])]

        _detach(api, cinder, server_id, volume_id, microversion="2.105")
    finally:
        _delete_server(api, server_id)
    # Nothing left in real Cinder: the volume deletes.
    _delete_volume(cinder, volume_id)


def _detach(api, cinder, server_id, volume_id, microversion=None):
    """Detach; the volume is available again with no attachment in Cinder."""
    status, body, _ = api.detach_volume(server_id, volume_id,
                                        microversion=microversion)
    assert status == 202, body
    cinder.wait_for_volume_status(volume_id, "available")
    api.wait_for_volume_attachment_gone(server_id, volume_id)
    assert _cinder_attachments(cinder, volume_id) == []


def _delete_server(api, server_id):
    status, body, _ = api.delete_server(server_id)
    assert status == 204, body
    api.wait_for_server_deleted(server_id)


def _delete_volume(cinder, volume_id):
    status, body, _ = cinder.delete_volume(volume_id)
    assert status == 202, body
    cinder.wait_for_volume_deleted(volume_id)
