"""The tempest-style test bodies of os-volume_attachments, shelve, swap,
server actions and instance actions, shared by the functional suite
(in-process deployment) and the integration suite (real daemons over
RabbitMQ).

Each scenario is a function of an ``Env`` (how to reach the deployment) and
drives the compute API with tempest's own ``ServersClient``, whose response
schemas check every body, at the microversions tempest has schemas for
(2.1 .. 2.100).  From 2.101 tempest cannot read the attach answer (202, no
body), so those steps use plain HTTP and then poll the attachment list and
the volume's status as tempest's waiters do.

What each scenario covers, per microversion, is in its docstring.
``SCENARIOS`` lists them all; both suites run every one.  None of them
needs to inject failures or change the configuration of a running daemon
(the functional suite does that in its own modules).
"""
import json
import uuid

from tempest.lib import exceptions as lib_exc

from tests.integration import client as http_clients
from tests.tempest_style import clients
from tests.tempest_style.clients import microversion

# networks "none" needs 2.37: servers are created at this version
CREATE_MV = "2.37"
IMAGE = http_clients.DEFAULT_IMAGE
MULTIATTACH_SPEC = {"multiattach": "<is> True"}


class Env:
    """How a scenario reaches a deployment, and what it created there.

    ``api_url``/``volume_url``: without /v2.1 and /v3.  ``guest_devices``
    (optional): ``f(server_id) -> {device name: connection_info}`` as the
    compute's virt driver sees the guest, or None when the test cannot look
    inside the compute (the integration suite).
    """

    def __init__(self, api_url, volume_url, waiters=None, guest_devices=None):
        self.api_url = api_url
        self.volume_url = volume_url
        self.wait = waiters or clients.Waiters()
        self.guest_devices = guest_devices
        self.volumes = http_clients.VolumeClient(volume_url, clients.USER_TOKEN)
        self.admin_volumes = http_clients.VolumeClient(volume_url,
                                                       clients.ADMIN_TOKEN)
        self._clients = {}
        self._http = {}
        self._servers = []
        self._volumes = []
        self._types = []

    # -- clients ---------------------------------------------------------------
    def client(self, token=clients.USER_TOKEN):
        """tempest's ServersClient speaking as ``token``."""
        if token not in self._clients:
            self._clients[token] = clients.servers_client(self.api_url, token)
        return self._clients[token]

    @property
    def admin(self):
        return self.client(clients.ADMIN_TOKEN)

    def http(self, token=clients.USER_TOKEN):
        """A plain HTTP client (for 2.101+ and raw status checks)."""
        if token not in self._http:
            self._http[token] = http_clients.ComputeClient(
                self.api_url, token, microversion=None)
        return self._http[token]

    # -- resources -------------------------------------------------------------
    def server(self, name="tempest", **fields):
        """An ACTIVE server of the user (created at 2.37); its id."""
        with microversion(CREATE_MV):
            body = self.client().create_server(
                name=name, imageRef=IMAGE, flavorRef="1", networks="none",
                **fields)
            server_id = body["server"]["id"]
            self._servers.append(server_id)
            self.wait.server_status(self.client(), server_id, "ACTIVE")
        return server_id

    def volume(self, multiattach=False, name=None, bootable=False):
        """An available volume of the user; its id.  ``bootable``: made
        from the default image (a blank volume cannot boot a server)."""
        fields = {}
        if multiattach:
            fields["volume_type"] = self._multiattach_type()
        if bootable:
            fields["imageRef"] = http_clients.DEFAULT_IMAGE
        code, body, _ = self.volumes.create_volume(
            size=1, name=name or "tempest-%s" % uuid.uuid4().hex[:6], **fields)
        assert code == 202, (code, body)
        volume_id = body["volume"]["id"]
        self._volumes.append(volume_id)
        self.wait.volume_status(self.volumes, volume_id, "available")
        return volume_id

    def _multiattach_type(self):
        if not self._types:
            name = "multiattach-%s" % uuid.uuid4().hex[:8]
            code, body, _ = self.admin_volumes.create_volume_type(
                name, extra_specs=MULTIATTACH_SPEC)
            assert code == 200, (code, body)
            self._types.append(body["volume_type"]["id"])
        return self._types[0]

    def show_volume(self, volume_id):
        code, body, _ = self.volumes.show_volume(volume_id)
        assert code == 200, (code, body)
        return body["volume"]

    def cinder_attachments(self, volume_id):
        """The volume service's attachments of the volume (detail view)."""
        code, body, _ = self.volumes.request(
            "GET", self.volumes._path("/attachments/detail"),
            params={"volume_id": volume_id})
        assert code == 200, (code, body)
        return body["attachments"]

    def host_of(self, server_id):
        with microversion("2.1"):
            return self.admin.show_server(server_id)["server"][
                "OS-EXT-SRV-ATTR:host"]

    def cleanup(self):
        """Delete what the scenario created (servers first)."""
        for server_id in self._servers:
            try:
                with microversion(None):
                    self.admin.delete_server(server_id)
            except lib_exc.NotFound:
                pass
        for server_id in self._servers:
            with microversion(None):
                self.wait.server_deleted(self.admin, server_id)
        for volume_id in self._volumes:
            self.volumes.delete_volume(volume_id)
        for type_id in self._types:
            self.admin_volumes.request(
                "DELETE", self.admin_volumes._path("/types/%s" % type_id))
        self._servers, self._volumes, self._types = [], [], []
        for client in self._http.values():
            client.close()
        self._http = {}


