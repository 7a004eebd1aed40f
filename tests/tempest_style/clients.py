"""tempest's own compute client against volattach, without keystone.

``NoAuthProvider`` is a ``tempest.lib.auth.AuthProvider`` that hands out a
fixed base URL (``<api>/v2.1``) and a noauth token
(``<user>:<project>[:<roles>]``) instead of asking keystone, so that
``tempest.lib.services.compute.servers_client.ServersClient`` drives the API
exactly as a tempest run does: same URLs, same headers (the legacy
``X-OpenStack-Nova-API-Version``, whose echo it checks), and every response
validated with tempest's response schema of the microversion in use.

The microversion is tempest's module global
``base_compute_client.COMPUTE_MICROVERSION``; ``microversion()`` sets it
for a block and always puts the previous value back (what tempest's
``APIMicroversionFixture`` does around a test).

``Waiters`` polls the way tempest's waiters do (``wait_for_server_status``,
``wait_for_volume_resource_status``,
``wait_for_volume_attachment_remove_from_server``), with tempest's client for
the compute side and the plain volume client for the volume side.
"""
import contextlib
import time

from tempest.lib import auth
from tempest.lib import exceptions as lib_exc
from tempest.lib.services.compute import base_compute_client
from tempest.lib.services.compute import servers_client as tempest_servers

USER_TOKEN = "tempest:tempest-project"
OTHER_TOKEN = "intruder:other-project"
ADMIN_TOKEN = "admin:admin:admin"
# cinder calling swap: the service role, not admin
SERVICE_TOKEN = "cinder:service:service"


class NoAuthCredentials(auth.Credentials):
    """Credentials that are always valid: the token says who we are."""

    ATTRIBUTES = ["username", "project_id", "roles"]

    def is_valid(self):
        return True


class NoAuthProvider(auth.AuthProvider):
    """A fixed base URL and a noauth token, no identity service."""

    def __init__(self, base_url, token):
        self._base_url = base_url.rstrip("/")
        self._token = token
        user, project = token.split(":")[:2]
        super().__init__(NoAuthCredentials(username=user, project_id=project))

    def _get_auth(self):
        # (token, auth data): what tempest's providers cache
        return self._token, {"base_url": self._base_url}

    def _fill_credentials(self, auth_data_body):
        pass

    def is_expired(self, auth_data):
        return False

    def get_token(self):
        return self._token

    def base_url(self, filters, auth_data=None):
        return auth.apply_url_filters(self._base_url, filters or {})

    def _decorate_request(self, filters, method, url, headers=None, body=None,
                          auth_data=None):
        headers = dict(headers or {})
        headers["X-Auth-Token"] = self._token
        base = self.base_url(filters)
        full = base if not url else "%s/%s" % (base, url.lstrip("/"))
        return full, headers, body


def servers_client(api_url, token=USER_TOKEN):
    """tempest's ServersClient for ``token`` on the API at ``api_url``."""
    base = api_url.rstrip("/")
    if not base.endswith("/v2.1"):
        base += "/v2.1"
    return tempest_servers.ServersClient(
        NoAuthProvider(base, token), "compute", "RegionOne",
        build_interval=0.1, build_timeout=60)


@contextlib.contextmanager
def microversion(version):
    """Run the block at compute microversion ``version`` (None: no header,
    i.e. 2.1), as tempest's APIMicroversionFixture does."""
    previous = base_compute_client.COMPUTE_MICROVERSION
    base_compute_client.COMPUTE_MICROVERSION = version
    try:
        yield
    finally:
        base_compute_client.COMPUTE_MICROVERSION = previous


class Waiters:
    """tempest's waiters, polling every ``interval`` for at most ``timeout``."""

    def __init__(self, timeout=60.0, interval=0.2):
        self.timeout = timeout
        self.interval = interval

    def until(self, fetch, done, what):
        deadline = time.monotonic() + self.timeout
        while True:
            value = fetch()
            if done(value):
                return value
            if time.monotonic() > deadline:
                raise lib_exc.TimeoutException(
                    "%s not reached in %ss; last seen: %r"
                    % (what, self.timeout, value))
            time.sleep(self.interval)

    def server_status(self, client, server_id, status):
        """tempest's wait_for_server_status: the status, and no task."""
        def fetch():
            server = client.show_server(server_id)["server"]
            if server["status"] == "ERROR" and status != "ERROR":
                raise AssertionError("server %s went to ERROR waiting for %s: "
                                     "%s" % (server_id, status, server.get("fault")))
            return server

        return self.until(
            fetch, lambda s: (s["status"] == status
                              and s.get("OS-EXT-STS:task_state") is None),
            "server %s status %s" % (server_id, status))

    def server_deleted(self, client, server_id):
        def fetch():
            try:
                client.show_server(server_id)
            except lib_exc.NotFound:
                return True
            return False

        self.until(fetch, bool, "server %s deleted" % server_id)

    def volume_status(self, volumes, volume_id, status):
        """tempest's wait_for_volume_resource_status (error_* fails)."""
        def fetch():
            code, body, _ = volumes.show_volume(volume_id)
            assert code == 200, (code, body)
            volume = body["volume"]
            if volume["status"].startswith("error") and status != volume["status"]:
                raise AssertionError("volume %s went to %s waiting for %s"
                                     % (volume_id, volume["status"], status))
            return volume

        return self.until(fetch, lambda v: v["status"] == status,
                           "volume %s status %s" % (volume_id, status))

    def volume_deleted(self, volumes, volume_id):
        self.until(lambda: volumes.show_volume(volume_id)[0],
                    lambda code: code == 404, "volume %s deleted" % volume_id)

    def attachment_listed(self, list_attachments, volume_id):
        """Poll a list of attachments until ``volume_id`` is in it with a
        device name (what a 2.101 caller does after the 202)."""
        def fetch():
            return {a["volumeId"]: a for a in list_attachments()}

        return self.until(
            fetch, lambda atts: bool(atts.get(volume_id, {}).get("device")),
            "attachment of %s with a device" % volume_id)[volume_id]

    def attachment_removed(self, client, server_id, volume_id):
        """tempest's wait_for_volume_attachment_remove_from_server."""
        def fetch():
            return [a["volumeId"] for a in
                    client.list_volume_attachments(server_id)["volumeAttachments"]]

        self.until(fetch, lambda ids: volume_id not in ids,
                    "volume %s off server %s" % (volume_id, server_id))
