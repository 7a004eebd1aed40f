"""Small HTTP clients for the integration tests, the way tempest drives us.

Every call returns ``(status, body, headers)``: the HTTP status code, the
decoded JSON body (the text when it is not JSON, None when empty) and the
response headers.  Nothing raises on an error status: tests assert on it.
The ``wait_*`` helpers poll with a bounded timeout and raise
``AssertionError`` with the last state they saw.

Authentication is volattach's noauth token ``<user>:<project>[:<roles>]``.
"""
import json
import time
import uuid

import requests

ADMIN_TOKEN = "admin:admin:admin"
DEFAULT_IMAGE = "155d900f-4e14-4e4c-a73d-069cbf4541e6"
REQUEST_TIMEOUT = 60


def _decode(response):
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return response.text


class _HTTPClient:

    def __init__(self, base_url, token):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.session = requests.Session()

    def _version_headers(self, microversion):
        return {}

    def request(self, method, path, body=None, params=None, headers=None,
                microversion=None):
        """One request to ``base_url + path``; returns (status, body, headers)."""
        all_headers = {"X-Auth-Token": self.token, "Accept": "application/json"}
        all_headers.update(self._version_headers(microversion))
        data = None
        if body is not None:
            all_headers["Content-Type"] = "application/json"
            data = json.dumps(body)
        all_headers.update(headers or {})
        response = self.session.request(
            method, self.base_url + path, data=data, params=params,
            headers=all_headers, timeout=REQUEST_TIMEOUT)
        return response.status_code, _decode(response), response.headers

    def close(self):
        self.session.close()


def _wait(fetch, done, describe, timeout, interval):
    """Call ``fetch()`` until ``done(result)`` is true (or raises)."""
    deadline = time.monotonic() + timeout
    while True:
        result = fetch()
        if done(result):
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"timed out after {timeout}s waiting for {describe}; "
                f"last seen: {result!r}")
        time.sleep(interval)