# -- helpers ---------------------------------------------------------------------

def _raises(exc_class, call, *args, **kwargs):
    """tempest's assertRaises: the call fails with ``exc_class``."""
    try:
        call(*args, **kwargs)
    except exc_class as exc:
        return exc
    raise AssertionError("%s%r did not raise %s"
                         % (getattr(call, "__name__", call), args,
                            exc_class.__name__))


def _attach(env, server_id, volume_id, version, client=None, **fields):
    """Attach through tempest at ``version``; wait until in-use."""
    client = client or env.client()
    with microversion(version):
        body = client.attach_volume(server_id, volumeId=volume_id, **fields)
    env.wait.volume_status(env.volumes, volume_id, "in-use")
    return body["volumeAttachment"]


def _detach(env, server_id, volume_id, version="2.1", client=None):
    client = client or env.client()
    with microversion(version):
        client.detach_volume(server_id, volume_id)
        env.wait.attachment_removed(client, server_id, volume_id)
    env.wait.volume_status(env.volumes, volume_id, "available")


def _listed(env, server_id, version, client=None):
    client = client or env.client()
    with microversion(version):
        return {a["volumeId"]: a for a in client.list_volume_attachments(
            server_id)["volumeAttachments"]}


def _shown(env, server_id, volume_id, version, client=None):
    client = client or env.client()
    with microversion(version):
        return client.show_volume_attachment(server_id,
                                             volume_id)["volumeAttachment"]


def _actions(env, server_id, version="2.1", client=None):
    """Action names, oldest first."""
    client = client or env.client()
    with microversion(version):
        actions = client.list_instance_actions(server_id)["instanceActions"]
    return [a["action"] for a in reversed(actions)]


def _action(env, server_id, name, version="2.1", client=None):
    """The newest action ``name`` of the server, with its events (admin)."""
    client = client or env.admin
    with microversion(version):
        actions = client.list_instance_actions(server_id)["instanceActions"]
        request_id = next(a["request_id"] for a in actions if a["action"] == name)
        return client.show_instance_action(server_id,
                                           request_id)["instanceAction"]


def _wait_action_finished(env, server_id, request_id, version="2.51"):
    """Poll os-instance-actions/{request_id} until every event finished."""
    def fetch():
        with microversion(version):
            return env.admin.show_instance_action(
                server_id, request_id)["instanceAction"]

    return env.wait.until(
        fetch, lambda a: a.get("events") and all(
            e["finish_time"] for e in a["events"]),
        "instance action %s finished" % request_id)


def _event_results(action):
    return {e["event"]: e["result"] for e in action.get("events", [])}


def _http_attach(env, server_id, volume_id, version, token=clients.USER_TOKEN,
                 **fields):
    return env.http(token).attach_volume(server_id, volume_id,
                                         microversion=version, **fields)


def _http_list(env, server_id, version, token=clients.USER_TOKEN):
    code, body, _ = env.http(token).list_volume_attachments(
        server_id, microversion=version)
    assert code == 200, (code, body)
    return body["volumeAttachments"]


def _shelve_offload(env, server_id, version="2.1"):
    with microversion(version):
        env.client().shelve_server(server_id)
        env.wait.server_status(env.client(), server_id, "SHELVED_OFFLOADED")


def _unshelve(env, server_id, version="2.1"):
    with microversion(version):
        env.client().unshelve_server(server_id)
        env.wait.server_status(env.client(), server_id, "ACTIVE")


