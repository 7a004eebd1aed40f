"""os-volume_attachments: schemas, views and facade calls per microversion."""
import uuid

import pytest

from tests.unit.api.conftest import ADMIN
from tests.unit.api.conftest import USER
from volattach import exception

VOLUME = "5f0b4c9f-3c0e-4c9e-9d0b-2c3c1f0e8a11"
NEW_VOLUME = "0b0f7e33-1d3b-4c49-a2c6-6a0c7a0b9a22"
# Cinder calls swap with the owner's project and a service role
SERVICE = "cinder:p1:member,service"


@pytest.fixture
def server(facade):
    return facade.add_instance()


def _url(server, volume_id=None):
    url = "/v2.1/servers/%s/os-volume_attachments" % server.uuid
    return url + "/" + volume_id if volume_id else url


def _attach(api, server, version, **attachment):
    attachment.setdefault("volumeId", VOLUME)
    return api.post(_url(server), {"volumeAttachment": attachment},
                    version=version)


def _message(result):
    assert result.status_code == 400, (result.status_code, result.text)
    return result.json["badRequest"]["message"]


# -- POST: validation --------------------------------------------------------------

def test_attach_requires_a_uuid_volume_id(api, server, facade):
    message = _message(_attach(api, server, "2.1", volumeId="x"))
    assert message == ("Invalid input for field/attribute volumeId. Value: x. "
                       "'x' is not a 'uuid'")
    assert not facade.called("attach_volume")


def test_attach_refuses_unknown_fields(api, server):
    message = _message(_attach(api, server, "2.79", size=1))
    assert message.startswith("Invalid input for field/attribute "
                              "volumeAttachment.")
    assert "Additional properties are not allowed ('size' was unexpected)" \
        in message
    message = _message(api.post(_url(server), {"volumeAttachment": {
        "volumeId": VOLUME}, "extra": 1}))
    assert message == \
        "Additional properties are not allowed ('extra' was unexpected)"


def test_attach_body_is_required(api, server):
    assert _message(api.post(_url(server))) == "None is not of type 'object'"
    assert "'volumeId' is a required property" in _message(
        api.post(_url(server), {"volumeAttachment": {}}))


@pytest.mark.parametrize("device", ["/dev/vdb", "/dev/sdc1", "/dev/xvdb",
                                    None])
def test_attach_accepts_nova_device_names(api, server, facade, device):
    assert _attach(api, server, "2.1", device=device).status_code == 200
    _args, kwargs = facade.last_call("attach_volume")
    assert kwargs["device"] == device


@pytest.mark.parametrize("device", ["vdb", "/dev/", "/dev/vd b", "/mnt/vdb",
                                    "/dev/VDB"])
def test_attach_refuses_bad_device_names(api, server, facade, device):
    message = _message(_attach(api, server, "2.1", device=device))
    assert message.startswith("Invalid input for field/attribute device.")
    assert "does not match" in message
    assert not facade.called("attach_volume")


def test_tag_is_refused_before_2_49(api, server, facade):
    assert "'tag' was unexpected" in _message(
        _attach(api, server, "2.48", tag="data"))
    assert _attach(api, server, "2.49", tag="data").status_code == 200
    assert facade.last_call("attach_volume")[1]["tag"] == "data"


@pytest.mark.parametrize("tag", ["", "a/b", "a,b", "x" * 61])
def test_bad_tags_are_refused(api, server, tag):
    assert _message(_attach(api, server, "2.49", tag=tag)).startswith(
        "Invalid input for field/attribute tag.")


def test_delete_on_termination_is_refused_before_2_79(api, server, facade):
    assert "'delete_on_termination' was unexpected" in _message(
        _attach(api, server, "2.78", delete_on_termination=True))
    result = _attach(api, server, "2.79", delete_on_termination="yes")
    assert result.status_code == 200
    assert facade.last_call("attach_volume")[1]["delete_on_termination"] is True
    assert result.json["volumeAttachment"]["delete_on_termination"] is True


# -- POST: sync (below 2.101) and async (2.101+) ---------------------------------------

