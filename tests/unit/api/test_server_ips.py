"""GET /servers/{id}/ips and /ips/{network}: Nova's os-server-ips."""
from tempest.lib.api_schema.response.compute.v2_1 import servers as schemas
from tempest.lib.common import rest_client

from tests.unit.api.conftest import ADMIN
from tests.unit.api.conftest import OTHER


class _Resp(dict):
    status = 200


def _validate(schema, result):
    rest_client.RestClient.validate_response(schema, _Resp(), result.json)


def test_ips_lists_no_addresses(api, facade):
    server = facade.add_instance()
    for prefix in ("/v2.1", "/v2.1/p1"):
        result = api.get("%s/servers/%s/ips" % (prefix, server.uuid))
        assert result.status_code == 200, result.text
        assert result.json == {"addresses": {}}
        _validate(schemas.list_addresses, result)


def test_ips_unknown_network_is_404(api, facade):
    server = facade.add_instance()
    result = api.get("/v2.1/servers/%s/ips/private" % server.uuid)
    assert result.status_code == 404
    assert result.json["itemNotFound"]["message"] == \
        "Instance is not a member of specified network"


def test_ips_unknown_server_is_404(api):
    result = api.get("/v2.1/servers/3b3e8a2c-0000-4000-8000-000000000000/ips")
    assert result.status_code == 404
    assert "itemNotFound" in result.json


def test_ips_of_another_project(api, facade):
    server = facade.add_instance(project_id="p1")
    assert api.get("/v2.1/servers/%s/ips" % server.uuid,
                   token=OTHER).status_code == 404
    assert api.get("/v2.1/servers/%s/ips" % server.uuid,
                   token=ADMIN).json == {"addresses": {}}
