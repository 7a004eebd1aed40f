"""Our responses against tempest's own response schemas, at every microversion.

tempest's service clients validate every response with these schemas
(``additionalProperties: false`` and required keys per microversion), so a
missing or extra key here is a failing tempest run there.  The schema for a
microversion is chosen as tempest's clients choose it
(``schema_versions_info``).
"""
import pytest
from tempest.lib.api_schema.response.compute.v2_1 import servers as servers21
from tempest.lib.api_schema.response.compute.v2_1 import versions as versions21
from tempest.lib.common import rest_client
from tempest.lib.services.compute import flavors_client
from tempest.lib.services.compute import servers_client
from tempest.lib.services.compute import services_client

from volattach.api import microversions
from tests.unit.api import fakes
from tests.unit.api.conftest import ADMIN
from tests.unit.api.conftest import USER

# tempest has response schemas up to 2.100 (it cannot read 2.101's attach)
VERSIONS = [v for v, _note in microversions.VERSIONS
            if microversions.Version.parse(v) <= "2.100"]


def _key(text):
    return tuple(int(p) for p in text.split("."))


def tempest_schema(client_class, version):
    for item in client_class.schema_versions_info:
        low = _key(item["min"]) if item["min"] else (0, 0)
        high = _key(item["max"]) if item["max"] else (99, 99)
        if low <= _key(version) <= high:
            return item["schema"]
    raise AssertionError("no tempest schema for %s" % version)


class _Resp(dict):
    def __init__(self, result):
        super().__init__(result.headers)
        self.status = result.status_code


def check(schema, result):
    """tempest's own check (status code and body)."""
    body = result.json if result.text else None
    rest_client.RestClient.validate_response(schema, _Resp(result), body)


@pytest.fixture
def servers(facade):
    """An active server with a volume, an errored one, a volume-booted one."""
    active = facade.add_instance(display_name="active", key_name="key1",
                                 access_ip_v4="10.0.0.5",
                                 metadata={"role": "db"})
    facade.add_bdm(active, volume_id="5f0b4c9f-3c0e-4c9e-9d0b-2c3c1f0e8a11",
                   tag="data", delete_on_termination=True)
    facade.add_bdm(active, id=2, volume_id="0b0f7e33-1d3b-4c49-a2c6-6a0c7a0b9a22",
                   attachment_id=None, device_name=None)
    errored = facade.add_instance(
        id=8, display_name="errored", vm_state="error", host=None, node=None,
        fault={"code": 500, "message": "NoValidHost", "details": "trace",
               "created": "2026-08-01T12:31:00Z"})
    from_volume = facade.add_instance(id=9, display_name="bfv", image_ref="",
                                      locked=True, locked_by="owner",
                                      locked_reason="maintenance",
                                      availability_zone="az1")
    facade.add_bdm(from_volume, id=3, boot_index=0, device_name="/dev/vda")
    return active, errored, from_volume


@pytest.mark.parametrize("token", [USER, ADMIN], ids=["user", "admin"])
@pytest.mark.parametrize("version", VERSIONS)
def test_server_show_and_lists(api, servers, version, token):
    schema = tempest_schema(servers_client.ServersClient, version)
    for server in servers:
        result = api.get("/v2.1/servers/%s" % server.uuid, version=version,
                         token=token)
        check(schema.get_server, result)
    check(schema.list_servers_detail,
          api.get("/v2.1/servers/detail", version=version, token=token))
    check(schema.list_servers,
          api.get("/v2.1/servers", version=version, token=token))


@pytest.mark.parametrize("version", VERSIONS)
def test_server_list_pages_have_valid_links(api, servers, version):
    schema = tempest_schema(servers_client.ServersClient, version)
    result = api.get("/v2.1/servers/detail", version=version, params="limit=2")
    check(schema.list_servers_detail, result)
    assert len(result.json["servers"]) == 2
    assert result.json["servers_links"][0]["rel"] == "next"


@pytest.mark.parametrize("version", VERSIONS)
def test_volume_attachments(api, servers, version):
    schema = tempest_schema(servers_client.ServersClient, version)
    active = servers[0]
    url = "/v2.1/servers/%s/os-volume_attachments" % active.uuid
    check(schema.list_volume_attachments, api.get(url, version=version))
    check(schema.show_volume_attachment,
          api.get(url + "/5f0b4c9f-3c0e-4c9e-9d0b-2c3c1f0e8a11",
                  version=version))
    attach = {"volumeAttachment": {"volumeId":
                                   "9a4f7c11-7d8e-4e1c-9a8e-1c7b3a9f0d33"}}
    check(schema.attach_volume, api.post(url, attach, version=version))
    check(servers21.detach_volume,
          api.delete(url + "/5f0b4c9f-3c0e-4c9e-9d0b-2c3c1f0e8a11",
                     version=version))


@pytest.mark.parametrize("token", [USER, ADMIN], ids=["user", "admin"])
@pytest.mark.parametrize("version", VERSIONS)
def test_instance_actions(api, facade, servers, version, token):
    schema = tempest_schema(servers_client.ServersClient, version)
    active = servers[0]
    facade.actions[active.uuid] = [
        (fakes.make_action(active, "req-1", "create", id=1), []),
        (fakes.make_action(active, "req-2", "attach_volume", id=2,
                           message="Error"),
         [fakes.make_event(), fakes.make_event(id=2, result="Success",
                                                traceback=None,
                                                details=None)]),
    ]
    url = "/v2.1/servers/%s/os-instance-actions" % active.uuid
    check(schema.list_instance_actions, api.get(url, version=version,
                                                token=token))
    check(schema.show_instance_action, api.get(url + "/req-2",
                                               version=version, token=token))


def test_create_server_response(api):
    result = api.post("/v2.1/servers", {"server": {
        "name": "vm", "imageRef": fakes.IMAGE, "flavorRef": "1"}})
    check(servers21.create_server_with_admin_pass, result)


@pytest.mark.parametrize("version", VERSIONS)
def test_flavors(api, version):
    schema = tempest_schema(flavors_client.FlavorsClient, version)
    check(schema.list_flavors, api.get("/v2.1/flavors", version=version))
    check(schema.list_flavors_details,
          api.get("/v2.1/flavors/detail", version=version))
    check(schema.create_update_get_flavor_details,
          api.get("/v2.1/flavors/2", version=version))


@pytest.mark.parametrize("version", VERSIONS)
def test_services(api, version):
    schema = tempest_schema(services_client.ServicesClient, version)
    check(schema.list_services,
          api.get("/v2.1/os-services", version=version, token=ADMIN))


def test_versions(api):
    check(versions21.list_versions, api.get("/", token=None))
    check(versions21.get_one_version, api.get("/v2.1/", token=None))
