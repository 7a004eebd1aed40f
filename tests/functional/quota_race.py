"""The quota race shared by the SQLite and PostgreSQL functional modules:
20 creates at once against an instances quota of 10."""
import concurrent.futures
import uuid

from tests.integration import client as clients


def twenty_creates_against_ten(deployment):
    """20 parallel creates (each its own HTTP client) in a project whose
    instances quota is 10: exactly 10 are accepted (202) and 10 refused
    with Nova's 403, and the project holds 10 servers, never 11."""
    project = "race-%s" % uuid.uuid4().hex[:8]
    admin = clients.ComputeClient(deployment.api_url, "admin:admin:admin")
    status, body, _ = admin.request("PUT", "/os-quota-sets/%s" % project,
                                    {"quota_set": {"instances": 10}})
    assert status == 200, body
    token = "racer:%s" % project

    def create(index):
        api = clients.ComputeClient(deployment.api_url, token)
        try:
            return api.create_server(name="race-%d" % index,
                                     microversion="2.37")[:2]
        finally:
            api.close()

    with concurrent.futures.ThreadPoolExecutor(20) as pool:
        results = list(pool.map(create, range(20)))
    statuses = sorted(status for status, _ in results)
    assert statuses == [202] * 10 + [403] * 10, results
    refusal = next(body for status, body in results if status == 403)
    assert refusal["forbidden"]["message"].startswith(
        "Quota exceeded for instances: Requested 1, but already used 10 of "
        "10 instances"), refusal
    api = clients.ComputeClient(deployment.api_url, token)
    status, body, _ = api.list_servers()
    assert status == 200 and len(body["servers"]) == 10, body
    status, body, _ = api.request("GET", "/limits")
    assert body["limits"]["absolute"]["totalInstancesUsed"] == 10
    for server in body.get("servers", []):
        api.delete_server(server["id"])
    return project
