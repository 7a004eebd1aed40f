"""/servers: create validation per microversion, lists, show, delete, actions."""
import uuid

import pytest

from volattach.api.microversions import Version
from tests.unit.api import fakes
from tests.unit.api.conftest import ADMIN
from tests.unit.api.conftest import OTHER
from tests.unit.api.conftest import USER
from volattach import exception

VOLUME = "5f0b4c9f-3c0e-4c9e-9d0b-2c3c1f0e8a11"


def _create(api, version="2.1", token=USER, **server):
    server.setdefault("name", "vm")
    server.setdefault("flavorRef", "1")
    if "imageRef" not in server and "block_device_mapping_v2" not in server:
        server["imageRef"] = fakes.IMAGE
    return api.post("/v2.1/servers", {"server": server}, version=version,
                    token=token)


def _bdm(**kw):
    bdm = {"source_type": "volume", "destination_type": "volume",
           "uuid": VOLUME, "boot_index": 0}
    bdm.update(kw)
    return bdm


def _message(result, status=400):
    assert result.status_code == status, (result.status_code, result.text)
    return list(result.json.values())[0]["message"]


# -- create ------------------------------------------------------------------------

def test_create_answers_202_with_links_password_and_location(api, facade):
    result = _create(api)
    assert result.status_code == 202
    server = result.json["server"]
    assert set(server) == {"id", "links", "OS-DCF:diskConfig",
                           "security_groups", "adminPass"}
    assert server["OS-DCF:diskConfig"] == "MANUAL"
    assert server["security_groups"] == [{"name": "default"}]
    assert len(server["adminPass"]) >= 12
    assert result.headers["location"] == server["links"][0]["href"]
    assert server["links"][0]["href"].endswith("/v2.1/servers/" + server["id"])
    assert server["links"][1]["href"].endswith("/servers/" + server["id"])
    assert "/v2.1/" not in server["links"][1]["href"]
    _args, kwargs = facade.last_call("create")
    assert kwargs["name"] == "vm" and kwargs["flavor_ref"] == "1"
    assert kwargs["image_ref"] == fakes.IMAGE
    assert kwargs["block_device_mapping"] is None
    assert kwargs["microversion"] == "2.1"
    assert kwargs["supports_multiattach"] is False


def test_create_passes_options_through(api, facade):
    result = _create(api, "2.60", imageRef="", networks="none",
                     block_device_mapping_v2=[_bdm(delete_on_termination="1",
                                                   boot_index="0")],
                     min_count="1", max_count=2, metadata={"a": "b"},
                     key_name="k", availability_zone="az1",
                     accessIPv4="10.0.0.1", config_drive=True,
                     description="d", adminPass="secret",
                     flavorRef="http://h/v2.1/flavors/2")
    assert result.status_code == 202
    assert result.json["server"]["adminPass"] == "secret"
    _args, kwargs = facade.last_call("create")
    assert kwargs["block_device_mapping"] == [
        {"source_type": "volume", "destination_type": "volume",
         "uuid": VOLUME, "boot_index": 0, "delete_on_termination": True}]
    assert kwargs["image_ref"] == ""
    assert (kwargs["min_count"], kwargs["max_count"]) == (1, 2)
    assert kwargs["flavor_ref"] == "2"
    assert kwargs["metadata"] == {"a": "b"}
    assert kwargs["availability_zone"] == "az1"
    assert kwargs["access_ip_v4"] == "10.0.0.1"
    assert kwargs["config_drive"] is True
    assert kwargs["description"] == "d"
    assert kwargs["supports_multiattach"] is True


def test_description_is_the_name_below_2_19(api, facade):
    _create(api, "2.18")
    assert facade.last_call("create")[1]["description"] == "vm"
    assert "'description' was unexpected" in _message(
        _create(api, "2.18", description="d"))


def test_return_reservation_id(api):
    result = _create(api, return_reservation_id=True, max_count=2)
    assert result.status_code == 202
    assert result.json == {"reservation_id": "r-abcdef12"}


def test_image_ref_is_required_without_a_boot_volume(api, facade):
    assert _message(api.post("/v2.1/servers", {"server": {
        "name": "vm", "flavorRef": "1"}})) == "Missing imageRef attribute"
    assert _message(_create(api, imageRef="")) == "Missing imageRef attribute"
    assert "is not valid under any of the given schemas" in _message(
        _create(api, imageRef="not-a-uuid"))
    assert _message(_create(api, imageRef="", block_device_mapping_v2=[
        _bdm(boot_index=1)])) == ("Boot sequence for the instance and "
                                  "image/block device mapping combination "
                                  "is not valid.")
    assert not facade.called("create")


