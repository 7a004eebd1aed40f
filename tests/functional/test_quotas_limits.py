"""os-quota-sets and /limits over real HTTP on the all-in-one deployment
(SQLite), and the quotas they set, enforced: instances, cores and ram at
create (single and multi-create, Nova's 403 message), metadata items, key
pairs per user, an update below the usage refused (400) unless forced, a
user's quota within the project's; [compute] max_disk_devices_to_attach at
create and attach; 20 parallel creates against a quota of 10."""
import uuid

import pytest

from tests.functional import quota_race
from tests.integration import client as clients

# Nova's defaults (the functional tier lifts the server quotas)
CONF_OVERRIDES = {("compute", "max_disk_devices_to_attach"): 2,
                  ("quota", "instances"): 10, ("quota", "cores"): 20,
                  ("quota", "ram"): 51200}

NOVA_DEFAULTS = {"instances": 10, "cores": 20, "ram": 51200,
                 "metadata_items": 128, "key_pairs": 100,
                 "server_groups": 10, "server_group_members": 10}


@pytest.fixture
def project():
    return "p-%s" % uuid.uuid4().hex[:8]


@pytest.fixture
def user(deployment, project):
    return clients.ComputeClient(deployment.api_url, "alice:%s" % project)


def _quota(api, project, method="GET", suffix="", body=None, mv="2.1", **params):
    return api.request(method, "/os-quota-sets/%s%s" % (project, suffix),
                       body, params=params or None, microversion=mv)[:2]


def _set(admin_api, project, mv="2.1", **values):
    status, body = _quota(admin_api, project, "PUT",
                          body={"quota_set": values}, mv=mv)
    assert status == 200, body
    return body["quota_set"]


def _create(api, **fields):
    fields.setdefault("name", "q-%s" % uuid.uuid4().hex[:6])
    return api.create_server(microversion="2.37", **fields)[:2]


def test_defaults_show_and_microversion_removals(user, project):
    status, body = _quota(user, project, suffix="/defaults")
    assert status == 200
    quota_set = body["quota_set"]
    assert quota_set["id"] == project
    assert {k: quota_set[k] for k in NOVA_DEFAULTS} == NOVA_DEFAULTS
    assert "fixed_ips" in quota_set and "injected_files" in quota_set
    at_236 = _quota(user, project, mv="2.36")[1]["quota_set"]
    assert "fixed_ips" not in at_236 and "injected_files" in at_236
    at_257 = _quota(user, project, mv="2.57")[1]["quota_set"]
    assert set(at_257) == set(NOVA_DEFAULTS) | {"id"}
    # another project's quotas are not a member's to read or set
    assert _quota(user, "someone-else")[0] == 403
    assert _quota(user, project, "PUT", body={"quota_set": {"instances": 5}})[0] == 403