class ComputeClient(_HTTPClient):
    """The compute API (``/v2.1``) at one microversion (per-call override)."""

    def __init__(self, api_url, token=ADMIN_TOKEN, microversion="2.1"):
        base = api_url.rstrip("/")
        if not base.endswith("/v2.1"):
            base += "/v2.1"
        super().__init__(base, token)
        self.microversion = microversion

    def _version_headers(self, microversion):
        version = microversion or self.microversion
        if not version:
            return {}
        return {"OpenStack-API-Version": f"compute {version}",
                "X-OpenStack-Nova-API-Version": version}

    # servers

    def list_servers(self, detail=False, microversion=None, **params):
        path = "/servers/detail" if detail else "/servers"
        return self.request("GET", path, params=params or None,
                            microversion=microversion)

    def create_server(self, name="s1", image_ref=DEFAULT_IMAGE, flavor_ref="1",
                      networks="none", microversion=None, **fields):
        server = {"name": name, "imageRef": image_ref, "flavorRef": flavor_ref}
        if networks is not None:
            server["networks"] = networks
        server.update(fields)
        return self.request("POST", "/servers", {"server": server},
                            microversion=microversion)

    def create_active_server(self, microversion="2.37", **wait):
        """A new server (a name of its own) once ACTIVE; its id."""
        code, body, _ = self.create_server(
            name="s-%s" % uuid.uuid4().hex[:6], microversion=microversion)
        assert code == 202, body
        self.wait_for_server_status(body["server"]["id"], "ACTIVE", **wait)
        return body["server"]["id"]

    def show_server(self, server_id, microversion=None):
        return self.request("GET", f"/servers/{server_id}",
                            microversion=microversion)

    def delete_server(self, server_id, microversion=None):
        return self.request("DELETE", f"/servers/{server_id}",
                            microversion=microversion)

    def wait_for_server_status(self, server_id, status, timeout=60,
                               interval=0.5):
        """Poll until the server has ``status`` and no task; return it.

        Fails at once when the server goes to ERROR (unless that is the
        status wanted) or disappears.
        """
        def fetch():
            code, body, _ = self.show_server(server_id)
            if code == 404:
                raise AssertionError(f"server {server_id} disappeared while "
                                     f"waiting for {status}")
            assert code == 200, (code, body)
            server = body["server"]
            if server["status"] == "ERROR" and status != "ERROR":
                raise AssertionError(f"server {server_id} went to ERROR "
                                     f"waiting for {status}: {server}")
            return server

        def done(server):
            return (server["status"] == status
                    and server.get("OS-EXT-STS:task_state") is None)

        return _wait(fetch, done, f"server {server_id} to be {status}",
                     timeout, interval)

    def server_host(self, server_id):
        """The server's ``OS-EXT-SRV-ATTR:host`` (admin)."""
        code, body, _ = self.show_server(server_id, microversion="2.1")
        assert code == 200, (code, body)
        return body["server"]["OS-EXT-SRV-ATTR:host"]

    def live_migrate(self, server_id, host, timeout=60, interval=0.05):
        """os-migrateLive to ``host`` (admin, 2.25); poll until the
        server's task_state is None again and return it."""
        code, body, _ = self.request(
            "POST", f"/servers/{server_id}/action",
            {"os-migrateLive": {"host": host, "block_migration": "auto"}},
            microversion="2.25")
        assert code == 202, (code, body)
        return _wait(
            lambda: self.show_server(server_id, microversion="2.1")[1]["server"],
            lambda server: server["OS-EXT-STS:task_state"] is None,
            f"the live migration of {server_id} to {host}", timeout, interval)

    def wait_for_server_deleted(self, server_id, timeout=60, interval=0.5):
        """Poll until GET of the server answers 404."""
        _wait(lambda: self.show_server(server_id),
              lambda result: result[0] == 404,
              f"server {server_id} to be deleted", timeout, interval)

    # volume attachments

    def list_volume_attachments(self, server_id, microversion=None, **params):
        return self.request("GET", f"/servers/{server_id}/os-volume_attachments",
                            params=params or None, microversion=microversion)

    def show_volume_attachment(self, server_id, volume_id, microversion=None):
        return self.request(
            "GET", f"/servers/{server_id}/os-volume_attachments/{volume_id}",
            microversion=microversion)

    def attach_volume(self, server_id, volume_id, microversion=None, **fields):
        """POST os-volume_attachments; ``fields`` add e.g. device, tag."""
        attachment = {"volumeId": volume_id}
        attachment.update(fields)
        return self.request(
            "POST", f"/servers/{server_id}/os-volume_attachments",
            {"volumeAttachment": attachment}, microversion=microversion)

    def detach_volume(self, server_id, volume_id, microversion=None):
        return self.request(
            "DELETE", f"/servers/{server_id}/os-volume_attachments/{volume_id}",
            microversion=microversion)

    def wait_for_volume_attachment_gone(self, server_id, volume_id,
                                        timeout=60, interval=0.5):
        """Poll until the server's attachment list no longer has the volume."""
        def fetch():
            code, body, _ = self.list_volume_attachments(server_id)
            assert code == 200, (code, body)
            return body["volumeAttachments"]

        return _wait(fetch,
                     lambda atts: all(a["volumeId"] != volume_id for a in atts),
                     f"volume {volume_id} to leave server {server_id}",
                     timeout, interval)

    # services

    def list_services(self, microversion=None, **params):
        return self.request("GET", "/os-services", params=params or None,
                            microversion=microversion)