def test_legacy_block_device_mapping_becomes_v2(api, facade):
    result = api.post("/v2.1/servers", {"server": {
        "name": "vm", "flavorRef": "1", "block_device_mapping": [
            {"volume_id": VOLUME, "device_name": "vda",
             "delete_on_termination": "true"}]}})
    assert result.status_code == 202, result.text
    assert facade.last_call("create")[1]["block_device_mapping"] == [
        {"source_type": "volume", "destination_type": "volume",
         "uuid": VOLUME, "boot_index": 0, "device_name": "vda",
         "delete_on_termination": True}]
    assert "not allowed in the same request" in _message(api.post(
        "/v2.1/servers", {"server": {
            "name": "vm", "flavorRef": "1",
            "block_device_mapping": [{"volume_id": VOLUME}],
            "block_device_mapping_v2": [_bdm()]}}))


@pytest.mark.parametrize("body,field", [
    ({"name": "vm", "imageRef": fakes.IMAGE}, "'flavorRef' is a required"),
    ({"flavorRef": "1", "imageRef": fakes.IMAGE}, "'name' is a required"),
    ({"name": "vm", "flavorRef": "1", "imageRef": fakes.IMAGE, "foo": 1},
     "'foo' was unexpected"),
    ({"name": " vm", "flavorRef": "1", "imageRef": fakes.IMAGE},
     "An invalid 'name' value was provided"),
    ({"name": "vm", "flavorRef": "1", "imageRef": fakes.IMAGE,
      "min_count": 0}, "min_count"),
    ({"name": "vm", "flavorRef": "1", "imageRef": fakes.IMAGE,
      "accessIPv4": "300.1.1.1"}, "accessIPv4"),
])
def test_create_schema_errors(api, facade, body, field):
    result = api.post("/v2.1/servers", {"server": body})
    assert field in _message(result)
    assert not facade.called("create")


def test_min_count_above_max_count_is_400(api):
    assert _message(_create(api, min_count=3, max_count=2)) == \
        "min_count must be <= max_count"


def test_networks_are_required_from_2_37(api):
    assert "'networks' is a required property" in _message(_create(api, "2.37"))
    assert _create(api, "2.37", networks="auto").status_code == 202
    assert _create(api, "2.36").status_code == 202
    assert _message(_create(api, "2.37", networks=[{"uuid": "x"}])) \
        .startswith("Invalid input for field/attribute networks.")


def test_network_list_checks_below_2_37(api):
    assert _message(_create(api, "2.1", networks=[{"uuid": "abc"}])) == \
        "Bad networks format: network uuid is not in proper format (abc)"
    port = str(uuid.uuid4())
    assert "cannot be used with port" in _message(
        _create(api, "2.1", networks=[{"port": port, "fixed_ip": "10.0.0.2"}]))
    assert _create(api, "2.1",
                   networks=[{"uuid": str(uuid.uuid4())}]).status_code == 202


@pytest.mark.parametrize("version,accepted", [
    ("2.31", False), ("2.32", True), ("2.33", False), ("2.41", False),
    ("2.42", True), ("2.100", True)])
def test_bdm_tag_follows_2_32_and_2_42(api, version, accepted):
    body = dict(block_device_mapping_v2=[_bdm(tag="root")])
    if Version.parse(version).matches("2.37"):
        body["networks"] = "none"
    result = _create(api, version, **body)
    if accepted:
        assert result.status_code == 202, result.text
    else:
        assert "'tag' was unexpected" in _message(result)


def test_bdm_volume_type_needs_2_67(api):
    body = dict(networks="none",
                block_device_mapping_v2=[_bdm(volume_type="fast")])
    assert "'volume_type' was unexpected" in _message(_create(api, "2.66",
                                                              **body))
    assert _create(api, "2.67", **body).status_code == 202


def test_bdm_items_refuse_unknown_fields(api):
    assert "'size' was unexpected" in _message(
        _create(api, block_device_mapping_v2=[_bdm(size=1)]))


def test_hostname_needs_2_90(api):
    body = dict(networks="none", hostname="web-1")
    assert "'hostname' was unexpected" in _message(_create(api, "2.89", **body))
    assert _create(api, "2.90", **body).status_code == 202


