"""Flavors, os-services, os-instance-actions and the version documents."""
import pytest

from volattach.api import wsgi as api_wsgi
from tests.unit.api import fakes
from tests.unit.api.conftest import ADMIN
from tests.unit.api.conftest import OTHER
from tests.unit.api.conftest import USER
from tests.unit.api.conftest import Api

# -- flavors -----------------------------------------------------------------------


def test_flavor_list_and_description(api):
    result = api.get("/v2.1/flavors")
    assert [f["id"] for f in result.json["flavors"]] == ["1", "2"]
    assert set(result.json["flavors"][0]) == {"id", "name", "links"}
    result = api.get("/v2.1/flavors", version="2.55")
    assert set(result.json["flavors"][0]) == {"id", "name", "links",
                                              "description"}


@pytest.mark.parametrize("version,swap,extra", [
    ("2.1", "", {"OS-FLV-DISABLED:disabled", "rxtx_factor"}),
    ("2.61", "", {"OS-FLV-DISABLED:disabled", "rxtx_factor", "description",
                  "extra_specs"}),
    ("2.75", 0, {"OS-FLV-DISABLED:disabled", "rxtx_factor", "description",
                 "extra_specs"}),
    ("2.102", 0, {"description", "extra_specs"}),
])
def test_flavor_detail_per_microversion(api, version, swap, extra):
    [tiny, small] = api.get("/v2.1/flavors/detail",
                            version=version).json["flavors"]
    base = {"id", "name", "ram", "disk", "swap", "vcpus", "links",
            "OS-FLV-EXT-DATA:ephemeral", "os-flavor-access:is_public"}
    assert set(tiny) == base | extra
    assert tiny["swap"] == swap
    assert small["swap"] == 512
    assert api.get("/v2.1/flavors/1", version=version).json["flavor"] == tiny


def test_flavor_filters_and_paging(api, facade):
    facade.flavors.append(fakes.make_flavor("3", "private", is_public=False))
    facade.flavors.append(fakes.make_flavor("4", "off", disabled=True))
    ids = lambda r: [f["id"] for f in r.json["flavors"]]  # noqa: E731
    assert ids(api.get("/v2.1/flavors")) == ["1", "2"]
    assert ids(api.get("/v2.1/flavors", token=ADMIN,
                       params="is_public=none")) == ["1", "2", "3", "4"]
    assert ids(api.get("/v2.1/flavors", params="minRam=1024")) == ["2"]
    assert ids(api.get("/v2.1/flavors", params="sort_key=memory_mb&"
                                                "sort_dir=desc")) == ["2", "1"]
    result = api.get("/v2.1/flavors", params="limit=1")
    assert ids(result) == ["1"]
    assert result.json["flavors_links"][0]["href"].endswith(
        "/v2.1/flavors?limit=1&marker=1")
    assert ids(api.get("/v2.1/flavors", params="marker=1")) == ["2"]
    assert api.get("/v2.1/flavors", params="marker=9").status_code == 400
    assert api.get("/v2.1/flavors", params="sort_key=bogus").status_code == 400


def test_unknown_flavor_is_404(api):
    result = api.get("/v2.1/flavors/42")
    assert result.status_code == 404
    assert result.json["itemNotFound"]["message"] == \
        "Flavor 42 could not be found."


def test_flavor_query_strictness(api):
    assert api.get("/v2.1/flavors", params="x=1",
                   version="2.74").status_code == 200
    assert api.get("/v2.1/flavors", params="x=1",
                   version="2.75").status_code == 400
    assert api.get("/v2.1/flavors", params="name=m1.tiny",
                   version="2.101").status_code == 400
    assert [f["id"] for f in api.get("/v2.1/flavors", params="name=m1.tiny",
                                     version="2.102").json["flavors"]] == ["1"]
    assert api.get("/v2.1/flavors/1", params="x=1",
                   version="2.102").status_code == 400


# -- os-services -------------------------------------------------------------------

