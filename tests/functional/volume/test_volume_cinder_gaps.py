"""Cinder behaviours of volattach-volume beyond the attach flow: size caps,
list filters and paging, summary, update, extra specs, bootable, extend,
limits, readonly metadata, PUT of an unknown attachment."""
import uuid

import pytest

from tests.functional.volume.volume_testlib import (ADMIN, BOTH_DBS, P1,
                                                    USER1, USER2, connector)

pytestmark = BOTH_DBS


def _ids(resp, key="volumes"):
    assert resp.status_code == 200, resp.text
    return [v["id"] for v in resp.json[key]]


# -- sizes --------------------------------------------------------------------

@pytest.mark.parametrize("size,shown", [
    (2 ** 63, "9223372036854775808"),
    ("99999999999999999999", "99999999999999999999"),
    (2 ** 31, "2147483648"),
])
def test_sizes_above_db_max_int_are_400(api, size, shown):
    r = api.post("/volumes", {"volume": {"size": size}})
    assert r.status_code == 400, r.text
    assert r.json["badRequest"]["message"] == (
        "Invalid input for field/attribute size. Value: %s. %s is greater "
        "than the maximum of 2147483647" % (shown, shown))
    assert _ids(api.get("/volumes")) == []


def test_largest_size_is_accepted(api):
    vol = api.create_volume(size=2 ** 31 - 1)
    assert api.volume(vol["id"])["size"] == 2 ** 31 - 1


# -- lists --------------------------------------------------------------------

def test_list_filters_by_name_status_and_metadata(api):
    a = api.create_volume(name="alpha", metadata={"tier": "gold"})
    b = api.create_volume(name="beta", metadata={"tier": "gold", "x": "1"})
    api.create_volume(name="alpha", token=USER2)
    assert _ids(api.get("/volumes?name=alpha")) == [a["id"]]
    assert sorted(_ids(api.get("/volumes/detail?status=available"))) == \
        sorted([a["id"], b["id"]])
    assert _ids(api.get("/volumes?status=in-use")) == []
    r = api.get("/volumes/detail", headers={}, mv="3.54")
    assert len(r.json["volumes"]) == 2
    assert _ids(api.get("/volumes?metadata={'x': '1'}")) == [b["id"]]
    assert sorted(_ids(api.get("/volumes?metadata={'tier': 'gold'}"))) == \
        sorted([a["id"], b["id"]])
    assert api.get("/volumes?metadata=notadict").status_code == 400


def test_list_sort_limit_marker_and_links(api):
    ids = [api.create_volume(name="v%d" % n)["id"] for n in range(5)]
    by_name = _ids(api.get("/volumes?sort=name:asc"))
    assert by_name == ids
    assert _ids(api.get("/volumes?sort_key=name&sort_dir=desc")) == \
        ids[::-1]
    r = api.get("/volumes?sort=name:asc&limit=2")
    assert _ids(r) == ids[:2]
    link = r.json["volumes_links"]
    assert link[0]["rel"] == "next"
    assert "marker=%s" % ids[1] in link[0]["href"]
    assert link[0]["href"].startswith("http://falconframework.org/v3/%s/"
                                      "volumes?" % P1)
    r = api.get("/volumes/detail?sort=name:asc&limit=2&marker=%s" % ids[1])
    assert _ids(r) == ids[2:4]
    assert "/volumes/detail?" in r.json["volumes_links"][0]["href"]
    r = api.get("/volumes?sort=name:asc&limit=2&marker=%s" % ids[3])
    assert _ids(r) == ids[4:]
    assert "volumes_links" not in r.json


@pytest.mark.parametrize("query,message", [
    ("limit=abc", "limit param must be an integer"),
    ("limit=-1", "limit param must be positive"),
    ("marker=%s" % uuid.uuid4(), "not found"),
    ("sort=name:sideways", "Unknown sort direction"),
    ("sort=name&sort_key=size", "cannot be used with"),
    ("sort=password", "Invalid sort key"),
])
def test_bad_list_parameters_are_400(api, query, message):
    api.create_volume()
    for path in ("/volumes", "/volumes/detail"):
        r = api.get("%s?%s" % (path, query))
        assert r.status_code == 400, r.text
        assert message in r.json["badRequest"]["message"]