def test_flavor_not_found_is_400(api, facade):
    facade.errors["create"] = exception.FlavorNotFound(flavor_id="42")
    assert _message(_create(api, flavorRef="42")) == \
        "Flavor 42 could not be found."


@pytest.mark.parametrize("exc", [
    exception.VolumeNotFound(volume_id=VOLUME),
    exception.InvalidBDM(reason="Boot sequence is invalid"),
    exception.MultipleVolumeAttachNotAllowed(),
    exception.ImageRefInvalid(),
    exception.MultiattachNotSupportedOldMicroversion(),
])
def test_create_errors_named_in_the_body_are_400(api, facade, exc):
    facade.errors["create"] = exc
    assert _message(_create(api)) == exc.format_message()


def test_forced_host_needs_admin(api):
    assert _create(api, availability_zone="nova:compute1").status_code == 403
    assert _create(api, token=ADMIN,
                   availability_zone="nova:compute1").status_code == 202


# -- lists -------------------------------------------------------------------------

def test_list_shows_id_name_links(api, facade):
    mine = facade.add_instance(display_name="mine")
    facade.add_instance(project_id="p2")
    result = api.get("/v2.1/servers")
    assert result.json == {"servers": [{
        "id": mine.uuid, "name": "mine",
        "links": [{"rel": "self",
                   "href": "http://falconframework.org/v2.1/servers/" +
                           mine.uuid},
                  {"rel": "bookmark",
                   "href": "http://falconframework.org/servers/" +
                           mine.uuid}]}]}


def test_links_use_the_public_endpoint(conf, facade):
    from volattach.api import wsgi as api_wsgi
    from tests.unit.api.conftest import Api
    conf.set_override("public_endpoint", "https://cloud.example/compute/",
                      group="api")
    api = Api(api_wsgi.make_app(conf, compute_api=facade))
    mine = facade.add_instance()
    links = api.get("/v2.1/servers").json["servers"][0]["links"]
    assert links[0]["href"] == \
        "https://cloud.example/compute/v2.1/servers/" + mine.uuid
    assert links[1]["href"] == \
        "https://cloud.example/compute/servers/" + mine.uuid


def test_list_filters_reach_the_facade(api, facade):
    api.get("/v2.1/servers/detail", params="name=web&status=active&foo=1")
    (ctx, opts), kwargs = facade.last_call("get_all")
    assert opts == {"name": "web", "status": "ACTIVE"}
    assert kwargs == {"limit": 1000, "marker": None}


def test_invalid_status_is_400_from_2_38(api, facade):
    assert api.get("/v2.1/servers", params="status=bogus",
                   version="2.37").json == {"servers": []}
    assert _message(api.get("/v2.1/servers", params="status=bogus",
                            version="2.38")) == "Invalid status value"


def test_only_admins_list_deleted_servers(api):
    result = api.get("/v2.1/servers", params="status=DELETED")
    assert result.status_code == 403
    assert result.json["forbidden"]["message"] == \
        "Only administrators may list deleted instances"
    assert api.get("/v2.1/servers", params="status=DELETED",
                   token=ADMIN).status_code == 200


def test_unknown_list_parameters_are_400_from_2_75(api):
    assert api.get("/v2.1/servers", params="foo=1",
                   version="2.74").status_code == 200
    # the same words as Nova (its schema keeps a '^_' pattern property)
    assert _message(api.get("/v2.1/servers", params="foo=1",
                            version="2.75")) == \
        "'foo' does not match any of the regexes: '^_'"


def test_all_tenants_is_admin_only(api, facade):
    facade.add_instance(project_id="p1")
    facade.add_instance(project_id="p2")
    assert api.get("/v2.1/servers", params="all_tenants=1").status_code == 403
    result = api.get("/v2.1/servers", params="all_tenants", token=ADMIN)
    assert len(result.json["servers"]) == 2
    assert facade.last_call("get_all")[0][1]["all_tenants"] is True


def test_admin_joined_table_filters_are_400(api):
    assert _message(api.get("/v2.1/servers", params="metadata=x",
                            token=ADMIN)) == "Invalid filter field: metadata."


def test_unknown_marker_is_400(api):
    marker = str(uuid.uuid4())
    assert _message(api.get("/v2.1/servers", params="marker=" + marker)) == \
        "marker [%s] not found" % marker


