"""Server metadata and tags (2.26) over real HTTP on the all-in-one
deployment: the collection and one key, metadata in the create body, the
limits Nova enforces (key 1-255 characters, value up to 255, 128 items, no
NUL), tags with their 50-per-server and 60-character limits, the tags in
the server views, the list filters tags/tags-any/not-tags/not-tags-any and
locked (2.73), and a delete that takes the server's tags with it."""
import uuid

import pytest

from tests.integration import client as clients

MV = "2.73"


@pytest.fixture
def user(deployment):
    tag = uuid.uuid4().hex[:8]
    return clients.ComputeClient(deployment.api_url, "u-%s:p-%s" % (tag, tag))


def _server(api, microversion="2.37", **fields):
    status, body, _ = api.create_server(
        name="s-%s" % uuid.uuid4().hex[:6], microversion=microversion,
        **fields)
    assert status == 202, body
    api.wait_for_server_status(body["server"]["id"], "ACTIVE")
    return body["server"]["id"]


def _meta(api, server_id, method="GET", key=None, body=None):
    path = "/servers/%s/metadata" % server_id
    if key is not None:
        path += "/" + key
    return api.request(method, path, body)[:2]


def test_metadata_collection_and_key(user):
    server_id = _server(user, metadata={"a": "1", "b": "2"})
    assert _meta(user, server_id) == (200, {"metadata": {"a": "1", "b": "2"}})
    # POST merges, PUT replaces the whole set
    assert _meta(user, server_id, "POST", body={"metadata": {"b": "3", "c": ""}}) == (
        200, {"metadata": {"a": "1", "b": "3", "c": ""}})
    assert _meta(user, server_id, "PUT", body={"metadata": {"x": "y"}}) == (
        200, {"metadata": {"x": "y"}})
    # one key
    assert _meta(user, server_id, "PUT", "k", {"meta": {"k": "v"}}) == (
        200, {"meta": {"k": "v"}})
    assert _meta(user, server_id, key="k") == (200, {"meta": {"k": "v"}})
    status, body = _meta(user, server_id, "PUT", "k", {"meta": {"other": "v"}})
    assert status == 400 and "Request body and URI mismatch" in str(body)
    assert _meta(user, server_id, "DELETE", "k") == (204, None)
    status, body = _meta(user, server_id, key="k")
    assert status == 404 and "Metadata item was not found" in str(body)
    assert _meta(user, server_id, "DELETE", "k")[0] == 404
    # the server view shows the same
    assert user.show_server(server_id)[1]["server"]["metadata"] == {"x": "y"}
    # another project's server does not exist
    other = clients.ComputeClient(user.base_url, "o-%s:p-o" % uuid.uuid4().hex[:6])
    assert _meta(other, server_id)[0] == 404
    assert _meta(other, server_id, "POST", body={"metadata": {"a": "b"}})[0] == 404


@pytest.mark.parametrize("metadata", [
    {"k" * 256: "v"},           # key over 255
    {"": "v"},                  # empty key
    {"k": "v" * 256},           # value over 255
    {"k": "nul\u0000"},         # NUL
    {"k/": "v"},                # outside the key pattern
])
def test_bad_metadata_is_refused(user, metadata):
    server_id = _server(user)
    before = _meta(user, server_id)[1]
    status, body = _meta(user, server_id, "POST", body={"metadata": metadata})
    assert status == 400, body
    assert user.create_server(metadata=metadata, microversion="2.37")[0] == 400
    assert _meta(user, server_id) == (200, before)


def test_metadata_items_quota(user):
    server_id = _server(user)
    many = {"k%d" % i: "v" for i in range(1000)}
    status, body = _meta(user, server_id, "POST", body={"metadata": many})
    assert status == 403, body
    assert "Maximum number of metadata items exceeds 128" in str(body)
    status, body, _ = user.create_server(metadata=many, microversion="2.37")
    assert status == 403, body
    # 128 fit; the 129th by a merge does not
    exact = {"k%d" % i: "v" for i in range(128)}
    assert _meta(user, server_id, "PUT", body={"metadata": exact})[0] == 200
    assert _meta(user, server_id, "PUT", "one-more", {"meta": {"one-more": "v"}})[0] == 403
    assert len(_meta(user, server_id)[1]["metadata"]) == 128


def test_metadata_of_a_locked_server_is_409(user):
    server_id = _server(user)
    assert user.request("POST", "/servers/%s/action" % server_id,
                        {"lock": {"locked_reason": "frozen"}},
                        microversion=MV)[0] == 202
    status, body = _meta(user, server_id, "POST", body={"metadata": {"a": "b"}})
    assert status == 409, body
    server = user.show_server(server_id, microversion=MV)[1]["server"]
    assert (server["locked"], server["locked_reason"]) == (True, "frozen")


