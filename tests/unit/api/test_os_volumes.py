"""The deprecated os-volumes proxy: Nova's bodies below 2.36, 404 from 2.36."""
import pytest
from tempest.lib.api_schema.response.compute.v2_1 import volumes as schemas
from tempest.lib.common import rest_client

from volattach import exception

VOL = "6b2c1f3e-7e0b-4a55-9a55-1f5d3c1a9b01"
SERVER = "0d0b2c6e-2c1e-4b8c-9f0a-7f3c2b1a0e01"


class _Resp(dict):
    def __init__(self, status):
        super().__init__()
        self.status = status


def _validate(schema, result):
    rest_client.RestClient.validate_response(
        schema, _Resp(result.status_code), result.json)


def _volume(**kw):
    vol = {"id": VOL, "status": "available", "size": 1,
           "availability_zone": "nova",
           "created_at": "2026-11-23T21:00:00.000000", "name": "data",
           "description": None, "volume_type": "__DEFAULT__",
           "snapshot_id": None, "metadata": {}, "attachments": []}
    vol.update(kw)
    return vol


class FakeVolumeApi:

    def __init__(self):
        self.volumes = {VOL: _volume()}
        self.created = []
        self.deleted = []

    def list_volumes(self, ctx, detail=True, all_tenants=False):
        return list(self.volumes.values())

    def get(self, ctx, volume_id):
        if volume_id not in self.volumes:
            raise exception.VolumeNotFound(volume_id=volume_id)
        return self.volumes[volume_id]

    def create_volume(self, ctx, size, **kw):
        self.created.append((size, kw))
        return _volume(id="new", status="creating", size=size,
                       name=kw.get("name"))

    def delete_volume(self, ctx, volume_id):
        self.get(ctx, volume_id)
        self.deleted.append(volume_id)


@pytest.fixture
def volumes(facade):
    facade.volume_api = FakeVolumeApi()
    return facade.volume_api


def test_list_show_in_nova_form(api, volumes):
    for path in ("/v2.1/os-volumes", "/v2.1/os-volumes/detail"):
        result = api.get(path)
        assert result.status_code == 200, result.text
        _validate(schemas.list_volumes, result)
        [vol] = result.json["volumes"]
        assert vol["displayName"] == "data"
        assert vol["attachments"] == [{}]
    result = api.get("/v2.1/os-volumes/%s" % VOL)
    _validate(schemas.create_get_volume, result)
    assert result.json["volume"]["volumeType"] == "__DEFAULT__"


def test_attached_volume_lists_its_server(api, volumes):
    volumes.volumes[VOL] = _volume(status="in-use", attachments=[
        {"server_id": SERVER, "device": "/dev/vdb", "volume_id": VOL}])
    result = api.get("/v2.1/os-volumes/%s" % VOL)
    _validate(schemas.create_get_volume, result)
    assert result.json["volume"]["attachments"] == [
        {"id": VOL, "volumeId": VOL, "serverId": SERVER, "device": "/dev/vdb"}]


def test_create_and_delete(api, volumes):
    result = api.post("/v2.1/os-volumes", {"volume": {
        "size": "2", "display_name": "v", "metadata": {"k": "v"}}})
    assert result.status_code == 200, result.text
    _validate(schemas.create_get_volume, result)
    assert volumes.created == [(2, {"name": "v", "description": None,
                                    "volume_type": None,
                                    "availability_zone": None,
                                    "metadata": {"k": "v"}})]
    result = api.delete("/v2.1/os-volumes/%s" % VOL)
    assert result.status_code == 202
    assert volumes.deleted == [VOL]


@pytest.mark.parametrize("size", [0, "#$%", ""])
def test_bad_size_is_400(api, volumes, size):
    result = api.post("/v2.1/os-volumes", {"volume": {"size": size}})
    assert result.status_code == 400
    assert volumes.created == []


def test_unknown_volume_is_404(api, volumes):
    missing = "3b3e8a2c-0000-4000-8000-000000000000"
    assert api.get("/v2.1/os-volumes/%s" % missing).status_code == 404
    assert api.delete("/v2.1/os-volumes/%s" % missing).status_code == 404


def test_gone_from_2_36(api, volumes):
    assert api.get("/v2.1/os-volumes", version="2.35").status_code == 200
    result = api.get("/v2.1/os-volumes", version="2.36")
    assert result.status_code == 404
    assert result.json["itemNotFound"]["message"] == \
        "API version 2.36 is not supported on this method."


def test_lists_page_by_offset_and_limit(api, volumes):
    volumes.volumes = {str(n): _volume(id=str(n)) for n in range(3)}
    for path in ("/v2.1/os-volumes", "/v2.1/os-volumes/detail"):
        ids = lambda r: [v["id"] for v in r.json["volumes"]]  # noqa: E731
        assert ids(api.get(path, params="limit=2")) == ["0", "1"]
        assert ids(api.get(path, params="offset=1&limit=1")) == ["1"]
        assert ids(api.get(path, params="offset=5")) == []
        assert api.get(path, params="limit=-1").status_code == 400
        assert api.get(path, params="offset=x").status_code == 400


def test_empty_volume_id_is_404(api, volumes):
    assert api.get("/v2.1/os-volumes/").status_code == 404
    assert api.delete("/v2.1/os-volumes/").status_code == 404