def test_limit_produces_a_next_link(api, facade):
    servers = [facade.add_instance(id=i) for i in range(3)]
    result = api.get("/v2.1/servers", params="limit=2")
    assert [s["id"] for s in result.json["servers"]] == \
        [s.uuid for s in servers[:2]]
    [link] = result.json["servers_links"]
    assert link["rel"] == "next"
    assert link["href"].endswith("/v2.1/servers?limit=2&marker=" +
                                 servers[1].uuid)


# -- show / detail keys --------------------------------------------------------------

def test_show_details(api, facade):
    server = facade.add_instance(vm_state="active", task_state=None)
    facade.add_bdm(server, volume_id=VOLUME, delete_on_termination=True)
    body = api.get("/v2.1/servers/%s" % server.uuid,
                   version="2.100").json["server"]
    assert body["status"] == "ACTIVE" and body["progress"] == 0
    assert body["os-extended-volumes:volumes_attached"] == [
        {"id": VOLUME, "delete_on_termination": True}]
    assert body["flavor"] == {"vcpus": 1, "ram": 512, "disk": 1,
                              "ephemeral": 0, "swap": 0,
                              "original_name": "m1.tiny", "extra_specs": {}}
    assert body["image"]["id"] == fakes.IMAGE
    assert body["image"]["properties"] == {}
    assert body["created"] == "2026-08-01T12:30:45Z"
    assert body["OS-SRV-USG:launched_at"] == "2026-08-01T12:30:45.000000"
    assert len(body["hostId"]) == 56
    assert body["server_groups"] == [] and body["tags"] == []
    assert body["scheduler_hints"] == {}
    assert body["OS-EXT-SRV-ATTR:hostname"] == "vm1"
    assert "OS-EXT-SRV-ATTR:host" not in body
    assert "host_status" not in body


def test_admin_sees_extended_attributes_and_host_status(api, facade):
    server = facade.add_instance()
    body = api.get("/v2.1/servers/%s" % server.uuid, token=ADMIN,
                   version="2.16").json["server"]
    assert body["OS-EXT-SRV-ATTR:host"] == "compute1"
    assert body["OS-EXT-SRV-ATTR:instance_name"] == "instance-00000007"
    assert body["host_status"] == "UP"
    facade.services[0] = (facade.services[0][0], False)
    body = api.get("/v2.1/servers/%s" % server.uuid, token=ADMIN,
                   version="2.16").json["server"]
    assert body["host_status"] == "UNKNOWN"


@pytest.mark.parametrize("vm_state,task_state,status", [
    ("building", "scheduling", "BUILD"), ("active", None, "ACTIVE"),
    ("stopped", None, "SHUTOFF"), ("paused", None, "PAUSED"),
    ("error", None, "ERROR"), ("shelved", None, "SHELVED"),
    ("shelved_offloaded", None, "SHELVED_OFFLOADED"),
    ("active", "rebooting", "REBOOT"), ("deleted", None, "DELETED")])
def test_status_map(api, facade, vm_state, task_state, status):
    server = facade.add_instance(vm_state=vm_state, task_state=task_state)
    body = api.get("/v2.1/servers/%s" % server.uuid).json["server"]
    assert body["status"] == status


def test_error_server_shows_its_fault(api, facade):
    server = facade.add_instance(vm_state="error", fault={
        "code": 500, "message": "No valid host", "details": "Traceback",
        "created": "2026-08-01T12:31:00Z"})
    body = api.get("/v2.1/servers/%s" % server.uuid).json["server"]
    assert body["fault"] == {"code": 500, "message": "No valid host",
                             "created": "2026-08-01T12:31:00Z"}
    assert "progress" not in body
    body = api.get("/v2.1/servers/%s" % server.uuid,
                   token=ADMIN).json["server"]
    assert body["fault"]["details"] == "Traceback"


def test_volume_booted_server_has_an_empty_image(api, facade):
    server = facade.add_instance(image_ref="")
    assert api.get("/v2.1/servers/%s" % server.uuid).json["server"][
        "image"] == ""


def test_server_groups_only_on_show(api, facade):
    server = facade.add_instance()
    assert "server_groups" in api.get("/v2.1/servers/%s" % server.uuid,
                                      version="2.71").json["server"]
    assert "server_groups" not in api.get("/v2.1/servers/detail",
                                          version="2.71").json["servers"][0]


# -- delete, actions ---------------------------------------------------------------------

def test_delete_is_204(api, facade):
    server = facade.add_instance()
    result = api.delete("/v2.1/servers/%s" % server.uuid)
    assert result.status_code == 204 and result.text == ""
    assert facade.last_call("delete")[0][1] is server