@pytest.mark.parametrize("version,keys", [
    ("2.1", {"id", "serverId", "volumeId", "device"}),
    ("2.69", {"id", "serverId", "volumeId", "device"}),
    ("2.70", {"id", "serverId", "volumeId", "device", "tag"}),
    ("2.79", {"id", "serverId", "volumeId", "device", "tag",
              "delete_on_termination"}),
    ("2.89", {"id", "serverId", "volumeId", "device", "tag",
              "delete_on_termination"}),
    ("2.100", {"id", "serverId", "volumeId", "device", "tag",
               "delete_on_termination"}),
])
def test_sync_attach_answers_200_with_the_device(api, server, facade, version,
                                                 keys):
    result = _attach(api, server, version)
    assert result.status_code == 200
    body = result.json["volumeAttachment"]
    assert set(body) == keys
    assert body["id"] == body["volumeId"] == VOLUME
    assert body["serverId"] == server.uuid
    assert body["device"] == "/dev/vdb"
    _args, kwargs = facade.last_call("attach_volume")
    assert kwargs["wait"] is True


def test_sync_attach_shows_a_null_device_when_none_is_known(api, server,
                                                             facade):
    facade.attach_result = None
    body = _attach(api, server, "2.70").json["volumeAttachment"]
    assert body["device"] is None and body["tag"] is None


@pytest.mark.parametrize("version", ["2.101", "2.104", "latest"])
def test_async_attach_answers_202_without_body(api, server, facade, version):
    result = _attach(api, server, version, tag="t",
                     delete_on_termination=True)
    assert result.status_code == 202
    assert result.text == ""
    args, kwargs = facade.last_call("attach_volume")
    assert args[2] == VOLUME and args[1] is server
    assert kwargs == {"device": None, "tag": "t",
                      "delete_on_termination": True,
                      "supports_multiattach": True, "wait": False,
                      "attach_mode": "rw", "bdms": []}


@pytest.mark.parametrize("body,version,status", [
    ({"attach_mode": "ro"}, "2.105", 202),
    ({"attach_mode": "rw"}, "2.105", 202),
    ({"attach_mode": "ro"}, "2.104", 400),   # before the microversion
    ({"attach_mode": "rx"}, "2.105", 400),   # not ro/rw
    ({"attach_mode": None}, "2.105", 400),
])
def test_attach_mode_needs_2_105_and_ro_or_rw(api, server, facade, body, version,
                                             status):
    result = _attach(api, server, version, **body)
    assert result.status_code == status, result.text
    if status == 202:
        _, kwargs = facade.last_call("attach_volume")
        assert kwargs["attach_mode"] == body["attach_mode"]
    else:
        assert result.json["badRequest"]["code"] == 400


def test_multiattach_support_follows_2_60(api, server, facade):
    _attach(api, server, "2.59")
    assert facade.last_call("attach_volume")[1]["supports_multiattach"] is False
    _attach(api, server, "2.60")
    assert facade.last_call("attach_volume")[1]["supports_multiattach"] is True


@pytest.mark.parametrize("vm_state", ["shelved", "shelved_offloaded"])
def test_shelved_servers_refuse_attach_and_detach_below_2_20(api, facade,
                                                             vm_state):
    server = facade.add_instance(vm_state=vm_state)
    facade.add_bdm(server, volume_id=VOLUME)
    result = _attach(api, server, "2.19")
    assert result.status_code == 409
    assert result.json["conflictingRequest"]["message"] == (
        "Cannot 'attach_volume' instance %s while it is in vm_state %s"
        % (server.uuid, vm_state))
    result = api.delete(_url(server, VOLUME), version="2.19")
    assert result.status_code == 409
    assert not facade.called("attach_volume")
    assert not facade.called("detach_volume")
    assert _attach(api, server, "2.20").status_code == 200
    assert api.delete(_url(server, VOLUME), version="2.20").status_code == 202


