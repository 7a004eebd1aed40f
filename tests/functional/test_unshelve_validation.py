"""Unshelve of an offloaded server checks its destination as Nova does: an
availability zone that is not one (``nova:host`` included) and a host that
is no compute are 400, and the server stays SHELVED_OFFLOADED."""
from tests.functional.test_attach_detach import _new_server

URL = "/servers/%s/action"


def _offloaded_server(api):
    server_id = _new_server(api, name="unshelve-checks")
    status, body, _ = api.request("POST", URL % server_id, {"shelve": None},
                                  microversion="2.37")
    assert status == 202, body
    api.wait_for_server_status(server_id, "SHELVED_OFFLOADED", timeout=30)
    return server_id


def _assert_still_offloaded(api, server_id):
    status, body, _ = api.request("GET", "/servers/%s" % server_id)
    assert status == 200, body
    assert body["server"]["status"] == "SHELVED_OFFLOADED"
    assert body["server"]["OS-EXT-STS:task_state"] is None


def test_unshelve_to_bad_availability_zone_is_400(api):
    server_id = _offloaded_server(api)
    for zone in ("nova:compute2", "no-such-zone"):
        status, body, _ = api.request(
            "POST", URL % server_id, {"unshelve": {"availability_zone": zone}},
            microversion="2.77")
        assert status == 400, (zone, body)
        assert "availability zone" in body["badRequest"]["message"]
        _assert_still_offloaded(api, server_id)
    # the real zone is accepted
    status, body, _ = api.request(
        "POST", URL % server_id, {"unshelve": {"availability_zone": "nova"}},
        microversion="2.77")
    assert status == 202, body
    api.wait_for_server_status(server_id, "ACTIVE")


def test_admin_unshelve_to_unknown_host_is_400(api, admin_api):
    server_id = _offloaded_server(api)
    status, body, _ = admin_api.request(
        "POST", URL % server_id, {"unshelve": {"host": "nohost"}},
        microversion="2.91")
    assert status == 400, body
    assert "nohost" in body["badRequest"]["message"]
    _assert_still_offloaded(api, server_id)
