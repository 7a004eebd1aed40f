"""The unshelve of a server shelved on its host (SHELVED, not offloaded:
``[compute] shelved_offload_time = -1``) boots the guest there again, and
like a start it plugs the volumes from what the volume service answers
now (compute RPC 1.10), not from the record's copy: a storage address
that moved while the server was shelved is the one the guest uses.

In one process, as tests/functional/test_fresh_connection_info.py: the
volume service's backend is readdressed while it runs and the fake virt
driver shows what the compute plugged."""
from tests.functional.test_fresh_connection_info import (
    URL, _attached_server, _plugged, _portal, _readdressed, _record)

CONF_OVERRIDES = {("compute", "shelved_offload_time"): -1}


def _action(api, server_id, action, status):
    code, body, _ = api.request("POST", URL % server_id, {action: None},
                                microversion="2.37")
    assert code == 202, body
    api.wait_for_server_status(server_id, status, timeout=30)


def test_unshelve_on_its_host_connects_with_the_new_address(api, volumes,
                                                          deployment):
    server_id, volume_id = _attached_server(api, volumes, deployment)
    _action(api, server_id, "shelve", "SHELVED")
    original = _readdressed(deployment, "127.0.0.6:3260")
    try:
        assert _portal(_plugged(deployment, server_id, volume_id)) == original
        _action(api, server_id, "unshelve", "ACTIVE")
        assert _portal(_plugged(deployment, server_id, volume_id)) == \
            "127.0.0.6:3260"
        assert _portal(_record(server_id, volume_id).get_connection_info()) \
            == "127.0.0.6:3260"
        volume = volumes.wait_for_volume_status(volume_id, "in-use")
        assert [a["server_id"] for a in volume["attachments"]] == [server_id]
    finally:
        _readdressed(deployment, original)
    status, body, _ = api.detach_volume(server_id, volume_id)
    assert status == 202, body
    volumes.wait_for_volume_status(volume_id, "available")