def test_instances_quota_update_detail_limits_and_delete(user, admin_api,
                                                          project):
    assert _set(admin_api, project, instances=2)["instances"] == 2
    for _ in range(2):
        assert _create(user)[0] == 202
    status, body = _create(user)
    assert status == 403, body
    assert body["forbidden"]["message"] == (
        "Quota exceeded for instances: Requested 1, but already used 2 of 2 "
        "instances")
    # below the usage: 400, unless forced
    status, body = _quota(admin_api, project, "PUT",
                          body={"quota_set": {"instances": 1}})
    assert status == 400 and "must be greater than or equal to already used" \
        in body["badRequest"]["message"], body
    assert _set(admin_api, project, instances=1, force=True)["instances"] == 1
    detail = _quota(user, project, suffix="/detail")[1]["quota_set"]
    assert detail["instances"] == {"limit": 1, "in_use": 2, "reserved": 0}
    assert detail["cores"] == {"limit": 20, "in_use": 2, "reserved": 0}
    assert detail["ram"]["in_use"] == 1024
    absolute = user.request("GET", "/limits")[1]["limits"]["absolute"]
    assert (absolute["maxTotalInstances"], absolute["totalInstancesUsed"],
            absolute["totalCoresUsed"], absolute["totalRAMUsed"],
            absolute["maxServerMeta"]) == (1, 2, 2, 1024, 128)
    assert "maxImageMeta" in absolute and "maxSecurityGroups" in absolute
    at_257 = user.request("GET", "/limits", microversion="2.57")[1]
    assert not {"maxImageMeta", "maxPersonality", "maxSecurityGroups",
                "totalFloatingIpsUsed"} & set(at_257["limits"]["absolute"])
    # an admin reads another project's limits; a member may not
    other = admin_api.request("GET", "/limits", params={"tenant_id": project})
    assert other[1]["limits"]["absolute"]["totalInstancesUsed"] == 2
    assert user.request("GET", "/limits",
                        params={"tenant_id": "x"})[0] == 403
    assert user.request("GET", "/limits", params={"bogus": "1"},
                        microversion="2.75")[0] == 400
    # delete: the defaults again
    assert _quota(admin_api, project, "DELETE")[0] == 202
    assert _quota(user, project)[1]["quota_set"]["instances"] == 10


def test_cores_ram_and_multi_create(user, admin_api, project):
    _set(admin_api, project, instances=3, cores=20, ram=51200)
    assert _create(user)[0] == 202
    # max_count 5, min_count 1: the two that fit
    status, body = _create(user, min_count=1, max_count=5,
                           return_reservation_id=True)
    assert status == 202, body
    status, body, _ = user.list_servers(reservation_id=body["reservation_id"])
    assert len(body["servers"]) == 2
    _set(admin_api, project, instances=10, cores=4)
    status, body = _create(user, min_count=2, max_count=2)
    assert status == 403
    assert body["forbidden"]["message"] == (
        "Quota exceeded for cores: Requested 2, but already used 3 of 4 cores")
    _set(admin_api, project, cores=20, ram=2000)
    status, body = _create(user, flavorRef="2")      # 2048 MB
    assert status == 403 and "Quota exceeded for ram: Requested 2048, but " \
        "already used 1536 of 2000 ram" == body["forbidden"]["message"]


def test_user_quota_within_the_project(user, admin_api, project):
    _set(admin_api, project, instances=5)
    status, body = admin_api.request(
        "PUT", "/os-quota-sets/%s" % project,
        {"quota_set": {"instances": 1}}, params={"user_id": "alice"})[:2]
    assert status == 200 and body["quota_set"]["instances"] == 1
    shown = admin_api.request("GET", "/os-quota-sets/%s" % project,
                              params={"user_id": "alice"})[1]
    assert shown["quota_set"]["instances"] == 1
    assert _quota(user, project)[1]["quota_set"]["instances"] == 5
    assert _create(user)[0] == 202
    assert _create(user)[0] == 403
    # another user of the project has the project's quota
    bob = clients.ComputeClient(user.base_url, "bob:%s" % project)
    assert _create(bob)[0] == 202
    # a user's limit above the project's is refused
    status, _ = admin_api.request(
        "PUT", "/os-quota-sets/%s" % project,
        {"quota_set": {"instances": 6}}, params={"user_id": "alice"})[:2]
    assert status == 400


def test_key_pairs_quota_per_user(deployment, admin_api, project):
    _set(admin_api, project, key_pairs=1)
    user = clients.ComputeClient(deployment.api_url, "kp-%s:%s" % (
        uuid.uuid4().hex[:6], project))
    assert user.request("POST", "/os-keypairs",
                        {"keypair": {"name": "one"}})[0] == 200
    status, body, _ = user.request("POST", "/os-keypairs",
                                   {"keypair": {"name": "two"}})
    assert status == 403 and body["forbidden"]["message"] == (
        "Maximum number of key pairs exceeded")
    assert [k["keypair"]["name"] for k in
            user.request("GET", "/os-keypairs")[1]["keypairs"]] == ["one"]