def test_services_view(api, facade):
    facade.services.append((fakes.make_service("volattach-api", "api1", id=5),
                            True))
    facade.services.append((fakes.make_service(
        "volattach-compute", "compute2", id=6, disabled=True,
        disabled_reason="maintenance", forced_down=True), False))
    services = api.get("/v2.1/os-services", token=ADMIN).json["services"]
    assert [s["binary"] for s in services] == [
        "volattach-compute", "volattach-conductor", "volattach-compute"]
    compute, conductor, down = services
    assert compute == {"id": 3, "binary": "volattach-compute",
                       "host": "compute1", "zone": "nova",
                       "status": "enabled", "state": "up",
                       "updated_at": "2026-08-01T12:30:45.000000",
                       "disabled_reason": None}
    assert conductor["zone"] == "internal"
    assert (down["status"], down["state"], down["disabled_reason"]) == \
        ("disabled", "down", "maintenance")
    services = api.get("/v2.1/os-services", token=ADMIN,
                       version="2.53").json["services"]
    assert services[0]["id"] == facade.services[0][0].uuid
    assert services[2]["forced_down"] is True


def test_services_filters_reach_the_facade(api, facade):
    api.get("/v2.1/os-services", token=ADMIN,
            params="binary=volattach-compute&host=compute1")
    assert facade.last_call("service_list")[1] == {
        "binary": "volattach-compute", "host": "compute1"}
    assert api.get("/v2.1/os-services", token=ADMIN, params="foo=1",
                   version="2.75").status_code == 400


# -- os-instance-actions -----------------------------------------------------------

@pytest.fixture
def acted(facade):
    server = facade.add_instance()
    older = fakes.make_action(server, "req-old", "create", id=1,
                              start_time=fakes.NOW.replace(hour=10),
                              updated_at=fakes.NOW.replace(hour=10))
    newer = fakes.make_action(server, "req-new", "attach_volume", id=2,
                              message="Error")
    facade.actions[server.uuid] = [(older, []), (newer, [fakes.make_event()])]
    return server


def _actions_url(server, request_id=None):
    url = "/v2.1/servers/%s/os-instance-actions" % server.uuid
    return url + "/" + request_id if request_id else url


def test_actions_are_listed_newest_first(api, acted):
    body = api.get(_actions_url(acted)).json
    assert [a["request_id"] for a in body["instanceActions"]] == \
        ["req-new", "req-old"]
    assert set(body["instanceActions"][0]) == {
        "action", "instance_uuid", "request_id", "user_id", "project_id",
        "start_time", "message"}
    body = api.get(_actions_url(acted), version="2.58").json
    assert "updated_at" in body["instanceActions"][0]


def test_actions_paging_from_2_58(api, acted):
    result = api.get(_actions_url(acted), version="2.58", params="limit=1")
    assert [a["request_id"] for a in result.json["instanceActions"]] == \
        ["req-new"]
    assert result.json["links"][0]["href"].endswith("marker=req-new")
    result = api.get(_actions_url(acted), version="2.58",
                     params="marker=req-new")
    assert [a["request_id"] for a in result.json["instanceActions"]] == \
        ["req-old"]
    result = api.get(_actions_url(acted), version="2.58", params="marker=zz")
    assert result.status_code == 400
    assert result.json["badRequest"]["message"] == \
        "Marker zz could not be found."
    result = api.get(_actions_url(acted), version="2.58",
                     params="changes-since=2026-08-01T11:00:00Z")
    assert [a["request_id"] for a in result.json["instanceActions"]] == \
        ["req-new"]
    assert api.get(_actions_url(acted), version="2.57",
                   params="limit=1").json["instanceActions"][1]


@pytest.mark.parametrize("version,token,keys", [
    ("2.50", USER, None),
    ("2.50", ADMIN, {"event", "start_time", "finish_time", "result",
                     "traceback"}),
    ("2.51", USER, {"event", "start_time", "finish_time", "result"}),
    ("2.62", USER, {"event", "start_time", "finish_time", "result", "hostId"}),
    ("2.62", ADMIN, {"event", "start_time", "finish_time", "result",
                     "traceback", "host", "hostId"}),
    ("2.84", USER, {"event", "start_time", "finish_time", "result", "hostId",
                    "details"}),
])
def test_event_visibility(api, acted, version, token, keys):
    body = api.get(_actions_url(acted, "req-new"), version=version,
                   token=token).json["instanceAction"]
    if keys is None:
        assert "events" not in body
    else:
        [event] = body["events"]
        assert set(event) == keys
        assert event["result"] == "Error"


