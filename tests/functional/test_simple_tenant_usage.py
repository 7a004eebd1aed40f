"""os-simple-tenant-usage (issue 34): a project's servers in a period,
deleted ones included, with Nova's figures; paging from 2.40; who may
read what; bad periods refused."""
import datetime

from tests.functional.test_attach_detach import _new_server

FAR_PAST = "2000-01-01T00:00:00"


def _now():
    return datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%S.%f")


def test_usage_of_a_project(api, admin_api):
    start = FAR_PAST
    kept = _new_server(api, name="usage-kept")
    gone = _new_server(api, name="usage-gone")
    api.delete_server(gone)
    api.wait_for_server_deleted(gone)
    end = _now()
    status, body, _ = api.request(
        "GET", "/os-simple-tenant-usage/demo",
        params={"start": start, "end": end}, microversion="2.1")
    assert status == 200, body
    usage = body["tenant_usage"]
    servers = {u["instance_id"]: u for u in usage["server_usages"]}
    assert {kept, gone} <= set(servers)
    assert servers[gone]["state"] == "terminated"
    assert servers[gone]["ended_at"] is not None
    assert servers[kept]["state"] == "active"
    assert servers[kept]["ended_at"] is None
    assert servers[kept]["flavor"] == "m1.tiny"
    assert servers[kept]["vcpus"] == 1 and servers[kept]["memory_mb"] == 512
    assert usage["tenant_id"] == "demo" and usage["start"].startswith(
        "2000-01-01T00:00:00")
    assert usage["total_hours"] == sum(u["hours"]
                                       for u in usage["server_usages"])
    assert usage["total_vcpus_usage"] >= servers[kept]["hours"]
    # a period before the servers: nothing
    status, body, _ = api.request(
        "GET", "/os-simple-tenant-usage/demo",
        params={"start": FAR_PAST, "end": "2001-01-01T00:00:00"})
    assert status == 200 and body["tenant_usage"] == {}, body
    # every project: admin only, summaries unless detailed
    assert api.request("GET", "/os-simple-tenant-usage")[0] == 403
    other = api.__class__(api.base_url, "bob:other")
    assert other.request("GET", "/os-simple-tenant-usage/demo")[0] == 403
    status, body, _ = admin_api.request(
        "GET", "/os-simple-tenant-usage", params={"start": start, "end": end})
    assert status == 200, body
    demo = [u for u in body["tenant_usages"] if u["tenant_id"] == "demo"][0]
    assert "server_usages" not in demo
    status, body, _ = admin_api.request(
        "GET", "/os-simple-tenant-usage",
        params={"start": start, "end": end, "detailed": "1"})
    demo = [u for u in body["tenant_usages"] if u["tenant_id"] == "demo"][0]
    assert {kept, gone} <= {u["instance_id"] for u in demo["server_usages"]}
    # 2.40: one server a page, the next link names the last one
    status, body, _ = api.request(
        "GET", "/os-simple-tenant-usage/demo",
        params={"start": start, "end": end, "limit": "1"},
        microversion="2.40")
    assert status == 200, body
    first = body["tenant_usage"]["server_usages"]
    assert len(first) == 1
    link = body["tenant_usage_links"][0]
    assert link["rel"] == "next" and "marker=%s" % first[0][
        "instance_id"] in link["href"]
    status, body, _ = api.request(
        "GET", "/os-simple-tenant-usage/demo",
        params={"start": start, "end": end, "limit": "1",
                "marker": first[0]["instance_id"]}, microversion="2.40")
    assert status == 200, body
    assert body["tenant_usage"]["server_usages"][0]["instance_id"] != first[
        0]["instance_id"]
    # bad input; an empty project id is no project (Nova's 404)
    assert admin_api.request("GET", "/os-simple-tenant-usage/")[0] == 404
    for params in ({"start": "yesterday"}, {"start": end, "end": start},
                   {"start": start, "end": end, "marker": "nope"}):
        status, body, _ = api.request("GET", "/os-simple-tenant-usage/demo",
                                      params=params, microversion="2.40")
        assert status == 400, (params, body)
    status, body, _ = api.request("GET", "/os-simple-tenant-usage/demo",
                                  params={"bogus": "1"}, microversion="2.75")
    assert status == 400, body