# -- scenarios -----------------------------------------------------------------

def attach_list_show_detach_v2_1(env):
    """2.1 (no header, as tempest by default, and explicit "2.1"): attach
    answers 200 with id/volumeId/serverId/device and the volume goes in-use
    on the server's host; list and show carry exactly those keys; tag and
    delete_on_termination are unknown (400); attaching twice is 400; a
    missing volume is 404; another project sees 404; unknown list query
    parameters are ignored (400 from 2.75, with limit still fine); detach
    is 202, the volume comes back available and show is 404; instance
    actions record attach_volume/detach_volume (events for admins only
    before 2.51)."""
    server_id = env.server(name="v21")
    volume_id = env.volume()
    with microversion(None):
        _raises(lib_exc.BadRequest, env.client().attach_volume, server_id,
                volumeId=volume_id, tag="data")
        _raises(lib_exc.BadRequest, env.client().attach_volume, server_id,
                volumeId=volume_id, delete_on_termination=True)
        _raises(lib_exc.NotFound, env.client().attach_volume, server_id,
                volumeId=str(uuid.uuid4()))
    assert env.show_volume(volume_id)["status"] == "available"

    att = _attach(env, server_id, volume_id, None)
    assert set(att) == {"id", "volumeId", "serverId", "device"}, att
    assert att["id"] == att["volumeId"] == volume_id
    assert att["serverId"] == server_id
    device = att["device"]
    assert device.startswith("/dev/vd") and device != "/dev/vda", device

    volume = env.show_volume(volume_id)
    assert [(a["server_id"], a["device"], a["host_name"])
            for a in volume["attachments"]] == [
        (server_id, device, env.host_of(server_id))]
    if env.guest_devices:
        assert device in env.guest_devices(server_id)

    listed = _listed(env, server_id, "2.1")
    assert listed == {volume_id: {"id": volume_id, "volumeId": volume_id,
                                  "serverId": server_id, "device": device}}
    assert _shown(env, server_id, volume_id, "2.1") == listed[volume_id]

    with microversion("2.1"):
        _raises(lib_exc.BadRequest, env.client().attach_volume, server_id,
                volumeId=volume_id)
        other = env.client(clients.OTHER_TOKEN)
        _raises(lib_exc.NotFound, other.list_volume_attachments, server_id)
        _raises(lib_exc.NotFound, other.detach_volume, server_id, volume_id)
        resp, _ = env.client().get(
            "servers/%s/os-volume_attachments?bogus=1" % server_id)
        assert resp.status == 200
    with microversion("2.75"):
        _raises(lib_exc.BadRequest, env.client().get,
                "servers/%s/os-volume_attachments?bogus=1" % server_id)
        resp, _ = env.client().get(
            "servers/%s/os-volume_attachments?limit=1" % server_id)
        assert resp.status == 200

    _detach(env, server_id, volume_id, "2.1")
    assert env.show_volume(volume_id)["attachments"] == []
    assert env.cinder_attachments(volume_id) == []
    with microversion("2.1"):
        _raises(lib_exc.NotFound, env.client().show_volume_attachment,
                server_id, volume_id)
        _raises(lib_exc.NotFound, env.client().detach_volume, server_id,
                volume_id)
    if env.guest_devices:
        assert device not in env.guest_devices(server_id)

    assert _actions(env, server_id) == ["create", "attach_volume",
                                        "detach_volume"]
    with microversion("2.1"):
        user_view = env.client().show_instance_action(
            server_id, _action(env, server_id, "attach_volume")["request_id"])
    assert "events" not in user_view["instanceAction"]
    attach_action = _action(env, server_id, "attach_volume")
    assert _event_results(attach_action) == {"compute_attach_volume": "Success"}
    assert attach_action["user_id"] == "tempest"
    assert attach_action["project_id"] == "tempest-project"
    assert _event_results(_action(env, server_id, "detach_volume")) == {
        "compute_detach_volume": "Success"}


