"""The volume service's body cap (413 overLimit) and nesting bound (400)."""
import pytest

from tests.functional.volume.volume_testlib import ADMIN

CAP = 114688


def test_body_over_the_cap_is_413_overlimit(api):
    r = api.post("/volumes", {"volume": {"size": 1, "name": "n" * CAP}},
                 token=ADMIN)
    assert r.status_code == 413
    assert r.json == {"overLimit": {
        "code": 413,
        "message": "Request is too large: the body limit is 114688 bytes "
                   "([oslo_middleware] max_request_body_size)."}}
    assert r.headers["x-openstack-request-id"].startswith("req-")
    assert api.get("/volumes", token=ADMIN).json["volumes"] == []


@pytest.mark.parametrize("body", [
    "[" * (CAP // 2 - 1) + "]" * (CAP // 2 - 1),
    '{"volume": ' * 9000 + "1" + "}" * 9000,
])
def test_deep_nesting_is_400_not_500(api, body):
    r = api.client.simulate_post(
        "/v3/%s/volumes" % ADMIN.split(":")[1], body=body, headers={
            "X-Auth-Token": ADMIN, "Content-Type": "application/json"})
    assert r.status_code == 400, r.text[:200]
    assert r.json == {"badRequest": {"code": 400,
                                     "message": "Malformed request body"}}


def test_body_under_the_cap_still_reaches_the_handler(api):
    r = api.post("/volumes", {"volume": {"size": 1, "name": "n" * 200}},
                 token=ADMIN)
    assert r.status_code == 202, r.text
