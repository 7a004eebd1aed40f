"""Aggregates, availability zones and service updates (issue 34) on three
fake computes: os-aggregates (CRUD, hosts, metadata, the one-zone-per-host
rule, bad input), os-availability-zone (plain and detail), the zone a
server is in (its host's aggregate's), a boot and an unshelve into a zone
landing on a host of that zone, and os-services updates: a disabled
compute is not scheduled to, a forced-down one is down, delete."""
import uuid

CONF_OVERRIDES = {
    ("all", "compute_hosts"): ["compute1", "compute2", "compute3"],
}
IMAGE = "155d900f-4e14-4e4c-a73d-069cbf4541e6"


def _aggregate(admin_api, zone=None, name=None):
    body = {"name": name or "agg-%s" % uuid.uuid4().hex[:6]}
    if zone:
        body["availability_zone"] = zone
    status, answer, _ = admin_api.request("POST", "/os-aggregates",
                                          {"aggregate": body})
    assert status == 200, answer
    return answer["aggregate"]


def _action(admin_api, agg_id, action, value, mv=None):
    return admin_api.request("POST", "/os-aggregates/%s/action" % agg_id,
                             {action: value}, microversion=mv)[:2]


def _boot(api, name, **fields):
    status, body, _ = api.create_server(name=name, microversion="2.37",
                                        **fields)
    return status, body


def _host_of(admin_api, server_id, status="ACTIVE"):
    admin_api.wait_for_server_status(server_id, status)
    code, body, _ = admin_api.show_server(server_id, microversion="2.1")
    return (body["server"]["OS-EXT-SRV-ATTR:host"],
            body["server"]["OS-EXT-AZ:availability_zone"])


def test_aggregates_crud_and_bad_input(admin_api, api):
    created = _aggregate(admin_api, zone="crud-az")
    assert "hosts" not in created and "metadata" not in created
    assert created["availability_zone"] == "crud-az"
    agg_id = created["id"]
    status, body, _ = admin_api.request("POST", "/os-aggregates", {
        "aggregate": {"name": created["name"]}})
    assert status == 409, body
    status, body = _action(admin_api, agg_id, "add_host",
                           {"host": "compute3"})
    assert status == 200, body
    assert body["aggregate"]["hosts"] == ["compute3"]
    assert body["aggregate"]["metadata"] == {"availability_zone": "crud-az"}
    assert _action(admin_api, agg_id, "add_host",
                   {"host": "compute3"})[0] == 409
    status, body = _action(admin_api, agg_id, "add_host", {"host": "nohost"})
    assert status == 404, body
    status, body = _action(admin_api, agg_id, "set_metadata",
                           {"metadata": {"k": "v", "gone": "x"}}, mv="2.41")
    assert status == 200, body
    status, body = _action(admin_api, agg_id, "set_metadata",
                           {"metadata": {"gone": None}}, mv="2.41")
    assert status == 200, body
    assert body["aggregate"]["metadata"] == {"k": "v",
                                             "availability_zone": "crud-az"}
    assert "uuid" in body["aggregate"]
    # Nova: no aggregate without a zone name once it has one
    status, body = _action(admin_api, agg_id, "set_metadata",
                           {"metadata": {"availability_zone": None}})
    assert status == 400, body
    assert "empty named availability zone" in body["badRequest"]["message"]
    status, body, _ = admin_api.request("PUT", "/os-aggregates/%s" % agg_id,
                                        {"aggregate": {"name": "renamed-%s"
                                                       % agg_id}})
    assert status == 200 and body["aggregate"]["name"] == "renamed-%s" % agg_id
    listed = admin_api.request("GET", "/os-aggregates")[1]["aggregates"]
    assert agg_id in [a["id"] for a in listed]
    for bad in ({"aggregate": {"name": ""}},
                {"aggregate": {"name": "x", "availability_zone": "a:b"}},
                {"aggregate": {"name": "x\x00"}},
                {"aggregate": {"name": "x", "other": 1}}):
        status, body, _ = admin_api.request("POST", "/os-aggregates", bad)
        assert status == 400, (bad, body)
    assert admin_api.request("PUT", "/os-aggregates/%s" % agg_id,
                             {"aggregate": {}})[0] == 400
    assert _action(admin_api, agg_id, "set_metadata",
                   {"metadata": {"k" * 256: "v"}})[0] == 400
    assert _action(admin_api, agg_id, "explode", {})[0] == 400
    assert admin_api.request("GET", "/os-aggregates/abc")[0] == 400
    assert admin_api.request("GET", "/os-aggregates/99999")[0] == 404
    # admin only
    assert api.request("GET", "/os-aggregates")[0] == 403
    # not empty: 400; empty: gone
    assert admin_api.request("DELETE", "/os-aggregates/%s" % agg_id)[0] == 400
    assert _action(admin_api, agg_id, "remove_host",
                   {"host": "compute3"})[0] == 200
    assert _action(admin_api, agg_id, "remove_host",
                   {"host": "compute3"})[0] == 404
    assert admin_api.request("DELETE", "/os-aggregates/%s" % agg_id)[0] == 200
    assert admin_api.request("GET", "/os-aggregates/%s" % agg_id)[0] == 404