def shelved_offloaded_volume_ops_v2_20(env):
    """Shelve offloads (shelved_offload_time 0, or a volume-backed server);
    an offloaded server's attachments become connector-less (new Cinder
    attachments, no host).  2.19: attach and detach on it are 409.  2.20:
    attach answers 200 with a null device (no compute involved: the volume
    is reserved and completed, in-use) and detach is done at once; 2.49: a
    tag on an offloaded server is 400; 2.60: a multiattach volume is 400;
    2.89: the offloaded attachment has its attachment_id; 2.101: attach is
    202 and done in the API too.  Unshelve: the receiving compute names
    every device and the attachments get its connector (host and device in
    the volume service); every attachment is listed with a device."""
    server_id = env.server(name="offload")
    kept, added, added_async, shared = (env.volume(), env.volume(),
                                        env.volume(), env.volume(True))
    detached = env.volume()
    dev_kept = _attach(env, server_id, kept, "2.20")["device"]
    _attach(env, server_id, detached, "2.20")
    before = _shown(env, server_id, kept, "2.89")["attachment_id"]

    _shelve_offload(env, server_id, "2.20")
    with microversion("2.1"):
        assert env.admin.show_server(server_id)["server"][
            "OS-EXT-SRV-ATTR:host"] is None
    after = _shown(env, server_id, kept, "2.89")
    assert after["attachment_id"] != before
    assert after["device"] == dev_kept
    assert [a["id"] for a in env.cinder_attachments(kept)] == [
        after["attachment_id"]]
    volume = env.show_volume(kept)
    assert volume["status"] == "in-use"
    assert [(a["host_name"], a["device"]) for a in volume["attachments"]] == [
        (None, None)]

    with microversion("2.19"):
        _raises(lib_exc.Conflict, env.client().attach_volume, server_id,
                volumeId=added)
        _raises(lib_exc.Conflict, env.client().detach_volume, server_id,
                detached)
    with microversion("2.49"):
        _raises(lib_exc.BadRequest, env.client().attach_volume, server_id,
                volumeId=added, tag="data")
    with microversion("2.60"):
        _raises(lib_exc.BadRequest, env.client().attach_volume, server_id,
                volumeId=shared)
    assert set(_listed(env, server_id, "2.20")) == {kept, detached}
    for volume_id in (added, shared):
        assert env.show_volume(volume_id)["status"] == "available"
        assert env.cinder_attachments(volume_id) == []

    att = _attach(env, server_id, added, "2.20")
    assert att["device"] is None and att["volumeId"] == added, att
    listed = _listed(env, server_id, "2.20")
    assert "device" not in listed[added], listed[added]
    assert listed[kept]["device"] == dev_kept
    assert _shown(env, server_id, added, "2.89")["attachment_id"] == \
        env.cinder_attachments(added)[0]["id"]

    with microversion("2.20"):
        env.client().detach_volume(server_id, detached)
    env.wait.volume_status(env.volumes, detached, "available")
    assert env.cinder_attachments(detached) == []

    code, body, _ = _http_attach(env, server_id, added_async, "2.101")
    assert (code, body) == (202, None)
    env.wait.volume_status(env.volumes, added_async, "in-use")
    assert set(_listed(env, server_id, "2.101")) == {kept, added, added_async}

    _unshelve(env, server_id, "2.20")
    host = env.host_of(server_id)
    listed = _listed(env, server_id, "2.89")
    assert set(listed) == {kept, added, added_async}
    devices = {v: a.get("device") for v, a in listed.items()}
    assert all(d and d.startswith("/dev/vd") for d in devices.values()), devices
    assert len(set(devices.values())) == 3, devices
    for volume_id, device in devices.items():
        volume = env.show_volume(volume_id)
        assert volume["status"] == "in-use"
        assert [(a["host_name"], a["device"]) for a in volume["attachments"]] \
            == [(host, device)], volume["attachments"]
        attachments = env.cinder_attachments(volume_id)
        assert [a["id"] for a in attachments] == [listed[volume_id][
            "attachment_id"]]
        assert attachments[0]["connection_info"], attachments[0]
    if env.guest_devices:
        assert set(devices.values()) <= set(env.guest_devices(server_id))

    names = _actions(env, server_id)
    assert names[names.index("shelve"):] == [
        "shelve", "attach_volume", "detach_volume", "attach_volume",
        "unshelve"], names
    assert _event_results(_action(env, server_id, "shelve")) == {
        "compute_shelve_instance": "Success",
        "compute_shelve_offload_instance": "Success"}
    assert _event_results(_action(env, server_id, "unshelve")) == {
        "compute_unshelve_instance": "Success"}


