"""Server groups (issue 34) on three fake computes: the API
(os-server-groups' views by microversion, bad input, who sees what), the
``group`` scheduler hint, and the scheduler honouring the policies:
multi-create of the readers of one multiattach volume spread by
anti-affinity, a fourth server refused with "No valid host", concurrent
creates never placed against the policy, and a live migration that would
break the policy refused."""
import concurrent.futures
import uuid

from tests.functional.test_attach_detach import _new_boot_volume
from tests.integration import client as clients

CONF_OVERRIDES = {
    ("all", "compute_hosts"): ["compute1", "compute2", "compute3"],
}
MV = "2.105"
NO_VALID_HOST = "No valid host was found. There are not enough hosts available."


def _group(api, policy="anti-affinity", mv="2.64", **fields):
    body = {"name": "g-%s" % uuid.uuid4().hex[:6]}
    if mv == "2.64" or mv == "latest":
        body["policy"] = policy
    else:
        body["policies"] = [policy]
    body.update(fields)
    status, answer, _ = api.request("POST", "/os-server-groups",
                                    {"server_group": body}, microversion=mv)
    assert status == 200, answer
    return answer["server_group"]


def _show_group(api, group_id, mv="2.64"):
    status, body, _ = api.request("GET", "/os-server-groups/%s" % group_id,
                                  microversion=mv)
    assert status == 200, body
    return body["server_group"]


def _create(api, group_id, count=1, bdm=None, name="grp"):
    fields = {"min_count": count, "max_count": count,
              "return_reservation_id": True}
    image_ref = "155d900f-4e14-4e4c-a73d-069cbf4541e6"
    if bdm:
        fields["block_device_mapping_v2"] = bdm
        image_ref = ""
    status, body, _ = api.request("POST", "/servers", {
        "server": dict({"name": name, "imageRef": image_ref,
                        "flavorRef": "1", "networks": "none"}, **fields),
        "os:scheduler_hints": {"group": group_id}}, microversion=MV)
    assert status == 202, body
    status, listed, _ = api.list_servers(
        reservation_id=body["reservation_id"], microversion=MV)
    assert status == 200, listed
    servers = [s["id"] for s in listed["servers"]]
    assert len(servers) == count
    return servers


def _settle(admin_api, server_id):
    """The server once its build ended: (status, host, fault message)."""
    def fetch():
        status, body, _ = admin_api.show_server(server_id,
                                                microversion="2.1")
        assert status == 200, body
        return body["server"]
    server = clients._wait(
        fetch, lambda s: s["status"] in ("ACTIVE", "ERROR")
        and s["OS-EXT-STS:task_state"] is None,
        "the build of %s" % server_id, 60, 0.1)
    return (server["status"], server["OS-EXT-SRV-ATTR:host"],
            (server.get("fault") or {}).get("message"))