def test_delete_of_another_projects_server_is_404(api, facade):
    server = facade.add_instance()
    result = api.delete("/v2.1/servers/%s" % server.uuid, token=OTHER)
    assert result.status_code == 404
    assert result.json["itemNotFound"]["message"] == \
        "Instance could not be found"
    assert not facade.called("delete")


@pytest.mark.parametrize("body,method", [
    ({"os-stop": None}, "stop"), ({"os-start": None}, "start"),
    ({"pause": None}, "pause"), ({"unpause": None}, "unpause"),
    ({"lock": None}, "lock"), ({"unlock": None}, "unlock"),
    ({"shelve": None}, "shelve"), ({"unshelve": None}, "unshelve")])
def test_actions_answer_202(api, facade, body, method):
    server = facade.add_instance()
    result = api.post("/v2.1/servers/%s/action" % server.uuid, body)
    assert result.status_code == 202 and result.text == ""
    assert facade.last_call(method)[0][1] is server


def test_shelve_offload_is_admin_only(api, facade):
    server = facade.add_instance()
    url = "/v2.1/servers/%s/action" % server.uuid
    assert api.post(url, {"shelveOffload": None}).status_code == 403
    assert api.post(url, {"shelveOffload": None},
                    token=ADMIN).status_code == 202


def test_lock_reason_from_2_73(api, facade):
    server = facade.add_instance()
    url = "/v2.1/servers/%s/action" % server.uuid
    body = {"lock": {"locked_reason": "maintenance"}}
    assert api.post(url, body, version="2.73").status_code == 202
    assert facade.last_call("lock")[1] == {"reason": "maintenance"}
    assert api.post(url, {"lock": None}, version="2.73").status_code == 202
    assert facade.last_call("lock")[1] == {"reason": None}
    assert api.post(url, {"lock": {"locked_reason": ""}},
                    version="2.73").status_code == 400


def test_unlock_of_an_admin_lock_needs_admin(api, facade):
    server = facade.add_instance(locked=True, locked_by="admin")
    url = "/v2.1/servers/%s/action" % server.uuid
    assert api.post(url, {"unlock": None}).status_code == 403
    assert api.post(url, {"unlock": None}, token=ADMIN).status_code == 202


def test_unshelve_availability_zone_from_2_77(api, facade):
    server = facade.add_instance(vm_state="shelved_offloaded")
    url = "/v2.1/servers/%s/action" % server.uuid
    body = {"unshelve": {"availability_zone": "az2"}}
    assert api.post(url, body, version="2.76").status_code == 202
    assert facade.last_call("unshelve")[1] == {"availability_zone": None,
                                               "host": None}
    assert api.post(url, body, version="2.77").status_code == 202
    assert facade.last_call("unshelve")[1] == {"availability_zone": "az2",
                                               "host": None}
    assert api.post(url, {"unshelve": {"host": "c2"}},
                    version="2.91").status_code == 403
    assert api.post(url, {"unshelve": {"host": "c2"}}, version="2.91",
                    token=ADMIN).status_code == 202
    assert facade.last_call("unshelve")[1]["host"] == "c2"


def test_unknown_and_malformed_actions_are_400(api, facade):
    server = facade.add_instance()
    url = "/v2.1/servers/%s/action" % server.uuid
    assert _message(api.post(url, {"reboot2": None})) == \
        "There is no such action: reboot2"
    assert _message(api.post(url, {"pause": None, "unpause": None})) == \
        "Malformed request body"
    assert _message(api.post(url, [1])) == "Malformed request body"


def test_action_state_errors_are_409(api, facade):
    server = facade.add_instance()
    facade.errors["pause"] = exception.InstanceInvalidState(
        method="pause", instance_uuid=server.uuid, attr="vm_state",
        state="stopped")
    result = api.post("/v2.1/servers/%s/action" % server.uuid, {"pause": None})
    assert result.status_code == 409


def test_nova_action_not_served_names_its_server_first(api, facade):
    missing = "/v2.1/servers/3b3e8a2c-0000-4000-8000-000000000000/action"
    result = api.post(missing, {"createImage": None})
    assert result.status_code == 404
    assert "itemNotFound" in result.json
    # a name Nova does not know either: 400 whatever the server
    assert api.post(missing, {"reboot2": None}).status_code == 400
    server = facade.add_instance()
    url = "/v2.1/servers/%s/action" % server.uuid
    assert _message(api.post(url, {"createImage": None})) == \
        "There is no such action: createImage"