def tag_and_multiattach_v2_49_v2_60_v2_70(env):
    """2.49: attach takes a tag (a bad one is 400) but views show no tag
    until 2.70, where list, show and the attach answer have it.  2.59: a
    multiattach volume is 400; 2.60: it attaches to two servers at once
    (two Cinder attachments, in-use) and detaches from each."""
    s1, s2 = env.server(name="tag1"), env.server(name="tag2")
    tagged, tagged270, shared = env.volume(), env.volume(), env.volume(True)

    with microversion("2.49"):
        _raises(lib_exc.BadRequest, env.client().attach_volume, s1,
                volumeId=tagged, tag="a/b")
        _raises(lib_exc.BadRequest, env.client().attach_volume, s1,
                volumeId=tagged, tag="x" * 61)
    att = _attach(env, s1, tagged, "2.49", tag="data")
    assert "tag" not in att
    assert "tag" not in _listed(env, s1, "2.49")[tagged]
    assert _listed(env, s1, "2.70")[tagged]["tag"] == "data"
    assert _shown(env, s1, tagged, "2.70")["tag"] == "data"
    att = _attach(env, s1, tagged270, "2.70", tag="logs")
    assert att["tag"] == "logs"
    assert _listed(env, s1, "2.70")[tagged270]["tag"] == "logs"

    with microversion("2.59"):
        _raises(lib_exc.BadRequest, env.client().attach_volume, s1,
                volumeId=shared)
    assert env.cinder_attachments(shared) == []
    _attach(env, s1, shared, "2.60")
    _attach(env, s2, shared, "2.60")
    volume = env.show_volume(shared)
    assert volume["multiattach"] is True
    assert sorted(a["server_id"] for a in volume["attachments"]) == sorted(
        [s1, s2])
    assert len(env.cinder_attachments(shared)) == 2
    with microversion("2.60"):
        env.client().detach_volume(s1, shared)
        env.wait.attachment_removed(env.client(), s1, shared)
    assert env.show_volume(shared)["status"] == "in-use"
    assert [a["server_id"] for a in env.show_volume(shared)["attachments"]] \
        == [s2]
    _detach(env, s2, shared, "2.60")


def delete_on_termination_v2_79_v2_85(env):
    """2.78: delete_on_termination on attach is 400; 2.79: it is taken and
    shown (attach answer, list, show; False by default).  2.84: PUT with the
    same volume is a swap, forbidden to the owner (403); 2.85: the owner's
    PUT updates delete_on_termination (202), other keys must not change
    (400).  Deleting the server deletes the volumes marked so and leaves the
    others available."""
    server_id = env.server(name="dot")
    doomed, kept = env.volume(), env.volume()
    with microversion("2.78"):
        _raises(lib_exc.BadRequest, env.client().attach_volume, server_id,
                volumeId=doomed, delete_on_termination=True)
    att = _attach(env, server_id, doomed, "2.79", delete_on_termination=True)
    assert att["delete_on_termination"] is True
    att = _attach(env, server_id, kept, "2.79")
    assert att["delete_on_termination"] is False
    listed = _listed(env, server_id, "2.79")
    assert (listed[doomed]["delete_on_termination"],
            listed[kept]["delete_on_termination"]) == (True, False)
    assert "delete_on_termination" not in _listed(env, server_id, "2.78")[kept]

    with microversion("2.84"):
        _raises(lib_exc.Forbidden, env.client().update_attached_volume,
                server_id, kept, volumeId=kept)
    with microversion("2.85"):
        env.client().update_attached_volume(server_id, kept, volumeId=kept,
                                            delete_on_termination=True)
        assert _shown(env, server_id, kept, "2.85")[
            "delete_on_termination"] is True
        env.client().update_attached_volume(server_id, kept, volumeId=kept,
                                            delete_on_termination=False)
        _raises(lib_exc.BadRequest, env.client().update_attached_volume,
                server_id, kept, volumeId=kept, device="/dev/vdz")
        _raises(lib_exc.BadRequest, env.client().update_attached_volume,
                server_id, kept, volumeId=kept, bogus=1)
    assert _shown(env, server_id, kept, "2.85")["delete_on_termination"] is False
    assert env.show_volume(kept)["status"] == "in-use"

    with microversion(None):
        env.client().delete_server(server_id)
        env.wait.server_deleted(env.client(), server_id)
    env.wait.volume_deleted(env.volumes, doomed)
    env.wait.volume_status(env.volumes, kept, "available")
    assert env.cinder_attachments(kept) == []