def test_views_by_microversion_and_bad_input(api, admin_api):
    old = _group(api, "affinity", mv="2.1")
    assert sorted(old) == ["id", "members", "metadata", "name", "policies"]
    assert old["policies"] == ["affinity"] and old["metadata"] == {}
    shown = _show_group(api, old["id"], mv="2.13")
    assert shown["project_id"] == "demo" and shown["user_id"] == "alice"
    new = _show_group(api, old["id"])
    assert new["policy"] == "affinity" and new["rules"] == {}
    assert "policies" not in new and "metadata" not in new
    ruled = _group(api, "anti-affinity",
                   rules={"max_server_per_host": 2})
    assert ruled["rules"] == {"max_server_per_host": 2}

    def refused(body, mv="2.64"):
        status, answer, _ = api.request("POST", "/os-server-groups",
                                        {"server_group": body},
                                        microversion=mv)
        assert status == 400, answer
        return answer["badRequest"]["message"]

    # soft policies from 2.15, rules only for anti-affinity, policy from 2.64
    refused({"name": "x", "policies": ["soft-affinity"]}, mv="2.14")
    assert refused({"name": "x", "policy": "affinity",
                    "rules": {"max_server_per_host": 2}}) == (
        "Only anti-affinity policy supports rules.")
    refused({"name": "x", "policy": "anti-affinity",
             "rules": {"max_server_per_host": 0}})
    refused({"name": "x", "policy": "anti-affinity",
             "rules": {"other": 1}})
    refused({"name": "x", "policies": ["affinity"]})
    refused({"name": "x", "policy": "best-effort"})
    refused({"name": "x\x00", "policy": "affinity"})
    refused({"name": "x" * 256, "policy": "affinity"})
    refused({"name": "x", "policies": ["affinity", "anti-affinity"]},
            mv="2.1")

    # another project's group: listed for the admin with all_projects only,
    # refused to a stranger, unknown after its delete
    other = api.__class__(api.base_url, "bob:other")
    status, body, _ = other.request("GET", "/os-server-groups/%s"
                                    % old["id"], microversion="2.64")
    assert status == 403, body
    status, body, _ = other.request("DELETE", "/os-server-groups/%s"
                                    % old["id"])
    assert status == 403, body
    status, body, _ = admin_api.request("GET", "/os-server-groups")
    assert old["id"] not in [g["id"] for g in body["server_groups"]]
    status, body, _ = admin_api.request("GET", "/os-server-groups",
                                        params={"all_projects": "1"})
    assert old["id"] in [g["id"] for g in body["server_groups"]]
    status, body, _ = api.request("GET", "/os-server-groups",
                                  params={"all_projects": "1"})
    assert status == 200 and all(g["project_id"] == "demo"
                                 for g in body["server_groups"]
                                 if "project_id" in g)
    status, body, _ = api.request("GET", "/os-server-groups",
                                  params={"bogus": "1"}, microversion="2.75")
    assert status == 400, body
    assert api.request("DELETE", "/os-server-groups/%s" % old["id"])[0] == 204
    status, body, _ = api.request("GET", "/os-server-groups/%s" % old["id"])
    assert status == 404, body
    assert "could not be found" in body["itemNotFound"]["message"]
    # a create naming a group that is not there: 400, nothing created
    before = api.list_servers()[1]["servers"]
    status, body, _ = api.request("POST", "/servers", {
        "server": {"name": "lost", "flavorRef": "1", "networks": "none",
                   "imageRef": "155d900f-4e14-4e4c-a73d-069cbf4541e6"},
        "os:scheduler_hints": {"group": old["id"]}}, microversion=MV)
    assert status == 400, body
    assert api.list_servers()[1]["servers"] == before


def test_multiattach_readers_spread_by_anti_affinity(api, admin_api, volumes,
                                                      multiattach_type):
    """Three servers of one request share one multiattach volume in an
    anti-affinity group on three computes: each on a host of its own; a
    fourth server in the group has none left ("No valid host")."""
    group = _group(api)
    volume_id = _new_boot_volume(volumes, volume_type=multiattach_type)
    bdm = [{"boot_index": 0, "uuid": volume_id, "source_type": "volume",
            "destination_type": "volume", "attach_mode": "ro"}]
    servers = _create(api, group["id"], 3, bdm, name="readers")
    settled = [_settle(admin_api, s) for s in servers]
    assert [s[0] for s in settled] == ["ACTIVE"] * 3, settled
    assert sorted(s[1] for s in settled) == ["compute1", "compute2",
                                             "compute3"]
    assert sorted(_show_group(api, group["id"])["members"]) == sorted(servers)
    status, body, _ = api.show_server(servers[0], microversion="2.71")
    assert body["server"]["server_groups"] == [group["id"]]
    volume = volumes.wait_for_volume_status(volume_id, "in-use")
    assert sorted(a["server_id"] for a in volume["attachments"]) == sorted(
        servers)

    fourth = _create(api, group["id"], 1, name="fourth")[0]
    assert _settle(admin_api, fourth) == ("ERROR", None, NO_VALID_HOST)
    # a live migration would break the policy: refused at once
    status, body, _ = admin_api.request(
        "POST", "/servers/%s/action" % servers[0],
        {"os-migrateLive": {"host": settled[1][1],
                            "block_migration": "auto"}}, microversion="2.25")
    assert status == 400, body
    assert body["badRequest"]["message"].startswith("No valid host was found")
    assert _settle(admin_api, servers[0])[:2] == ("ACTIVE", settled[0][1])
    # the scheduler finds no destination either: the server stays
    admin_api.live_migrate(servers[0], None)
    assert _settle(admin_api, servers[0])[:2] == ("ACTIVE", settled[0][1])
    # a deleted member frees its host for the group: the migration goes
    # there, and a new member to the host it left
    admin_api.delete_server(fourth)
    api.delete_server(servers[2])
    api.wait_for_server_deleted(servers[2])
    assert servers[2] not in _show_group(api, group["id"])["members"]
    admin_api.live_migrate(servers[0], None)
    assert _settle(admin_api, servers[0])[:2] == ("ACTIVE", settled[2][1])
    again = _create(api, group["id"], 1, name="again")[0]
    assert _settle(admin_api, again)[:2] == ("ACTIVE", settled[0][1])