def _tags(api, server_id, method="GET", tag=None, body=None, mv="2.26"):
    path = "/servers/%s/tags" % server_id
    if tag is not None:
        path += "/" + tag
    return api.request(method, path, body, microversion=mv)


def test_tags_set_check_add_delete(user):
    server_id = _server(user, microversion="2.52", tags=["boot", "boot"])
    assert _tags(user, server_id)[:2] == (200, {"tags": ["boot"]})
    assert _tags(user, server_id, "PUT", body={"tags": ["b", "a", "a"]})[:2] == (
        200, {"tags": ["a", "b"]})
    status, _, headers = _tags(user, server_id, "PUT", "c")
    assert status == 201 and headers["Location"].endswith(
        "/servers/%s/tags/c" % server_id)
    assert _tags(user, server_id, "PUT", "c")[0] == 204          # had it
    assert _tags(user, server_id, tag="c")[0] == 204
    status, body, _ = _tags(user, server_id, tag="nope")
    assert status == 404 and "has no tag 'nope'" in str(body)
    assert _tags(user, server_id, "DELETE", "c")[0] == 204
    assert _tags(user, server_id, "DELETE", "c")[0] == 404
    server = user.show_server(server_id, microversion="2.26")[1]["server"]
    assert server["tags"] == ["a", "b"]
    assert "tags" not in user.show_server(server_id, microversion="2.25")[1]["server"]
    assert _tags(user, server_id, "DELETE")[0] == 204
    assert _tags(user, server_id)[1] == {"tags": []}
    # below 2.26 there is no such resource
    assert _tags(user, server_id, mv="2.25")[0] == 404


def test_bad_tags_are_refused(user):
    server_id = _server(user)
    for body in ({"tags": ["a,b"]}, {"tags": ["a/b"]}, {"tags": ["x" * 61]},
                 {"tags": [""]}, {"tags": ["t%d" % i for i in range(51)]},
                 {"tags": ["nul\u0000"]}):
        status, reply, _ = _tags(user, server_id, "PUT", body=body)
        assert status == 400, (body, reply)
    status, body, _ = _tags(user, server_id, "PUT", "a,b")
    assert status == 400 and "is invalid" in str(body)
    assert _tags(user, server_id, "PUT", "x" * 61)[0] == 400
    # the 51st tag by one PUT
    assert _tags(user, server_id, "PUT",
                 body={"tags": ["t%d" % i for i in range(50)]})[0] == 200
    status, body, _ = _tags(user, server_id, "PUT", "t50")
    assert status == 400 and "per-server limit 50" in str(body)
    assert len(_tags(user, server_id)[1]["tags"]) == 50
    assert user.create_server(microversion="2.52", tags=["a,b"])[0] == 400


def _names(api, **params):
    status, body, _ = api.list_servers(microversion=MV, **params)
    assert status == 200, body
    return {s["id"] for s in body["servers"]}


def test_list_filters_by_tags_and_locked(user):
    ab = _server(user, microversion="2.52", tags=["a", "b"])
    a = _server(user, microversion="2.52", tags=["a"])
    c = _server(user, microversion="2.52", tags=["c"])
    assert _names(user, tags="a,b") == {ab}
    assert _names(user, **{"tags-any": "b,c"}) == {ab, c}
    assert _names(user, **{"not-tags": "a,b"}) == {a, c}
    assert _names(user, **{"not-tags-any": "a"}) == {c}
    assert user.request("POST", "/servers/%s/action" % c, {"lock": None},
                        microversion=MV)[0] == 202
    assert _names(user, locked="true") == {c}
    assert _names(user, locked="false") == {ab, a}
    assert user.list_servers(microversion=MV, locked="maybe")[0] == 400
    # the detailed list shows each server's tags
    status, body, _ = user.list_servers(detail=True, microversion="2.26")
    assert {s["id"]: s["tags"] for s in body["servers"]} == {
        ab: ["a", "b"], a: ["a"], c: ["c"]}


def test_delete_takes_the_tags(user, deployment):
    server_id = _server(user, microversion="2.52", tags=["gone"])
    assert user.delete_server(server_id)[0] == 204
    user.wait_for_server_deleted(server_id)
    from volattach.db import api as db_api
    assert db_api.tag_get_all(server_id) == []
    assert _tags(user, server_id)[0] == 404


def test_version_documents(deployment):
    import requests
    body = requests.get(deployment.api_url + "/", timeout=30).json()
    assert [(v["id"], v["status"]) for v in body["versions"]] == [
        ("v2.0", "SUPPORTED"), ("v2.1", "CURRENT")]
    for version in body["versions"]:
        reply = requests.get(version["links"][0]["href"], timeout=30)
        assert reply.status_code == 200
        assert reply.json()["version"]["id"] == version["id"]