def attachment_ids_v2_89_v2_100(env):
    """2.88: list and show have id and no attachment_id.  2.89: list and
    show drop id and add attachment_id (the volume service's attachment)
    and bdm_uuid; the attach answer keeps id and has neither.  2.100: attach
    is still synchronous (200 with the device), with tempest's 2.100
    schemas."""
    server_id = env.server(name="ids")
    first, second = env.volume(), env.volume()
    att = _attach(env, server_id, first, "2.89")
    assert att["id"] == first and "attachment_id" not in att and att["device"]
    shown = _shown(env, server_id, first, "2.89")
    assert "id" not in shown
    assert shown["attachment_id"] == env.cinder_attachments(first)[0]["id"]
    uuid.UUID(shown["bdm_uuid"])
    assert _listed(env, server_id, "2.89")[first] == shown
    old = _shown(env, server_id, first, "2.88")
    assert old["id"] == first and "attachment_id" not in old

    att = _attach(env, server_id, second, "2.100")
    assert att["device"] and att["device"] != shown["device"]
    assert set(att) == {"id", "volumeId", "serverId", "device", "tag",
                        "delete_on_termination"}
    listed = _listed(env, server_id, "2.100")
    assert listed[second]["device"] == att["device"]
    assert listed[second]["attachment_id"] == env.cinder_attachments(
        second)[0]["id"]
    assert listed[second]["bdm_uuid"] != listed[first]["bdm_uuid"]
    _detach(env, server_id, second, "2.100")


def async_attach_v2_101_v2_102(env):
    """2.101: attach answers 202 with no body (echoing the version); the
    caller polls the attachment list for the device and the volume for
    in-use; the instance action of that request has a successful
    compute_attach_volume event.  Errors found cheaply stay synchronous:
    already attached is 400, a missing volume 404.  2.102: the same, and
    unknown query parameters on show are 400 (ignored at 2.101); 2.103 and
    2.104 attach the same way.  Detach at 2.101 is 202."""
    server_id = env.server(name="async")
    volumes = [env.volume() for _ in range(4)]
    http = env.http()
    devices = set()
    for volume_id, version in zip(volumes, ("2.101", "2.102", "2.103", "2.104")):
        code, body, headers = _http_attach(env, server_id, volume_id, version)
        assert (code, body) == (202, None), (version, code, body)
        assert headers["OpenStack-API-Version"] == "compute %s" % version
        request_id = headers["x-openstack-request-id"]
        att = env.wait.attachment_listed(
            lambda: _http_list(env, server_id, version), volume_id)
        env.wait.volume_status(env.volumes, volume_id, "in-use")
        assert att["attachment_id"] == env.cinder_attachments(volume_id)[0]["id"]
        devices.add(att["device"])
        action = _wait_action_finished(env, server_id, request_id)
        assert action["action"] == "attach_volume"
        assert _event_results(action) == {"compute_attach_volume": "Success"}
    assert len(devices) == 4

    code, body, _ = _http_attach(env, server_id, volumes[0], "2.101")
    assert code == 400 and body["badRequest"]["code"] == 400, (code, body)
    code, body, _ = _http_attach(env, server_id, str(uuid.uuid4()), "2.101")
    assert code == 404 and "itemNotFound" in body, (code, body)

    path = "/servers/%s/os-volume_attachments/%s" % (server_id, volumes[0])
    code, _, _ = http.request("GET", path, params={"bogus": "1"},
                              microversion="2.101")
    assert code == 200
    code, body, _ = http.request("GET", path, params={"bogus": "1"},
                                 microversion="2.102")
    assert code == 400, (code, body)

    code, body, _ = http.detach_volume(server_id, volumes[0],
                                       microversion="2.101")
    assert (code, body) == (202, None)
    env.wait.volume_status(env.volumes, volumes[0], "available")
    assert volumes[0] not in {a["volumeId"] for a in
                              _http_list(env, server_id, "2.101")}