def test_attachment_list_filters_and_pages(api):
    vol = api.create_volume(multiattach=True)
    first = api.attach(vol["id"])
    second = api.reserve(vol["id"], instance=str(uuid.uuid4())).json[
        "attachment"]["id"]
    assert _ids(api.get("/attachments?status=attached"),
                "attachments") == [first]
    assert _ids(api.get("/attachments?status=reserved"),
                "attachments") == [second]
    assert _ids(api.get("/attachments?limit=1"), "attachments") == [first]
    assert _ids(api.get("/attachments/detail?marker=%s" % first),
                "attachments") == [second]
    assert _ids(api.get("/attachments?sort=created_at:desc"),
                "attachments") == [second, first]
    assert api.get("/attachments?limit=abc").status_code == 400
    assert api.get("/attachments?marker=%s" % uuid.uuid4()).status_code \
        == 400


def test_put_unknown_attachment_is_404(api):
    r = api.put("/attachments/%s" % uuid.uuid4(),
                {"attachment": {"connector": connector()}})
    assert r.status_code == 404, r.text
    assert "itemNotFound" in r.json
    r = api.put("/attachments/%s" % uuid.uuid4(),
                {"attachment": {"connector": {}}})
    assert r.status_code == 404, r.text


# -- summary, update, limits --------------------------------------------------

def test_summary(api):
    api.create_volume(size=2, metadata={"k": "a"})
    api.create_volume(size=3, metadata={"k": "b"})
    api.create_volume(size=7, token=USER2)
    r = api.get("/volumes/summary", mv="3.12")
    assert r.status_code == 200, r.text
    assert r.json == {"volume-summary": {"total_count": 2, "total_size": 5}}
    r = api.get("/volumes/summary", mv="3.36")
    assert r.json["volume-summary"]["metadata"] == {"k": ["a", "b"]}
    r = api.get("/volumes/summary?all_tenants=1", mv="3.12", token=ADMIN)
    assert r.json["volume-summary"]["total_size"] == 12
    r = api.get("/volumes/summary", mv="3.11")
    assert r.status_code == 404


def test_update_volume(api):
    vol = api.create_volume(name="old", metadata={"a": "1"})
    r = api.put("/volumes/%s" % vol["id"], {"volume": {
        "name": "new", "description": "d", "metadata": {"b": "2"}}})
    assert r.status_code == 200, r.text
    shown = r.json["volume"]
    assert (shown["name"], shown["description"], shown["metadata"]) == (
        "new", "d", {"b": "2"})
    assert api.volume(vol["id"])["name"] == "new"
    r = api.put("/volumes/%s" % vol["id"], {"volume": {"display_name": "x"}})
    assert r.json["volume"]["name"] == "x"
    r = api.put("/volumes/%s" % vol["id"], {"volume": {"size": 9}})
    assert r.status_code == 400
    r = api.put("/volumes/%s" % vol["id"], {"volume": {"name": "y"}},
                token=USER2)
    assert r.status_code in (403, 404)
    assert api.volume(vol["id"])["name"] == "x"
    r = api.put("/volumes/%s" % uuid.uuid4(), {"volume": {"name": "y"}})
    assert r.status_code == 404


def test_limits_count_the_projects_volumes(api):
    api.create_volume(size=2)
    api.create_volume(size=4)
    api.create_volume(size=8, token=USER2)
    r = api.get("/limits")
    assert r.status_code == 200, r.text
    absolute = r.json["limits"]["absolute"]
    assert r.json["limits"]["rate"] == []
    assert (absolute["totalVolumesUsed"], absolute["totalGigabytesUsed"],
            absolute["maxTotalVolumes"],
            absolute["maxTotalVolumeGigabytes"]) == (2, 6, -1, -1)


# -- actions ------------------------------------------------------------------

def _action(api, volume_id, body, token=USER1):
    return api.post("/volumes/%s/action" % volume_id, body, token=token)


