"""Compute API calls tempest makes around attachments, over real HTTP with
every role in one process: os-server-ips, instance actions of a deleted
server (2.21+), os-services by Nova's binary names, the os-volumes proxy."""


def _active_server(api, name):
    status, body, _ = api.create_server(name=name, microversion="2.37")
    assert status == 202, body
    server_id = body["server"]["id"]
    api.wait_for_server_status(server_id, "ACTIVE")
    return server_id


def test_ips_and_deleted_server_actions(api):
    server_id = _active_server(api, "gaps-1")
    status, body, _ = api.request("GET", "/servers/%s/ips" % server_id)
    assert (status, body) == (200, {"addresses": {}})
    status, body, _ = api.request("GET", "/servers/%s/ips/private" % server_id)
    assert status == 404, body

    status, body, _ = api.delete_server(server_id)
    assert status == 204, body
    api.wait_for_server_deleted(server_id)
    path = "/servers/%s/os-instance-actions" % server_id
    status, body, _ = api.request("GET", path, microversion="2.20")
    assert status == 404, body
    status, body, _ = api.request("GET", path, microversion="2.21")
    assert status == 200, body
    actions = [a["action"] for a in body["instanceActions"]]
    assert "create" in actions and "delete" in actions, actions
    request_id = body["instanceActions"][0]["request_id"]
    status, body, _ = api.request("GET", "%s/%s" % (path, request_id),
                                  microversion="2.21")
    assert status == 200, body


def test_services_by_nova_binary_names(admin_api):
    status, body, _ = admin_api.request(
        "GET", "/os-services", params={"binary": "nova-compute"})
    assert status == 200, body
    assert sorted(s["host"] for s in body["services"]) == [
        "compute1", "compute2"]
    status, body, _ = admin_api.request(
        "GET", "/os-services", params={"binary": "nova-conductor"})
    assert [s["binary"] for s in body["services"]] == ["nova-conductor"]


def test_os_volumes_proxy(api):
    status, body, _ = api.request(
        "POST", "/os-volumes",
        {"volume": {"size": 1, "display_name": "proxied"}})
    assert status == 200, body
    volume_id = body["volume"]["id"]
    assert body["volume"]["displayName"] == "proxied"
    status, body, _ = api.request("GET", "/os-volumes/%s" % volume_id)
    assert status == 200, body
    assert body["volume"]["attachments"] == [{}]
    status, body, _ = api.request("GET", "/os-volumes/detail")
    assert volume_id in [v["id"] for v in body["volumes"]]
    status, body, _ = api.request("GET", "/os-volumes", microversion="2.36")
    assert status == 404, body
    status, body, _ = api.request("DELETE", "/os-volumes/%s" % volume_id)
    assert status == 202, body