class VolumeClient(_HTTPClient):
    """The Cinder-compatible volume service (``/v3/{project_id}``)."""

    ERROR_STATUSES = ("error", "error_deleting", "error_extending",
                      "error_managing", "error_restoring")

    def __init__(self, volume_url, token=ADMIN_TOKEN, microversion="3.54"):
        base = volume_url.rstrip("/")
        if base.endswith("/v3"):
            base = base[:-len("/v3")]
        super().__init__(base, token)
        self.project_id = token.split(":")[1]
        self.microversion = microversion

    def _version_headers(self, microversion):
        version = microversion or self.microversion
        return {"OpenStack-API-Version": f"volume {version}"} if version else {}

    def _path(self, path):
        return f"/v3/{self.project_id}{path}"

    def create_volume(self, size=1, name=None, microversion=None, **fields):
        volume = {"size": size}
        if name is not None:
            volume["name"] = name
        volume.update(fields)
        return self.request("POST", self._path("/volumes"), {"volume": volume},
                            microversion=microversion)

    def show_volume(self, volume_id, microversion=None):
        return self.request("GET", self._path(f"/volumes/{volume_id}"),
                            microversion=microversion)

    def attachment_hosts(self, volume_id):
        """[(attachment id, host name)] of the volume's attachments."""
        code, body, _ = self.show_volume(volume_id)
        assert code == 200, (code, body)
        return [(a["attachment_id"], a["host_name"])
                for a in body["volume"]["attachments"]]

    def list_volumes(self, detail=True, microversion=None, **params):
        path = "/volumes/detail" if detail else "/volumes"
        return self.request("GET", self._path(path), params=params or None,
                            microversion=microversion)

    def delete_volume(self, volume_id, microversion=None):
        return self.request("DELETE", self._path(f"/volumes/{volume_id}"),
                            microversion=microversion)

    def begin_migration(self, volume_id, migration_status="migrating"):
        """Set the volume's migration_status with os-reset_status (admin),
        as the volume service does when it starts a retype or migration:
        the compute API swaps an attached volume only then (OSSN-0094).
        The volume service's own retype and migrate drive a real swap end
        to end (tests/functional/volume/test_volume_retype_swap_e2e.py);
        this lets a test reach the compute swap alone."""
        code, body, _ = self.request(
            "POST", self._path(f"/volumes/{volume_id}/action"),
            {"os-reset_status": {"migration_status": migration_status}})
        assert code == 202, (code, body)

    def create_available_volume(self, size=1, **wait):
        """A new volume once available; its id."""
        code, body, _ = self.create_volume(size=size)
        assert code == 202, body
        self.wait_for_volume_status(body["volume"]["id"], "available", **wait)
        return body["volume"]["id"]

    def wait_for_volume_status(self, volume_id, status, timeout=60,
                               interval=0.5):
        """Poll until the volume has ``status``; return the volume.

        Fails at once on an error status other than the one wanted.
        """
        def fetch():
            code, body, _ = self.show_volume(volume_id)
            assert code == 200, (code, body)
            volume = body["volume"]
            if volume["status"] in self.ERROR_STATUSES and volume["status"] != status:
                raise AssertionError(f"volume {volume_id} went to "
                                     f"{volume['status']} waiting for {status}: "
                                     f"{volume}")
            return volume

        return _wait(fetch, lambda volume: volume["status"] == status,
                     f"volume {volume_id} to be {status}", timeout, interval)

    def wait_for_volume_deleted(self, volume_id, timeout=60, interval=0.5):
        _wait(lambda: self.show_volume(volume_id),
              lambda result: result[0] == 404,
              f"volume {volume_id} to be deleted", timeout, interval)

    def create_volume_type(self, name, extra_specs=None, is_public=True,
                           description=None, microversion=None):
        volume_type = {"name": name, "os-volume-type-access:is_public": is_public}
        if extra_specs:
            volume_type["extra_specs"] = extra_specs
        if description is not None:
            volume_type["description"] = description
        return self.request("POST", self._path("/types"),
                            {"volume_type": volume_type},
                            microversion=microversion)

    def list_attachments(self, microversion=None, **params):
        """GET /attachments (3.27+); e.g. ``volume_id=...`` filters."""
        return self.request("GET", self._path("/attachments"),
                            params=params or None, microversion=microversion)