def test_bad_quota_bodies(admin_api, project):
    for body in ({"quota_set": {"instances": -2}},
                 {"quota_set": {"instances": "ten"}},
                 {"quota_set": {"instances": 2 ** 31}},
                 {"quota_set": {"bogus": 1}},
                 {"quota_set": {"instances": "1\u0000"}},
                 {"quota_set": {"networks": 1}}, {}):
        status, reply = _quota(admin_api, project, "PUT", body=body)
        assert status == 400, (body, reply)
    status, _ = _quota(admin_api, project, "PUT",
                       body={"quota_set": {"fixed_ips": 1}}, mv="2.36")
    assert status == 400
    status, _ = _quota(admin_api, project, "PUT",
                       body={"quota_set": {"injected_files": 1}}, mv="2.57")
    assert status == 400
    assert _quota(admin_api, project)[1]["quota_set"]["instances"] == 10


def test_max_disk_devices_at_create_and_attach(deployment, user, project):
    volumes = clients.VolumeClient(deployment.volume_url, "alice:%s" % project)
    ids = []
    for _ in range(2):
        status, body, _ = volumes.create_volume(size=1)
        assert status == 202, body
        volumes.wait_for_volume_status(body["volume"]["id"], "available")
        ids.append(body["volume"]["id"])
    # the image root and two volumes: three disks, over 2
    status, body = _create(user, block_device_mapping_v2=[
        {"source_type": "volume", "destination_type": "volume", "uuid": v,
         "boot_index": None} for v in ids])
    assert status == 403, body
    assert body["forbidden"]["message"] == (
        "The maximum allowed number of disk devices (2) to attach to a single "
        "instance has been exceeded.")
    assert all(volumes.show_volume(v)[1]["volume"]["status"] == "available"
               for v in ids)
    status, body = _create(user)
    server_id = body["server"]["id"]
    user.wait_for_server_status(server_id, "ACTIVE")
    assert user.attach_volume(server_id, ids[0], microversion="2.20")[0] == 200
    status, body, _ = user.attach_volume(server_id, ids[1], microversion="2.20")
    assert status == 403, body


def test_twenty_parallel_creates_against_a_quota_of_ten(deployment):
    quota_race.twenty_creates_against_ten(deployment)


def test_quota_classes_and_the_default_class(user, admin_api, project):
    status, body, _ = admin_api.request("GET", "/os-quota-class-sets/default")
    assert status == 200 and body["quota_class_set"]["id"] == "default"
    assert "server_groups" not in body["quota_class_set"]      # below 2.50
    assert "fixed_ips" in body["quota_class_set"]
    shown = admin_api.request("GET", "/os-quota-class-sets/default",
                              microversion="2.57")[1]["quota_class_set"]
    assert set(shown) == set(NOVA_DEFAULTS) | {"id"}
    assert user.request("GET", "/os-quota-class-sets/default")[0] == 403
    assert user.request("PUT", "/os-quota-class-sets/default",
                        {"quota_class_set": {"instances": 1}})[0] == 403
    status, body, _ = admin_api.request(
        "PUT", "/os-quota-class-sets/default",
        {"quota_class_set": {"instances": 7}}, microversion="2.57")
    try:
        assert status == 200 and body["quota_class_set"]["instances"] == 7
        assert "id" not in body["quota_class_set"]
        # the default class's limits are every project's defaults
        assert _quota(user, project)[1]["quota_set"]["instances"] == 7
        assert _quota(user, project, suffix="/defaults")[1]["quota_set"][
            "instances"] == 7
        assert admin_api.request(
            "PUT", "/os-quota-class-sets/default",
            {"quota_class_set": {"networks": 1}})[0] == 400
    finally:
        admin_api.request("PUT", "/os-quota-class-sets/default",
                          {"quota_class_set": {"instances": 10}})
    assert _quota(user, project)[1]["quota_set"]["instances"] == 10