def test_a_host_is_in_one_zone(admin_api, api):
    """A host in a zoned aggregate cannot join one of another zone; a zone
    does not change under a host's servers."""
    first = _aggregate(admin_api, zone="one-az")
    assert _action(admin_api, first["id"], "add_host",
                   {"host": "compute1"})[0] == 200
    other = _aggregate(admin_api, zone="two-az")
    status, body = _action(admin_api, other["id"], "add_host",
                           {"host": "compute1"})
    assert status == 409, body
    assert "already in availability zone(s)" in body["conflictingRequest"][
        "message"]
    # an aggregate without a zone, or of the same zone, takes it
    plain = _aggregate(admin_api)
    assert _action(admin_api, plain["id"], "add_host",
                   {"host": "compute1"})[0] == 200
    status, body = _action(admin_api, plain["id"], "set_metadata",
                           {"metadata": {"availability_zone": "two-az"}})
    assert status == 400, body
    status, body, _ = admin_api.request(
        "PUT", "/os-aggregates/%s" % plain["id"],
        {"aggregate": {"availability_zone": "two-az"}})
    assert status == 400, body
    same = _aggregate(admin_api, zone="one-az")
    assert _action(admin_api, same["id"], "add_host",
                   {"host": "compute1"})[0] == 200
    # a server on compute1: its zone can no longer change
    status, body = _boot(api, "in-one", availability_zone="one-az")
    assert status == 202, body
    server_id = body["server"]["id"]
    host, zone = _host_of(admin_api, server_id)
    assert (host, zone) == ("compute1", "one-az")
    status, body = _action(admin_api, first["id"], "set_metadata",
                           {"metadata": {"availability_zone": "three-az"}})
    assert status == 400, body
    assert "already in availability zone(s) ['one-az']" in body[
        "badRequest"]["message"]
    # leaving one of its two one-az aggregates changes nothing: allowed
    assert _action(admin_api, same["id"], "remove_host",
                   {"host": "compute1"})[0] == 200
    status, body = _action(admin_api, first["id"], "set_metadata",
                           {"metadata": {"availability_zone": "three-az"}})
    assert status == 400, body
    assert "contain instances" in body["badRequest"]["message"]
    status, body = _action(admin_api, first["id"], "remove_host",
                           {"host": "compute1"})
    assert status == 409, body
    assert "would change from 'one-az' to 'None'" in body[
        "conflictingRequest"]["message"]
    api.delete_server(server_id)
    api.wait_for_server_deleted(server_id)
    for agg in (first, plain):
        assert _action(admin_api, agg["id"], "remove_host",
                       {"host": "compute1"})[0] == 200
        assert admin_api.request("DELETE", "/os-aggregates/%s"
                                 % agg["id"])[0] == 200
    for agg in (same, other):
        assert admin_api.request("DELETE", "/os-aggregates/%s"
                                 % agg["id"])[0] == 200


def test_zones_boot_and_unshelve(admin_api, api):
    agg = _aggregate(admin_api, zone="edge-az")
    assert _action(admin_api, agg["id"], "add_host",
                   {"host": "compute3"})[0] == 200
    # the zones: listed to anyone, with hosts to an admin
    status, body, _ = api.request("GET", "/os-availability-zone")
    assert status == 200, body
    zones = {z["zoneName"]: z for z in body["availabilityZoneInfo"]}
    assert zones["edge-az"] == {"zoneName": "edge-az", "hosts": None,
                                "zoneState": {"available": True}}
    assert "nova" in zones and "internal" not in zones
    assert api.request("GET", "/os-availability-zone/detail")[0] == 403
    status, body, _ = admin_api.request("GET", "/os-availability-zone/detail")
    zones = {z["zoneName"]: z for z in body["availabilityZoneInfo"]}
    assert list(zones["edge-az"]["hosts"]) == ["compute3"]
    service = zones["edge-az"]["hosts"]["compute3"]["volattach-compute"]
    assert service["available"] is True and service["active"] is True
    assert "compute3" not in zones["nova"]["hosts"]
    assert "internal" in zones
    # the services' zones
    status, body, _ = admin_api.request("GET", "/os-services")
    by_host = {s["host"]: s["zone"] for s in body["services"]
               if s["binary"] == "volattach-compute"}
    assert by_host["compute3"] == "edge-az" and by_host["compute1"] == "nova"

    # a boot into the zone lands in it, a boot into "nova" does not
    for n in range(2):
        status, body = _boot(api, "edge-%d" % n, availability_zone="edge-az")
        assert status == 202, body
        assert _host_of(admin_api, body["server"]["id"]) == (
            "compute3", "edge-az")
    status, body = _boot(api, "core", availability_zone="nova")
    assert status == 202, body
    core = body["server"]["id"]
    host, zone = _host_of(admin_api, core)
    assert host != "compute3" and zone == "nova"
    # an admin's forced host goes past the zone named with it (Nova)
    status, body = _boot(admin_api, "forced", availability_zone="nova:compute3")
    assert status == 202, body
    assert _host_of(admin_api, body["server"]["id"]) == ("compute3", "edge-az")
    status, body = _boot(api, "nowhere", availability_zone="no-such-az")
    assert status == 400, body
    assert body["badRequest"]["message"] == (
        "The requested availability zone is not available")
    # an unshelve into the zone (2.77) lands in it too
    status, body, _ = api.request("POST", "/servers/%s/action" % core,
                                  {"shelve": None}, microversion="2.37")
    assert status == 202, body
    api.wait_for_server_status(core, "SHELVED_OFFLOADED", timeout=30)
    status, body, _ = api.request(
        "POST", "/servers/%s/action" % core,
        {"unshelve": {"availability_zone": "edge-az"}}, microversion="2.77")
    assert status == 202, body
    assert _host_of(admin_api, core) == ("compute3", "edge-az")