def test_set_bootable_and_extend(api):
    vol = api.create_volume(size=1)
    r = _action(api, vol["id"], {"os-set_bootable": {"bootable": True}})
    assert r.status_code == 200, r.text
    assert api.volume(vol["id"])["bootable"] == "true"
    r = _action(api, vol["id"], {"os-set_bootable": {"bootable": "maybe"}})
    assert r.status_code == 400
    r = _action(api, vol["id"], {"os-extend": {"new_size": 3}})
    assert r.status_code == 202, r.text
    assert api.volume(vol["id"])["size"] == 3
    r = _action(api, vol["id"], {"os-extend": {"new_size": 3}})
    assert r.status_code == 400
    assert "must be greater than current size" in r.text
    r = _action(api, vol["id"], {"os-extend": {"new_size": 2 ** 31}})
    assert r.status_code == 400
    api.attach(vol["id"])
    # an in-use volume before 3.42: Cinder's extend of an available one
    r = api.post("/volumes/%s/action" % vol["id"],
                 {"os-extend": {"new_size": 5}}, token=USER1, mv="3.41")
    assert r.status_code == 400
    assert r.json["badRequest"]["message"] == (
        "Invalid volume: Volume %s status must be '{'status': "
        "'available'}' to extend, currently in-use." % vol["id"])
    assert api.volume(vol["id"])["size"] == 3


def test_readonly_flag_false_keeps_the_key(api):
    vol = api.create_volume()
    assert "readonly" not in api.volume(vol["id"])["metadata"]
    _action(api, vol["id"], {"os-update_readonly_flag": {"readonly": True}})
    assert api.volume(vol["id"])["metadata"]["readonly"] == "True"
    _action(api, vol["id"], {"os-update_readonly_flag": {"readonly": False}})
    assert api.volume(vol["id"])["metadata"]["readonly"] == "False"


# -- extra specs --------------------------------------------------------------

def test_extra_specs_crud(api):
    vtype = api.create_type(extra_specs={"a": "1"})
    base = "/types/%s/extra_specs" % vtype["id"]
    r = api.get(base, token=ADMIN)
    assert r.status_code == 200 and r.json == {"extra_specs": {"a": "1"}}
    r = api.post(base, {"extra_specs": {"b": "2", "a": "3"}}, token=ADMIN)
    assert r.status_code == 200, r.text
    assert r.json == {"extra_specs": {"b": "2", "a": "3"}}
    assert api.get(base, token=ADMIN).json["extra_specs"] == {"a": "3",
                                                              "b": "2"}
    assert api.get(base + "/b", token=ADMIN).json == {"b": "2"}
    r = api.put(base + "/b", {"b": "4"}, token=ADMIN)
    assert r.status_code == 200 and r.json == {"b": "4"}
    assert api.put(base + "/b", {"c": "4"}, token=ADMIN).status_code == 400
    assert api.put(base + "/b", {"b": "4", "c": "5"},
                   token=ADMIN).status_code == 400
    assert api.delete(base + "/b", token=ADMIN).status_code == 202
    assert api.get(base + "/b", token=ADMIN).status_code == 404
    assert api.delete(base + "/b", token=ADMIN).status_code == 404
    # non-admins read but do not write
    assert api.post(base, {"extra_specs": {"z": "1"}}).status_code == 403
    assert api.delete(base + "/a").status_code == 403
    assert api.get("/types/%s/extra_specs" % uuid.uuid4(),
                   token=ADMIN).status_code == 404
    assert api.get("/types/%s" % vtype["id"], token=ADMIN).json[
        "volume_type"]["extra_specs"] == {"a": "3"}