@pytest.mark.parametrize("exc,status", [
    (exception.VolumeNotFound(volume_id=VOLUME), 404),
    (exception.InstanceIsLocked(instance_uuid="u"), 409),
    (exception.InstanceInvalidState(method="attach_volume", instance_uuid="u",
                                    attr="vm_state", state="error"), 409),
    (exception.MultiattachNotSupportedOldMicroversion(), 400),
    (exception.VolumeTaggedAttachToShelvedNotSupported(), 400),
    (exception.InvalidVolume(reason="already attached"), 400),
    (exception.DevicePathInUse(path="/dev/vdb"), 409),
    (exception.TooManyDiskDevices(maximum=3), 403),
    (exception.ConductorTooOld(method="attach_volume"), 503),
])
def test_attach_errors_from_the_facade(api, server, facade, exc, status):
    facade.errors["attach_volume"] = exc
    result = _attach(api, server, "2.101")
    assert result.status_code == status
    assert list(result.json.values())[0]["message"] == exc.format_message()


def test_attach_to_an_unknown_server_is_404(api, facade):
    result = api.post("/v2.1/servers/%s/os-volume_attachments" % uuid.uuid4(),
                      {"volumeAttachment": {"volumeId": VOLUME}})
    assert result.status_code == 404


# -- GET list and show ------------------------------------------------------------------

@pytest.mark.parametrize("version,keys", [
    ("2.1", {"id", "volumeId", "serverId", "device"}),
    ("2.70", {"id", "volumeId", "serverId", "device", "tag"}),
    ("2.79", {"id", "volumeId", "serverId", "device", "tag",
              "delete_on_termination"}),
    ("2.88", {"id", "volumeId", "serverId", "device", "tag",
              "delete_on_termination"}),
    ("2.89", {"volumeId", "serverId", "device", "tag",
              "delete_on_termination", "attachment_id", "bdm_uuid"}),
    ("2.104", {"volumeId", "serverId", "device", "tag",
               "delete_on_termination", "attachment_id", "bdm_uuid"}),
    ("2.105", {"volumeId", "serverId", "device", "tag",
               "delete_on_termination", "attachment_id", "bdm_uuid",
               "attach_mode"}),
])
def test_list_and_show_keys_per_microversion(api, server, facade, version,
                                             keys):
    bdm = facade.add_bdm(server, volume_id=VOLUME, tag="db",
                         delete_on_termination=True)
    listed = api.get(_url(server), version=version)
    assert listed.status_code == 200
    [item] = listed.json["volumeAttachments"]
    shown = api.get(_url(server, VOLUME), version=version)
    assert shown.status_code == 200
    assert shown.json["volumeAttachment"] == item
    assert set(item) == keys
    assert item["volumeId"] == VOLUME and item["serverId"] == server.uuid
    if "attachment_id" in keys:
        assert item["attachment_id"] == bdm.attachment_id
        assert item["bdm_uuid"] == bdm.uuid
    else:
        assert item["id"] == VOLUME
    if "tag" in keys:
        assert item["tag"] == "db"
    if "delete_on_termination" in keys:
        assert item["delete_on_termination"] is True


def test_device_is_left_out_when_unset(api, server, facade):
    facade.add_bdm(server, volume_id=VOLUME, device_name=None)
    [item] = api.get(_url(server), version="2.79").json["volumeAttachments"]
    assert "device" not in item


def test_in_progress_attachment_is_hidden_from_2_89(api, server, facade):
    facade.add_bdm(server, volume_id=VOLUME, attachment_id=None)
    done = facade.add_bdm(server, id=2, volume_id=NEW_VOLUME)
    old = api.get(_url(server), version="2.88").json["volumeAttachments"]
    assert {a["volumeId"] for a in old} == {VOLUME, NEW_VOLUME}
    new = api.get(_url(server), version="2.89").json["volumeAttachments"]
    assert [a["volumeId"] for a in new] == [done.volume_id]
    assert api.get(_url(server, VOLUME), version="2.88").status_code == 200
    result = api.get(_url(server, VOLUME), version="2.89")
    assert result.status_code == 404
    assert result.json["itemNotFound"]["message"] == \
        "Instance %s is not attached to volume %s" % (server.uuid, VOLUME)


def test_show_of_an_unattached_volume_is_404(api, server):
    result = api.get(_url(server, VOLUME))
    assert result.status_code == 404
    assert result.json["itemNotFound"]["message"] == \
        "Instance %s is not attached to volume %s" % (server.uuid, VOLUME)


