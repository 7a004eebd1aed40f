"""Request body cap, JSON nesting bound and string bounds of the compute API."""
import pytest

from tests.unit.api.conftest import Api
from tests.unit.api.conftest import make_conf
from volattach.api import wsgi as api_wsgi

VOLUME = "5f0b4c9f-3c0e-4c9e-9d0b-2c3c1f0e8a11"
CAP = 114688


@pytest.fixture
def server(facade):
    return facade.add_instance()


def _url(server):
    return "/v2.1/servers/%s/os-volume_attachments" % server.uuid


def _deepest_under_cap():
    depth = CAP // 2 - 1
    return "[" * depth + "]" * depth


def test_default_cap_is_novas(conf):
    assert conf.oslo_middleware.max_request_body_size == CAP


def test_body_over_the_cap_is_413_overlimit(api, server, facade):
    device = "/dev/vd" + "b" * CAP
    r = api.post(_url(server), {"volumeAttachment": {
        "volumeId": VOLUME, "device": device}}, version="2.1")
    assert r.status_code == 413
    assert r.json == {"overLimit": {
        "code": 413,
        "message": "Request is too large: the body limit is 114688 bytes "
                   "([oslo_middleware] max_request_body_size)."}}
    assert r.headers["x-openstack-request-id"].startswith("req-")
    assert not facade.called("attach_volume")


def test_a_body_at_the_cap_is_read(api, server, facade):
    # exactly the cap: passes the limit, then fails on the device pattern
    prefix = '{"volumeAttachment": {"volumeId": "%s", "device": "' % VOLUME
    suffix = '"}}'
    device = "x" * (CAP - len(prefix) - len(suffix))
    body = prefix + device + suffix
    assert len(body) == CAP
    r = api.post(_url(server), body, version="2.1")
    assert r.status_code == 400, r.text
    assert "badRequest" in r.json


def test_lower_cap_from_configuration(facade, server):
    conf = make_conf()
    conf.set_override("max_request_body_size", 100, group="oslo_middleware")
    api = Api(api_wsgi.make_app(conf, compute_api=facade))
    r = api.post(_url(server), {"volumeAttachment": {
        "volumeId": VOLUME, "device": "/dev/vdb", "pad": "x" * 100}},
        version="2.1")
    assert r.status_code == 413


@pytest.mark.parametrize("body", [
    _deepest_under_cap(),
    "{\"a\": " * 11000 + "1" + "}" * 11000,
    "[" * 101 + "]" * 101,
])
def test_deep_nesting_is_400_not_500(api, server, facade, body):
    assert len(body) <= CAP
    r = api.post(_url(server), body, version="2.1")
    assert r.status_code == 400, r.text[:200]
    assert r.json == {"badRequest": {"code": 400,
                                     "message": "Malformed request body"}}
    assert not facade.called("attach_volume")


def test_brackets_inside_strings_do_not_count(api, server):
    device = "/dev/vdb"
    r = api.post(_url(server), '{"volumeAttachment": {"volumeId": "%s", '
                 '"device": "%s", "x": "%s"}}' % (VOLUME, device, "[" * 500),
                 version="2.1")
    # refused by the schema (unknown field), not by the nesting bound
    assert r.status_code == 400
    assert "Additional properties" in r.json["badRequest"]["message"]


def test_long_device_name_is_400_and_not_stored(api, server, facade):
    device = "/dev/vd" + "b" * 100000
    r = api.post(_url(server), {"volumeAttachment": {
        "volumeId": VOLUME, "device": device}}, version="2.1")
    assert r.status_code == 400
    assert "is too long" in r.json["badRequest"]["message"]
    assert not facade.called("attach_volume")


def test_device_name_of_255_characters_is_accepted(api, server, facade):
    device = "/dev/vd" + "b" * 248
    r = api.post(_url(server), {"volumeAttachment": {
        "volumeId": VOLUME, "device": device}}, version="2.1")
    assert r.status_code == 200, r.text