def test_update_type(api):
    """PUT /types/{id} as tempest's test_volume_type_update: name,
    description and is_public; 400 with none of them, 409 on a taken name,
    404 unknown, 403 for non-admins; nothing changed by a refused one."""
    vtype = api.create_type(extra_specs={"a": "1"})
    other = api.create_type()
    path = "/types/%s" % vtype["id"]
    r = api.put(path, {"volume_type": {"name": "renamed",
                                       "description": "new words",
                                       "is_public": False}}, token=ADMIN)
    assert r.status_code == 200, r.text
    shown = r.json["volume_type"]
    assert (shown["id"], shown["name"], shown["description"],
            shown["is_public"], shown["extra_specs"]) == (
        vtype["id"], "renamed", "new words", False, {"a": "1"})
    # as Cinder: the type-access key on GET, not on the update reply
    # (tempest's update_volume_type schema refuses it)
    assert "os-volume-type-access:is_public" not in shown
    assert api.get(path, token=ADMIN).json["volume_type"] == dict(
        shown, **{"os-volume-type-access:is_public": False})
    r = api.put(path, {"volume_type": {"description": ""}}, token=ADMIN)
    assert r.status_code == 200 and r.json["volume_type"]["description"] == ""
    assert r.json["volume_type"]["name"] == "renamed"
    for bad, status in (({"volume_type": {}}, 400),
                        ({"volume_type": {"description": None}}, 400),
                        ({"volume_type": {"is_public": "maybe"}}, 400),
                        ({"volume_type": {"bogus": 1}}, 400),
                        ({"volume_type": {"name": other["name"]}}, 409)):
        r = api.put(path, bad, token=ADMIN)
        assert r.status_code == status, (bad, r.text)
    assert api.put(path, {"volume_type": {"name": "x"}}).status_code == 403
    assert api.put("/types/%s" % uuid.uuid4(), {"volume_type": {"name": "y"}},
                   token=ADMIN).status_code == 404
    assert api.get(path, token=ADMIN).json["volume_type"]["name"] == "renamed"


def test_create_from_unknown_snapshot_or_source_volume_is_404(api):
    """tempest's test_create_volume_with_nonexistent_snapshot_id and
    _source_volid: 404 in Cinder's format and no volume stored; a source
    volume that exists is refused (400: no cloning here), a malformed id is
    400."""
    missing = str(uuid.uuid4())
    r = api.post("/volumes", {"volume": {"size": 1, "snapshot_id": missing}})
    assert r.status_code == 404, r.text
    assert r.json["itemNotFound"]["message"] == (
        "Snapshot %s could not be found." % missing)
    r = api.post("/volumes", {"volume": {"size": 1, "source_volid": missing}})
    assert r.status_code == 404, r.text
    assert r.json["itemNotFound"]["message"] == (
        "Volume %s could not be found." % missing)
    other = api.create_volume(token=USER2)
    r = api.post("/volumes", {"volume": {"size": 1,
                                         "source_volid": other["id"]}})
    assert r.status_code == 404, r.text
    mine = api.create_volume()
    r = api.post("/volumes", {"volume": {"size": 1, "source_volid": mine["id"]}})
    assert r.status_code == 400, r.text
    assert "another volume" in r.json["badRequest"]["message"]
    r = api.post("/volumes", {"volume": {"size": 1, "snapshot_id": "nope"}})
    assert r.status_code == 400, r.text
    assert _ids(api.get("/volumes")) == [mine["id"]]


def test_create_from_a_configured_image_is_bootable(api):
    """No image service: imageRef names one of [volume] images, the volume
    is bootable (as Cinder marks a volume made from an image); another
    imageRef is 400 and stores nothing."""
    from volattach.conf import CONF
    image = CONF.volume.images[0]
    r = api.post("/volumes", {"volume": {"size": 1, "imageRef": image}})
    assert r.status_code == 202, r.text
    made = r.json["volume"]["id"]
    # as Cinder's extension: on show and detail lists, not on create
    assert "volume_image_metadata" not in r.json["volume"]
    assert api.volume(made)["bootable"] == "true"
    # Cinder's image metadata of a volume made from an image (what Nova's
    # rebuild of a volume-backed server compares with)
    assert api.volume(made)["volume_image_metadata"]["image_id"] == image
    r = api.post("/volumes", {"volume": {"size": 1,
                                         "imageRef": str(uuid.uuid4())}})
    assert r.status_code == 400, r.text
    assert r.json["badRequest"]["message"] == (
        "Invalid image identifier or unable to access requested image.")
    assert _ids(api.get("/volumes")) == [made]