def test_list_pages_with_limit_and_offset(api, server, facade):
    volumes = [str(uuid.uuid4()) for _ in range(4)]
    for index, volume_id in enumerate(volumes):
        facade.add_bdm(server, id=index + 1, volume_id=volume_id)
    result = api.get(_url(server), params="limit=2&offset=1")
    assert [a["volumeId"] for a in result.json["volumeAttachments"]] == \
        volumes[1:3]
    assert "limit" in _message(api.get(_url(server), params="limit=-1"))


def test_unknown_list_parameters_are_400_from_2_75(api, server, facade):
    facade.add_bdm(server, volume_id=VOLUME)
    assert api.get(_url(server), params="foo=1",
                   version="2.74").status_code == 200
    assert _message(api.get(_url(server), params="foo=1", version="2.75")) == \
        "Additional properties are not allowed ('foo' was unexpected)"


def test_unknown_show_parameters_are_400_from_2_102(api, server, facade):
    facade.add_bdm(server, volume_id=VOLUME)
    assert api.get(_url(server, VOLUME), params="foo=1",
                   version="2.101").status_code == 200
    assert api.get(_url(server, VOLUME), params="foo=1",
                   version="2.102").status_code == 400


# -- PUT: swap and update ---------------------------------------------------------------

def _put(api, server, version, token=USER, volume_id=VOLUME, **attachment):
    return api.put(_url(server, volume_id), {"volumeAttachment": attachment},
                   version=version, token=token)


def test_put_below_2_85_swaps_and_needs_admin_or_service(api, server, facade):
    facade.add_bdm(server, volume_id=VOLUME)
    result = _put(api, server, "2.84", volumeId=NEW_VOLUME)
    assert result.status_code == 403
    assert not facade.called("swap_volume")
    for token in (ADMIN, SERVICE):
        result = _put(api, server, "2.84", token=token, volumeId=NEW_VOLUME)
        assert result.status_code == 202 and result.text == ""
        args, _kw = facade.last_call("swap_volume")
        assert args[2:] == (VOLUME, NEW_VOLUME)


def test_put_delete_on_termination_needs_2_85(api, server, facade):
    facade.add_bdm(server, volume_id=VOLUME)
    assert "'delete_on_termination' was unexpected" in _message(
        _put(api, server, "2.84", token=ADMIN, volumeId=VOLUME,
             delete_on_termination=True))
    result = _put(api, server, "2.85", volumeId=VOLUME,
                  delete_on_termination=True)
    assert result.status_code == 202
    args, _kw = facade.last_call("update_volume_attachment")
    assert args[2:] == (VOLUME, True)
    assert not facade.called("swap_volume")


def test_put_2_85_refuses_changes_to_immutable_fields(api, server, facade):
    facade.add_bdm(server, volume_id=VOLUME, tag="a", device_name="/dev/vdb")
    assert _message(_put(api, server, "2.85", volumeId=VOLUME, tag="b")) == \
        "The tag property is not mutable"
    assert _message(_put(api, server, "2.85", volumeId=VOLUME,
                         device="/dev/vdc")) == \
        "The device property is not mutable"
    assert _put(api, server, "2.85", volumeId=VOLUME, tag="a",
                device="/dev/vdb", serverId=server.uuid,
                id=VOLUME).status_code == 202
    assert not facade.called("update_volume_attachment")


def test_put_2_85_with_another_volume_swaps(api, server, facade):
    facade.add_bdm(server, volume_id=VOLUME)
    assert _put(api, server, "2.85", volumeId=NEW_VOLUME).status_code == 403
    assert _put(api, server, "2.85", token=SERVICE,
                volumeId=NEW_VOLUME).status_code == 202
    assert facade.last_call("swap_volume")[0][2:] == (VOLUME, NEW_VOLUME)


def test_swap_to_an_unknown_new_volume_is_400(api, server, facade):
    facade.add_bdm(server, volume_id=VOLUME)
    facade.errors["swap_volume"] = exception.VolumeNotFound(
        volume_id=NEW_VOLUME)
    result = _put(api, server, "2.84", token=ADMIN, volumeId=NEW_VOLUME)
    assert result.status_code == 400
    facade.errors["swap_volume"] = exception.VolumeNotFound(volume_id=VOLUME)
    result = _put(api, server, "2.84", token=ADMIN, volumeId=NEW_VOLUME)
    assert result.status_code == 404