def swap_volume(env):
    """Swap (PUT with another volumeId), tempest's update_attached_volume:
    the owner is refused (403), anyone is refused (409) while the volume
    service is not migrating the volume (OSSN-0094), and the service role
    allowed during a migration; the new volume
    takes over the device, tag and delete_on_termination (2.79 views), the
    old attachment is deleted (old volume available, no Cinder attachment)
    and the new volume is in-use; instance action swap_volume with a
    successful compute_swap_volume event.  Errors: a new volume that is not
    available 400, a missing new volume 400, a volume not attached 404, a
    stopped server 409 (swap: active, paused, resized, shelved,
    shelved_offloaded); swapping back on a paused server works."""
    server_id = env.server(name="swap")
    old, new, busy = env.volume(), env.volume(), env.volume()
    att = _attach(env, server_id, old, "2.79", tag="swapped",
                  delete_on_termination=True)
    device = att["device"]
    _attach(env, server_id, busy, "2.79")

    with microversion("2.79"):
        _raises(lib_exc.Forbidden, env.client().update_attached_volume,
                server_id, old, volumeId=new)
        # OSSN-0094: not while the volume service is not migrating it
        _raises(lib_exc.Conflict, env.admin.update_attached_volume,
                server_id, old, volumeId=new)
    assert env.cinder_attachments(new) == []
    env.admin_volumes.begin_migration(old)
    with microversion("2.79"):
        _raises(lib_exc.BadRequest, env.admin.update_attached_volume,
                server_id, old, volumeId=busy)
        _raises(lib_exc.BadRequest, env.admin.update_attached_volume,
                server_id, old, volumeId=str(uuid.uuid4()))
        _raises(lib_exc.NotFound, env.admin.update_attached_volume,
                server_id, new, volumeId=old)
    assert env.show_volume(old)["status"] == "in-use"
    assert env.show_volume(new)["status"] == "available"

    service = env.client("cinder:tempest-project:service")
    with microversion("2.79"):
        service.update_attached_volume(server_id, old, volumeId=new)
        env.wait.attachment_removed(env.client(), server_id, old)
    env.wait.volume_status(env.volumes, new, "in-use")
    env.wait.volume_status(env.volumes, old, "available")
    assert env.cinder_attachments(old) == []
    shown = _shown(env, server_id, new, "2.89")
    assert (shown["device"], shown["tag"], shown["delete_on_termination"]) == (
        device, "swapped", True), shown
    assert shown["attachment_id"] == env.cinder_attachments(new)[0]["id"]
    assert [a["device"] for a in env.show_volume(new)["attachments"]] == [device]
    if env.guest_devices:
        assert env.guest_devices(server_id)[device]["volume_id"] == new
    assert _event_results(_action(env, server_id, "swap_volume")) == {
        "compute_swap_volume": "Success"}

    with microversion("2.1"):
        env.client().stop_server(server_id)
        env.wait.server_status(env.client(), server_id, "SHUTOFF")
        _raises(lib_exc.Conflict, env.admin.update_attached_volume,
                server_id, new, volumeId=old)
        env.client().start_server(server_id)
        env.wait.server_status(env.client(), server_id, "ACTIVE")
        env.client().pause_server(server_id)
        env.wait.server_status(env.client(), server_id, "PAUSED")
        env.admin_volumes.begin_migration(new)
        env.admin.update_attached_volume(server_id, new, volumeId=old)
        env.wait.attachment_removed(env.client(), server_id, new)
    env.wait.volume_status(env.volumes, old, "in-use")
    env.wait.volume_status(env.volumes, new, "available")
    assert _shown(env, server_id, old, "2.79")["device"] == device