def test_actions_of_another_projects_server_are_404(api, acted):
    assert api.get(_actions_url(acted), token=OTHER).status_code == 404
    result = api.get(_actions_url(acted, "req-nope"))
    assert result.status_code == 404
    assert result.json["itemNotFound"]["message"] == "Action req-nope not found"


# -- version documents -------------------------------------------------------------

def test_version_documents(api):
    root = api.get("/", token=None).json
    assert root == {"versions": [{
        "id": "v2.0", "status": "SUPPORTED", "version": "",
        "min_version": "", "updated": "2011-01-21T11:33:21Z",
        "links": [{"rel": "self",
                   "href": "http://falconframework.org/v2/"}]}, {
        "id": "v2.1", "status": "CURRENT", "version": "2.105",
        "min_version": "2.1", "updated": "2013-07-23T11:33:21Z",
        "links": [{"rel": "self",
                   "href": "http://falconframework.org/v2.1/"}]}]}
    v21 = api.get("/v2.1/", token=None).json["version"]
    assert v21["links"][0] == {"rel": "self",
                               "href": "http://falconframework.org/v2.1/"}
    assert v21["links"][1]["rel"] == "describedby"
    assert v21["media-types"] == [{
        "base": "application/json",
        "type": "application/vnd.openstack.compute+json;version=2.1"}]
    # Nova's legacy v2.0 entry: its document is reachable without a token
    v20 = api.get("/v2/", token=None).json["version"]
    assert (v20["id"], v20["status"], v20["version"]) == ("v2.0", "SUPPORTED",
                                                          "")
    assert v20["links"][0] == {"rel": "self",
                               "href": "http://falconframework.org/v2/"}
    assert v20["media-types"][0]["type"] == (
        "application/vnd.openstack.compute+json;version=2")


def test_version_documents_use_the_public_endpoint(conf, facade):
    conf.set_override("public_endpoint", "https://cloud.example/compute",
                      group="api")
    api = Api(api_wsgi.make_app(conf, compute_api=facade))
    assert api.get("/", token=None).json["versions"][1]["links"][0][
        "href"] == "https://cloud.example/compute/v2.1/"


def test_services_found_by_nova_binary_names(api, facade):
    facade.services.append((fakes.make_service("nova-compute", "compute9",
                                               id=7), True))
    facade.services.append((fakes.make_service("volattach-api", "api1",
                                               id=8), True))
    services = api.get("/v2.1/os-services", token=ADMIN,
                       params="binary=nova-compute").json["services"]
    # shown under the name asked for (tempest compares it)
    assert sorted((s["binary"], s["host"]) for s in services) == [
        ("nova-compute", "compute1"), ("nova-compute", "compute9")]
    services = api.get("/v2.1/os-services", token=ADMIN,
                       params="binary=nova-conductor&host=ctl1"
                       ).json["services"]
    assert [(s["binary"], s["host"]) for s in services] == [
        ("nova-conductor", "ctl1")]
    # by its own name, as registered
    services = api.get("/v2.1/os-services", token=ADMIN,
                       params="binary=volattach-compute").json["services"]
    assert [(s["binary"], s["host"]) for s in services] == [
        ("volattach-compute", "compute1")]
    assert api.get("/v2.1/os-services", token=ADMIN,
                   params="binary=nova-scheduler").json["services"] == []


def test_actions_of_a_deleted_server_from_2_21(api, facade, acted):
    facade.deleted_instances[acted.uuid] = facade.instances.pop(acted.uuid)
    assert api.get(_actions_url(acted), version="2.20").status_code == 404
    body = api.get(_actions_url(acted), version="2.21").json
    assert [a["request_id"] for a in body["instanceActions"]] == \
        ["req-new", "req-old"]
    result = api.get(_actions_url(acted, "req-old"), version="2.21")
    assert result.json["instanceAction"]["action"] == "create"
    assert facade.last_call("get")[1] == {"read_deleted": True}