# -- DELETE ---------------------------------------------------------------------------

def test_detach_answers_202(api, server, facade):
    facade.add_bdm(server, volume_id=VOLUME)
    result = api.delete(_url(server, VOLUME))
    assert result.status_code == 202 and result.text == ""
    assert facade.last_call("detach_volume")[0][2] == VOLUME


def test_detach_of_an_unattached_volume_is_404(api, server):
    result = api.delete(_url(server, VOLUME))
    assert result.status_code == 404
    assert result.json["itemNotFound"]["message"] == \
        "Instance %s is not attached to volume %s" % (server.uuid, VOLUME)


def test_detach_of_the_root_volume_is_400(api, server, facade):
    facade.errors["detach_volume"] = exception.CannotDetachRootVolume()
    result = api.delete(_url(server, VOLUME))
    assert result.status_code == 400
    assert result.json["badRequest"]["message"] == \
        "Cannot detach a root device volume"


# -- one read of the server and its mappings per request ------------------------------

def _reads(facade):
    return [name for name, _a, _k in facade.calls if name in ("get", "get_with_bdms")]


def test_list_show_attach_detach_read_the_server_once_with_its_mappings(
        api, server, facade):
    bdm = facade.add_bdm(server, volume_id=VOLUME)
    assert api.get(_url(server), version="2.89").status_code == 200
    # the list reads rows of its own (list_volume_attachments), no objects
    assert _reads(facade) == []
    assert facade.last_call("list_volume_attachments")[0][1] == server.uuid
    assert api.get(_url(server, VOLUME), version="2.89").status_code == 200
    assert facade.last_call("get_volume_attachment")[1]["bdms"] == [bdm]
    assert _attach(api, server, "2.101", volumeId=NEW_VOLUME).status_code == 202
    assert facade.last_call("attach_volume")[1]["bdms"] == [bdm]
    assert api.delete(_url(server, VOLUME)).status_code == 202
    assert facade.last_call("detach_volume")[1]["bdms"] == [bdm]
    assert _reads(facade) == ["get_with_bdms"] * 3


def test_policy_is_checked_after_the_server_is_found(api, server, facade):
    missing = "/v2.1/servers/%s/os-volume_attachments" % NEW_VOLUME
    assert api.get(missing).status_code == 404
    # another project's server: 404 as if missing, never a 403
    result = api.get(_url(server), token="bob:p2")
    assert result.status_code == 404
    assert not facade.called("get_volume_attachments")


# -- the list view renders database rows as it renders objects -------------------------

def _view_request(version):
    from types import SimpleNamespace

    from volattach.api import microversions
    mv = microversions.Version.parse(version)
    return SimpleNamespace(context=SimpleNamespace(microversion=mv))


def _row(**kw):
    from types import SimpleNamespace
    values = dict(id=1, uuid=str(uuid.uuid4()), instance_uuid=str(uuid.uuid4()),
                  volume_id=VOLUME, device_name="/dev/vdb", tag="t",
                  delete_on_termination=1, attachment_id=str(uuid.uuid4()),
                  attach_mode=None)
    values.update(kw)
    return SimpleNamespace(**values)


def test_the_list_view_of_a_row_matches_the_object_fields():
    from volattach.api.views import volume_attachments as view
    row = _row()
    body = view.index(_view_request("2.105"), [row])["volumeAttachments"]
    assert body == [{"volumeId": VOLUME, "serverId": row.instance_uuid,
                     "device": "/dev/vdb", "tag": "t",
                     "delete_on_termination": True,
                     "attachment_id": row.attachment_id, "bdm_uuid": row.uuid,
                     "attach_mode": "rw"}]     # NULL column: rw, as the object
    assert view.attachment(_view_request("2.105"),
                           _row(attach_mode="ro"))["attach_mode"] == "ro"
    # an attachment in progress is hidden from 2.89, shown with id below
    pending = _row(attachment_id=None, device_name=None)
    assert view.index(_view_request("2.89"), [pending]) == {"volumeAttachments": []}
    assert view.index(_view_request("2.1"), [pending])["volumeAttachments"] == [
        {"id": VOLUME, "volumeId": VOLUME, "serverId": pending.instance_uuid}]