def server_actions_state_machine(env):
    """os-stop, os-start, pause, unpause, lock, unlock, shelve,
    shelveOffload, unshelve through tempest, each in the vm_states that
    allow it (202 and the new status) and refused with 409 in the others;
    a locked server refuses its owner's actions and volume operations with
    409 and accepts an admin's; an owner cannot unlock an admin's lock
    (403).  Every action is recorded in os-instance-actions."""
    server_id = env.server(name="actions")
    volume_id = env.volume()
    user, admin = env.client(), env.admin
    with microversion("2.1"):
        for call in (user.start_server, user.unpause_server,
                     user.unshelve_server, admin.shelve_offload_server):
            _raises(lib_exc.Conflict, call, server_id)

        user.stop_server(server_id)
        env.wait.server_status(user, server_id, "SHUTOFF")
        for call in (user.stop_server, user.pause_server, user.unpause_server,
                     user.unshelve_server):
            _raises(lib_exc.Conflict, call, server_id)
        user.start_server(server_id)
        env.wait.server_status(user, server_id, "ACTIVE")

        user.pause_server(server_id)
        env.wait.server_status(user, server_id, "PAUSED")
        for call in (user.pause_server, user.start_server, user.stop_server):
            _raises(lib_exc.Conflict, call, server_id)
        user.unpause_server(server_id)
        env.wait.server_status(user, server_id, "ACTIVE")

    _attach(env, server_id, volume_id, "2.1")
    with microversion("2.9"):
        user.lock_server(server_id)
        assert user.show_server(server_id)["server"]["locked"] is True
        for call in (user.stop_server, user.pause_server, user.shelve_server,
                     user.delete_server):
            _raises(lib_exc.Conflict, call, server_id)
        _raises(lib_exc.Conflict, user.detach_volume, server_id, volume_id)
        _raises(lib_exc.Conflict, user.attach_volume, server_id,
                volumeId=env.volume())
        admin.stop_server(server_id)
        env.wait.server_status(user, server_id, "SHUTOFF")
        admin.start_server(server_id)
        env.wait.server_status(user, server_id, "ACTIVE")
        user.unlock_server(server_id)
        assert user.show_server(server_id)["server"]["locked"] is False

        admin.lock_server(server_id)
        _raises(lib_exc.Forbidden, user.unlock_server, server_id)
        admin.unlock_server(server_id)
    _detach(env, server_id, volume_id, "2.1")

    with microversion("2.1"):
        user.shelve_server(server_id)
        env.wait.server_status(user, server_id, "SHELVED_OFFLOADED")
        for call in (user.shelve_server, user.stop_server, user.start_server,
                     user.pause_server, admin.shelve_offload_server):
            _raises(lib_exc.Conflict, call, server_id)
        user.unshelve_server(server_id)
        env.wait.server_status(user, server_id, "ACTIVE")
        _raises(lib_exc.Conflict, user.unshelve_server, server_id)

    names = _actions(env, server_id, "2.1")
    expected = ["create", "stop", "start", "pause", "unpause", "attach_volume",
                "lock", "stop", "start", "unlock", "lock", "unlock",
                "detach_volume", "shelve", "unshelve"]
    assert names == expected, names
    for name, event in (("stop", "compute_stop_instance"),
                        ("start", "compute_start_instance"),
                        ("pause", "compute_pause_instance"),
                        ("unpause", "compute_unpause_instance")):
        assert _event_results(_action(env, server_id, name, "2.51")) == {
            event: "Success"}, name


def instance_actions_schemas(env):
    """os-instance-actions through tempest's schemas at 2.1, 2.51 (events
    for the owner, no traceback), 2.58 (updated_at, paging with limit and
    marker), 2.62 (hostId, host for admins) and 2.84 (details): attach,
    detach and swap each leave one action with its event."""
    server_id = env.server(name="ia")
    first, second = env.volume(), env.volume()
    _attach(env, server_id, first, "2.1")
    env.admin_volumes.begin_migration(first)
    with microversion("2.1"):
        env.admin.update_attached_volume(server_id, first, volumeId=second)
        env.wait.attachment_removed(env.client(), server_id, first)
    env.wait.volume_status(env.volumes, first, "available")
    _detach(env, server_id, second, "2.1")

    for version in ("2.1", "2.51", "2.58", "2.62", "2.84", "2.100"):
        with microversion(version):
            actions = env.client().list_instance_actions(server_id)[
                "instanceActions"]
            assert [a["action"] for a in actions] == [
                "detach_volume", "swap_volume", "attach_volume", "create"]
            for action in actions:
                user = env.client().show_instance_action(
                    server_id, action["request_id"])["instanceAction"]
                admin = env.admin.show_instance_action(
                    server_id, action["request_id"])["instanceAction"]
                assert all("traceback" in e for e in admin["events"])
                if version == "2.1":
                    assert "events" not in user
                else:
                    assert user["events"]
                    assert all("traceback" not in e for e in user["events"])
                if version in ("2.62", "2.84", "2.100"):
                    assert all(e["host"] for e in admin["events"])
                    assert all("host" not in e for e in user["events"])
                    assert all(e["hostId"] for e in user["events"])
    with microversion("2.58"):
        resp, body = env.client().get(
            "servers/%s/os-instance-actions?limit=2" % server_id)
        page = json.loads(body)
        assert [a["action"] for a in page["instanceActions"]] == [
            "detach_volume", "swap_volume"]
        marker = page["instanceActions"][-1]["request_id"]
        resp, body = env.client().get(
            "servers/%s/os-instance-actions?marker=%s" % (server_id, marker))
        assert [a["action"] for a in json.loads(body)["instanceActions"]] == [
            "attach_volume", "create"]


SCENARIOS = (
    attach_list_show_detach_v2_1,
    shelved_offloaded_volume_ops_v2_20,
    tag_and_multiattach_v2_49_v2_60_v2_70,
    delete_on_termination_v2_79_v2_85,
    attachment_ids_v2_89_v2_100,
    async_attach_v2_101_v2_102,
    swap_volume,
    server_actions_state_machine,
    instance_actions_schemas,
)

