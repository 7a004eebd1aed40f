"""Request ids on every response; the exception -> status table; error bodies."""
import json
import re

import falcon.testing
import pytest

from volattach.api import faults
from volattach.api import middleware
from volattach.api import microversions
from tests.unit.api.conftest import USER
from volattach import exception

REQ_ID = re.compile(r"^req-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}"
                    r"-[0-9a-f]{12}$")


def _request_ids(result):
    first = result.headers.get("x-openstack-request-id")
    second = result.headers.get("x-compute-request-id")
    assert first == second, (first, second)
    assert first and REQ_ID.match(first), first
    return first


# -- request ids ----------------------------------------------------------------------

@pytest.mark.parametrize("path,token,status", [
    ("/", None, 200),
    ("/v2.1/flavors", USER, 200),
    ("/v2.1/flavors", None, 401),
    ("/v2.1/flavors/404", USER, 404),
    ("/v2.1/nowhere", USER, 404),
])
def test_every_response_has_a_request_id(api, path, token, status):
    result = api.get(path, token=token)
    assert result.status_code == status
    _request_ids(result)


def test_request_ids_differ_between_requests(api):
    assert _request_ids(api.get("/")) != _request_ids(api.get("/"))


def test_context_carries_the_request_id(api, facade):
    instance = facade.add_instance()
    result = api.get("/v2.1/servers/%s" % instance.uuid)
    assert result.status_code == 200
    (ctx, _server_id), _kw = facade.last_call("get")
    assert ctx.request_id == _request_ids(result)


def test_inbound_request_id_becomes_the_global_request_id(api, facade):
    instance = facade.add_instance()
    inbound = "req-12345678-1234-4234-8234-123456789abc"
    result = api.get("/v2.1/servers/%s" % instance.uuid,
                     headers={"X-OpenStack-Request-ID": inbound})
    (ctx, _id), _kw = facade.last_call("get")
    assert ctx.global_request_id == inbound
    assert _request_ids(result) != inbound
    api.get("/v2.1/servers/%s" % instance.uuid,
            headers={"X-OpenStack-Request-ID": "not-a-request-id"})
    (ctx, _id), _kw = facade.last_call("get")
    assert ctx.global_request_id is None


# -- the exception table over HTTP ------------------------------------------------------

@pytest.mark.parametrize("exc,status,name", [
    (exception.InstanceNotFound(instance_id="x"), 404, "itemNotFound"),
    (exception.VolumeNotFound(volume_id="v"), 404, "itemNotFound"),
    (exception.InvalidVolume(reason="bad"), 400, "badRequest"),
    (exception.MultiattachNotSupportedOldMicroversion(), 400, "badRequest"),
    (exception.PolicyNotAuthorized(action="x"), 403, "forbidden"),
    (exception.TooManyDiskDevices(maximum=2), 403, "forbidden"),
    (exception.InstanceIsLocked(instance_uuid="u"), 409, "conflictingRequest"),
    (exception.DevicePathInUse(path="/dev/vdb"), 409, "conflictingRequest"),
    (exception.ServiceUnavailableConflict(host="h"), 409,
     "conflictingRequest"),
    (exception.ConductorTooOld(method="attach_volume"), 503,
     "serviceUnavailable"),
    (exception.CinderConnectionFailed(reason="refused"), 503,
     "serviceUnavailable"),
    (exception.NoValidHost(reason=""), 503, "serviceUnavailable"),
    (exception.NotAuthenticated(), 401, "unauthorized"),
])
def test_domain_exceptions_map_to_statuses(api, facade, exc, status, name):
    instance = facade.add_instance()
    facade.errors["get"] = exc
    result = api.get("/v2.1/servers/%s" % instance.uuid, version="2.79")
    assert result.status_code == status
    assert result.json == {name: {"code": status,
                                  "message": exc.format_message()}}
    assert result.headers["content-type"] == "application/json"
    assert result.headers["x-openstack-nova-api-version"] == "2.79"


@pytest.mark.parametrize("exc", [
    exception.DBError(reason="password=secret in the SQL"),
    exception.CinderAPIError(code=500, reason="boom"),
    RuntimeError("internal detail"),
])
def test_unmapped_exceptions_are_500_without_their_message(api, facade, exc):
    instance = facade.add_instance()
    facade.errors["get"] = exc
    result = api.get("/v2.1/servers/%s" % instance.uuid)
    assert result.status_code == 500
    body = result.json["computeFault"]
    assert body["code"] == 500
    assert body["message"].startswith("Unexpected API Error.")
    assert type(exc).__name__ in body["message"]
    assert "secret" not in body["message"] and "detail" not in body["message"]
    _request_ids(result)


def test_status_table_order_is_most_specific_first():
    assert faults.status_for(exception.PolicyNotAuthorized(action="a")) == 403
    assert faults.status_for(exception.ValidationError(detail="d")) == 400
    assert faults.status_for(microversions.MicroversionNotAcceptable(
        req_ver="3.0", min_ver="2.1", max_ver="2.104")) == 406
    assert faults.status_for(exception.VirtDriverError(operation="o",
                                                       reason="r")) == 500


# -- falcon's own errors, bodies -----------------------------------------------------

def test_unknown_route_is_nova_404(api):
    result = api.get("/v2.1/os-hypervisors")
    assert result.status_code == 404
    assert result.json == {"itemNotFound": {
        "code": 404, "message": "The resource could not be found."}}


def test_wrong_method_is_405_bad_method(api):
    result = api.delete("/v2.1/flavors")
    assert result.status_code == 405
    assert result.json["badMethod"]["code"] == 405
    assert "GET" in result.headers["allow"]


def test_malformed_json_is_400(api, facade):
    instance = facade.add_instance()
    result = api.post("/v2.1/servers/%s/os-volume_attachments" % instance.uuid,
                      body="{not json")
    assert result.status_code == 400
    assert result.json["badRequest"]["message"] == "Malformed request body"


def test_non_json_content_type_is_415(api, facade):
    instance = facade.add_instance()
    result = api.post("/v2.1/servers/%s/os-volume_attachments" % instance.uuid,
                      body="volumeId=1",
                      headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert result.status_code == 415
    assert result.json == {"badMediaType": {
        "code": 415, "message": "Unsupported Content-Type"}}


def test_fault_wrapper_catches_what_escapes_the_inner_layers():
    def broken(environ, start_response):
        raise ValueError("from a middleware")

    app = middleware.RequestId(middleware.FaultWrapper(broken))
    result = falcon.testing.TestClient(app).simulate_get("/v2.1/flavors")
    assert result.status_code == 500
    body = json.loads(result.text)
    assert body["computeFault"]["code"] == 500
    assert "ValueError" in body["computeFault"]["message"]
    _request_ids(result)