def test_service_updates(admin_api, api):
    status, body, _ = admin_api.request("GET", "/os-services",
                                        microversion="2.53")
    computes = {s["host"]: s for s in body["services"]
                if s["binary"] == "volattach-compute"}
    conductor = [s for s in body["services"]
                 if s["binary"] == "volattach-conductor"][0]
    # compute1 and compute3 disabled (2.53 and before): compute2 takes all
    status, body, _ = admin_api.request(
        "PUT", "/os-services/%s" % computes["compute1"]["id"],
        {"status": "disabled", "disabled_reason": "maintenance"},
        microversion="2.53")
    assert status == 200, body
    assert body["service"]["status"] == "disabled"
    assert body["service"]["disabled_reason"] == "maintenance"
    status, body, _ = admin_api.request(
        "PUT", "/os-services/disable-log-reason",
        {"host": "compute3", "binary": "nova-compute",
         "disabled_reason": "rack down"}, microversion="2.1")
    assert status == 200, body
    assert body["service"] == {"host": "compute3", "binary": "nova-compute",
                               "status": "disabled",
                               "disabled_reason": "rack down"}
    try:
        for n in range(3):
            status, answer = _boot(api, "svc-%d" % n)
            assert status == 202, answer
            assert _host_of(admin_api, answer["server"]["id"])[0] == "compute2"
    finally:
        for host in ("compute1", "compute3"):
            status, body, _ = admin_api.request(
                "PUT", "/os-services/%s" % computes[host]["id"],
                {"status": "enabled"}, microversion="2.53")
            assert status == 200, body
    # bad input
    uuid_path = "/os-services/%s" % computes["compute1"]["id"]
    for body in ({}, {"status": "enabled", "disabled_reason": "x"},
                 {"status": "paused"}, {"forced_down": "maybe"},
                 {"host": "compute1"}):
        status, answer, _ = admin_api.request("PUT", uuid_path, body,
                                              microversion="2.53")
        assert status == 400, (body, answer)
    assert admin_api.request("PUT", "/os-services/not-a-uuid",
                             {"status": "enabled"},
                             microversion="2.53")[0] == 400
    assert admin_api.request("PUT", "/os-services/%s" % uuid.uuid4(),
                             {"status": "enabled"},
                             microversion="2.53")[0] == 404
    status, answer, _ = admin_api.request(
        "PUT", "/os-services/%s" % conductor["id"], {"status": "disabled"},
        microversion="2.53")
    assert status == 400 and "Only nova-compute" in answer["badRequest"][
        "message"]
    assert admin_api.request("PUT", "/os-services/explode",
                             {"host": "compute1", "binary": "nova-compute"},
                             microversion="2.1")[0] == 404
    assert api.request("PUT", uuid_path, {"status": "disabled"},
                       microversion="2.53")[0] == 403
    # forced down: down at once, then up again
    status, body, _ = admin_api.request("PUT", uuid_path,
                                        {"forced_down": True},
                                        microversion="2.53")
    assert status == 200 and body["service"]["state"] == "down", body
    status, body, _ = admin_api.request("PUT", uuid_path,
                                        {"forced_down": False},
                                        microversion="2.53")
    assert status == 200 and body["service"]["forced_down"] is False, body
    # a compute with servers is not deleted
    busy = computes["compute2"]["id"]
    status, body, _ = admin_api.request("DELETE", "/os-services/%s" % busy,
                                        microversion="2.53")
    assert status == 409, body
    assert admin_api.request("DELETE", "/os-services/abc")[0] == 400