def test_four_servers_on_three_computes_fail_together(api, admin_api):
    """Nova's multi-create: when the group's hosts cannot take every server
    of the request, none is placed."""
    group = _group(api)
    servers = _create(api, group["id"], 4, name="four")
    settled = [_settle(admin_api, s) for s in servers]
    assert settled == [("ERROR", None, NO_VALID_HOST)] * 4


def test_affinity_and_max_server_per_host(api, admin_api):
    together = _group(api, "affinity")
    servers = _create(api, together["id"], 3, name="together")
    hosts = {_settle(admin_api, s)[1] for s in servers}
    assert len(hosts) == 1, hosts
    two_each = _group(api, rules={"max_server_per_host": 2})
    servers = _create(api, two_each["id"], 6, name="two-each")
    settled = [_settle(admin_api, s) for s in servers]
    assert sorted(s[1] for s in settled) == [
        "compute1", "compute1", "compute2", "compute2", "compute3",
        "compute3"], settled
    soft = _group(api, "soft-anti-affinity")
    servers = _create(api, soft["id"], 4, name="soft")
    hosts = sorted(_settle(admin_api, s)[1] for s in servers)
    # all placed; three hosts first, then a second server on one of them
    assert len(set(hosts)) == 3 and len(hosts) == 4, hosts


def test_concurrent_creates_never_break_anti_affinity(api, admin_api):
    """Eight creates into one anti-affinity group at once: three land, one
    per host; the others fail with "No valid host"; none shares a host."""
    group = _group(api)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        created = list(pool.map(
            lambda n: _create(api, group["id"], 1, name="race-%d" % n)[0],
            range(8)))
    settled = [_settle(admin_api, s) for s in created]
    active = [s for s in settled if s[0] == "ACTIVE"]
    assert sorted(s[1] for s in active) == ["compute1", "compute2",
                                            "compute3"], settled
    assert [s for s in settled if s[0] != "ACTIVE"] == [
        ("ERROR", None, NO_VALID_HOST)] * 5


def test_unshelve_of_a_member_keeps_the_policy(api, admin_api):
    """An offloaded member comes back on a host its anti-affinity group
    leaves free, not on the least loaded one."""
    group = _group(api)
    first, second = _create(api, group["id"], 2, name="shelf")
    hosts = {s: _settle(admin_api, s)[1] for s in (first, second)}
    status, body, _ = api.request("POST", "/servers/%s/action" % first,
                                  {"shelve": None}, microversion="2.37")
    assert status == 202, body
    api.wait_for_server_status(first, "SHELVED_OFFLOADED", timeout=30)
    third = _create(api, group["id"], 1, name="shelf-third")[0]
    hosts[third] = _settle(admin_api, third)[1]
    # the host the group leaves free is the busiest: the least loaded one
    # would break the policy
    free = ({"compute1", "compute2", "compute3"}
            - {hosts[second], hosts[third]}).pop()
    for n in range(3):
        status, body, _ = admin_api.create_server(
            name="busy-%d" % n, microversion="2.37",
            availability_zone="nova:%s" % free)
        assert status == 202, body
        assert _settle(admin_api, body["server"]["id"])[1] == free
    status, body, _ = api.request("POST", "/servers/%s/action" % first,
                                  {"unshelve": None}, microversion="2.37")
    assert status == 202, body
    assert _settle(admin_api, first)[:2] == ("ACTIVE", free)
