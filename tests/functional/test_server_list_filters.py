"""Server list filters as tempest's test_list_server_filters uses them:
``name`` as a regular expression, ``flavor``, ``image`` (id or URL),
``changes-since`` / ``changes-before`` (2.66), ``limit=0``; bad values 400.
Each project gets its own servers (the alice:<project> token), so the
deployment's other servers never show."""
import datetime
import time
import uuid

import pytest

from tests.integration import client as clients

IMAGE = clients.DEFAULT_IMAGE


@pytest.fixture
def api(deployment):
    return clients.ComputeClient(deployment.api_url,
                                 "alice:filters-%s" % uuid.uuid4().hex[:8])


def _server(api, name, flavor="1"):
    status, body, _ = api.create_server(name=name, flavor_ref=flavor,
                                        microversion="2.37")
    assert status == 202, body
    api.wait_for_server_status(body["server"]["id"], "ACTIVE")
    return body["server"]["id"]


def _names(api, query, microversion="2.66", detail=False):
    path = "/servers/detail" if detail else "/servers"
    status, body, _ = api.request("GET", path + "?" + query,
                                  microversion=microversion)
    assert status == 200, (query, body)
    return sorted(s["name"] for s in body["servers"])


def _flavors(api):
    status, body, _ = api.request("GET", "/flavors")
    assert status == 200, body
    return [f["id"] for f in body["flavors"]]


def test_name_is_a_regular_expression(api):
    for name in ("alpha-one", "alpha-two", "beta-one"):
        _server(api, name)
    assert _names(api, "name=alpha") == ["alpha-one", "alpha-two"]
    assert _names(api, "name=^beta") == ["beta-one"]
    assert _names(api, "name=one$", detail=True) == ["alpha-one", "beta-one"]
    assert _names(api, "name=ph.-t") == ["alpha-two"]
    assert _names(api, "name=gamma") == []


def test_flavor_image_limit_zero_and_changes_since(api):
    flavors = _flavors(api)
    assert len(flavors) >= 2
    first = _server(api, "small", flavor=flavors[0])
    before_second = datetime.datetime.utcnow() - datetime.timedelta(seconds=1)
    time.sleep(1.1)
    after_first = datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")
    _server(api, "large", flavor=flavors[1])
    assert _names(api, "flavor=%s" % flavors[0]) == ["small"]
    assert _names(api, "flavor=%s" % flavors[1], detail=True) == ["large"]
    assert _names(api, "flavor=no-such-flavor") == []
    assert _names(api, "image=%s" % IMAGE) == ["large", "small"]
    assert _names(api, "image=http://glance/v2/images/%s" % IMAGE) == [
        "large", "small"]
    assert _names(api, "image=%s" % uuid.uuid4()) == []
    assert _names(api, "limit=0") == []
    assert _names(api, "limit=0", detail=True) == []
    assert _names(api, "changes-since=%s" % after_first) == ["large"]
    assert _names(api, "changes-before=%s" % after_first) == ["small"]
    assert _names(api, "changes-since=%s" % before_second.strftime(
        "%Y-%m-%dT%H:%M:%S")) == ["large", "small"]
    # a deleted server changed too: listed by changes-since
    status, body, _ = api.delete_server(first)
    assert status == 204, body
    deadline = time.monotonic() + 30
    while "small" not in _names(api, "changes-since=%s" % after_first):
        assert time.monotonic() < deadline
        time.sleep(0.3)


@pytest.mark.parametrize("query", [
    "changes-since=yesterday",
    "changes-before=2026-13-01T00:00:00Z",
    "changes-since=2026-11-02T00:00:00Z&changes-before=2026-11-01T00:00:00Z",
    "name=(unclosed",
])
def test_bad_filter_values_are_400(api, query):
    status, body, _ = api.request("GET", "/servers?" + query,
                                  microversion="2.66")
    assert status == 400, (query, body)
    assert body["badRequest"]["code"] == 400
