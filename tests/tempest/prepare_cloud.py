"""What devstack does for tempest before it runs, on volattach: create the
volume type ``multiattach`` (extra spec ``multiattach="<is> True"``) that
tempest.conf's ``[volume] volume_type_multiattach`` names.

    python prepare_cloud.py KEYSTONE_URL ADMIN_PASSWORD

Speaks the Cinder v3 API as Keystone's ``admin`` user, as devstack's
``openstack volume type create`` does; an existing type is kept.
"""
import json
import sys
import urllib.request


def _request(method, url, token=None, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    req.add_header("OpenStack-API-Version", "volume 3.0")
    if token:
        req.add_header("X-Auth-Token", token)
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.headers, json.loads(resp.read() or b"null")


def main(keystone_url, password):
    headers, body = _request("POST", keystone_url.rstrip("/") + "/v3/auth/tokens", body={
        "auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": "admin", "domain": {"id": "default"}, "password": password}}},
            "scope": {"project": {"name": "admin", "domain": {"id": "default"}}}}})
    token = headers["X-Subject-Token"]
    project = body["token"]["project"]["id"]
    volume = next(e["url"] for s in body["token"]["catalog"]
                  if s["type"] == "volumev3" for e in s["endpoints"]
                  if e["interface"] == "public")
    volume = volume.replace("$(project_id)s", project).replace("%(project_id)s", project)
    _, types = _request("GET", volume + "/types", token)
    if any(t["name"] == "multiattach" for t in types["volume_types"]):
        return
    _, created = _request("POST", volume + "/types", token,
                          {"volume_type": {"name": "multiattach"}})
    _request("POST", volume + "/types/%s/extra_specs" % created["volume_type"]["id"],
             token, {"extra_specs": {"multiattach": "<is> True"}})
    print("created volume type multiattach", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
