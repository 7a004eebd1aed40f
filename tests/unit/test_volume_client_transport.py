"""volume_client.cinder over volume_client.http_transport against loopback servers: what
is sent again after a connection drops, and which token goes with calls
that have no caller (a fake identity endpoint hands out a service token)."""
import http.server
import json
import threading
import urllib.parse
import uuid

import pytest
from keystoneauth1 import loading
from oslo_config import cfg

from volattach import conf as volattach_conf
from volattach import context as volattach_context
from volattach import exception
from volattach.volume_client import cinder
from volattach.volume_client import http_transport

USER_CTX = volattach_context.RequestContext(
    user_id="u1", project_id="p1", auth_token="user-token", overwrite=False)


class FakeVolumeService(http.server.ThreadingHTTPServer):
    """Records every request; ``drop`` lists (method, path prefix) whose
    next request is applied (a create is committed) and then answered by
    closing the connection without a byte."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _VolumeHandler)
        self.requests = []
        self.attachments = {}
        self.drop = []
        self.lock = threading.Lock()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d/v3" % self.server_address[1]

    def count(self, method, prefix):
        return sum(1 for m, p, _h in self.requests
                   if m == method and p.startswith(prefix))


class _VolumeHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self, method):
        server = self.server
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        parts = urllib.parse.urlsplit(self.path)
        path = parts.path
        with server.lock:
            server.requests.append((method, path, dict(
                self.headers, client_port=self.client_address[1],
                target=self.path)))
            drop = next((d for d in server.drop
                         if d[0] == method and path.startswith(d[1])), None)
            if drop:
                server.drop.remove(drop)
        if method == "POST" and path.endswith("/attachments"):
            att = {"id": str(uuid.uuid4()), "status": "reserved",
                   "volume_id": body["attachment"]["volume_uuid"],
                   "instance": body["attachment"]["instance_uuid"]}
            server.attachments[att["id"]] = att   # committed
            reply = (200, {"attachment": att})
        elif method == "GET" and path.endswith("/attachments"):
            query = urllib.parse.parse_qs(parts.query)
            found = [a for a in server.attachments.values()
                     if a["volume_id"] in query.get("volume_id", [a["volume_id"]])
                     and a["instance"] in query.get("instance_id", [a["instance"]])]
            reply = (200, {"attachments": found})
        elif method == "GET" and "/attachments/" in path:
            att = server.attachments.get(path.rsplit("/", 1)[1])
            reply = ((200, {"attachment": att}) if att else
                     (404, {"itemNotFound": {"code": 404, "message": "no"}}))
        elif method == "POST" and path.endswith("/action"):
            reply = (202, {})
        elif method == "GET" and "/volumes/" in path:
            reply = (200, {"volume": {"id": path.rsplit("/", 1)[1],
                                      "status": "available"}})
        else:
            reply = (404, {"itemNotFound": {"code": 404, "message": path}})
        if drop:
            self.close_connection = True
            self.connection.close()   # applied, never answered
            return
        self._answer(*reply)

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")


@pytest.fixture
def volume_service():
    server = FakeVolumeService()
    yield server
    server.shutdown()
    server.server_close()


def make_conf(endpoint, **cinder_opts):
    conf = cfg.ConfigOpts()
    volattach_conf.register_opts(conf)
    conf([], default_config_files=[])
    conf.set_override("endpoint", endpoint, group="cinder")
    conf.set_override("retry_seconds", 3, group="cinder")
    for key, value in cinder_opts.items():
        conf.set_override(key, value, group="cinder")
    return conf


def test_create_applied_then_dropped_is_found_not_sent_again(volume_service):
    api = cinder.VolumeAPI(make_conf(volume_service.endpoint))
    volume_service.drop.append(("POST", "/v3/p1/attachments"))
    created = api.attachment_create(USER_CTX, "vol-1", "server-1")
    assert len(volume_service.attachments) == 1
    (only,) = volume_service.attachments.values()
    assert created["id"] == only["id"]
    assert volume_service.count("POST", "/v3/p1/attachments") == 1
    assert volume_service.count("GET", "/v3/p1/attachments") == 2  # list, get


def test_create_dropped_before_commit_is_sent_again(volume_service):
    """Nothing was committed (the drop happened on the list): the create
    goes once more, and one attachment exists."""
    api = cinder.VolumeAPI(make_conf(volume_service.endpoint))

    class NeverCommitted(dict):
        armed = True

        def __setitem__(self, key, value):
            if self.armed:
                self.armed = False
                return   # the first create is lost before its commit
            super().__setitem__(key, value)
    volume_service.attachments = NeverCommitted()
    volume_service.drop.append(("POST", "/v3/p1/attachments"))
    created = api.attachment_create(USER_CTX, "vol-1", "server-1")
    assert list(volume_service.attachments) == [created["id"]]
    assert volume_service.count("POST", "/v3/p1/attachments") == 2


def test_other_posts_are_never_sent_twice(volume_service):
    api = cinder.VolumeAPI(make_conf(volume_service.endpoint))
    volume_service.drop.append(("POST", "/v3/p1/volumes/v1/action"))
    with pytest.raises(exception.CinderConnectionFailed):
        api.begin_detaching(USER_CTX, "v1")
    assert volume_service.count("POST", "/v3/p1/volumes/v1/action") == 1


@pytest.mark.parametrize("call, path", [
    (lambda api: api.attachment_complete(USER_CTX, "a1"),
     "/v3/p1/attachments/a1/action"),
    (lambda api: api.roll_detaching(USER_CTX, "v1"),
     "/v3/p1/volumes/v1/action")], ids=["os-complete", "os-roll_detaching"])
def test_actions_that_set_a_state_are_sent_again(volume_service, call, path):
    """The conductor's one retry layer for the volume service is this
    client: a state-setting action cut off unanswered goes once more."""
    api = cinder.VolumeAPI(make_conf(volume_service.endpoint))
    volume_service.drop.append(("POST", path))
    call(api)
    assert volume_service.count("POST", path) == 2


def test_idempotent_calls_are_sent_again(volume_service):
    api = cinder.VolumeAPI(make_conf(volume_service.endpoint))
    volume_service.drop.append(("GET", "/v3/p1/volumes/v9"))
    assert api.get(USER_CTX, "v9")["id"] == "v9"
    assert volume_service.count("GET", "/v3/p1/volumes/v9") == 2


def test_connection_is_kept_alive(volume_service):
    api = cinder.VolumeAPI(make_conf(volume_service.endpoint))
    for _ in range(3):
        api.get(USER_CTX, "v1")
    ports = {h["client_port"] for _m, _p, h in volume_service.requests}
    assert len(volume_service.requests) == 3 and len(ports) == 1


def test_environment_proxy_is_used_unless_no_proxy(volume_service,
                                                   monkeypatch):
    for name in ("http_proxy", "HTTP_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:%d"
                       % volume_service.server_address[1])
    api = cinder.VolumeAPI(make_conf("http://volume.invalid:8776/v3"))
    assert api.get(USER_CTX, "v1")["id"] == "v1"
    (_m, path, headers), = volume_service.requests
    assert headers["target"] == "http://volume.invalid:8776/v3/p1/volumes/v1"
    monkeypatch.setenv("no_proxy", "volume.invalid")
    api = cinder.VolumeAPI(make_conf("http://volume.invalid:8776/v3",
                                     retry_seconds=0))
    with pytest.raises(exception.CinderConnectionFailed):
        api.get(USER_CTX, "v1")
    assert len(volume_service.requests) == 1


def test_refused_connection_is_not_sent():
    transport = http_transport.Transport(make_conf("http://x").cinder)
    with pytest.raises(http_transport.NotSent):
        transport.request("POST", "http://127.0.0.1:9/v3", {}, b"{}")


# -- keystone: calls without a caller use the [cinder] service credentials --

class FakeIdentity(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _IdentityHandler)
        self.issued = 0
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def auth_url(self):
        return "http://127.0.0.1:%d/v3" % self.server_address[1]


class _IdentityHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length))
        password = request["auth"]["identity"]["password"]["user"]
        if password["name"] != "nova" or password["password"] != "secret":
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.server.issued += 1
        body = json.dumps({"token": {
            "methods": ["password"], "expires_at": "2099-01-01T00:00:00Z",
            "issued_at": "2026-01-01T00:00:00Z",
            "user": {"id": "nova-id", "name": "nova",
                     "domain": {"id": "default", "name": "Default"}},
            "project": {"id": "service-project-id", "name": "service",
                        "domain": {"id": "default", "name": "Default"}},
            "roles": [{"id": "r1", "name": "service"}], "catalog": []}
        }).encode()
        self.send_response(201)
        self.send_header("X-Subject-Token", "service-token-1")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def identity():
    server = FakeIdentity()
    yield server
    server.shutdown()
    server.server_close()


def keystone_conf(endpoint, auth_url):
    conf = make_conf(endpoint, auth_strategy="keystone",
                     auth_type="v3password")
    conf.register_opts(
        [o._to_oslo_opt() for o in
         loading.get_plugin_loader("v3password").get_options()], "cinder")
    for key, value in (("auth_url", auth_url), ("username", "nova"),
                       ("password", "secret"),
                       ("project_name", "service"),
                       ("user_domain_name", "Default"),
                       ("project_domain_name", "Default")):
        conf.set_override(key, value, group="cinder")
    return conf


def test_call_without_caller_uses_the_service_credentials(volume_service,
                                                          identity):
    api = cinder.VolumeAPI(keystone_conf(volume_service.endpoint,
                                         identity.auth_url))
    periodic = volattach_context.get_admin_context()
    assert not periodic.auth_token
    api.attachment_list(periodic, all_tenants=True)
    api.attachment_list(periodic, all_tenants=True)
    (_m, path, headers), (_m2, _p2, headers2) = volume_service.requests
    assert headers["X-Auth-Token"] == "service-token-1"
    assert headers2["X-Auth-Token"] == "service-token-1"
    assert path == "/v3/service-project-id/attachments"
    assert identity.issued == 1   # cached by the plugin


def test_caller_token_goes_with_a_service_token(volume_service, identity):
    api = cinder.VolumeAPI(keystone_conf(volume_service.endpoint,
                                         identity.auth_url))
    api.get(USER_CTX, "v1")
    (_m, path, headers), = volume_service.requests
    assert headers["X-Auth-Token"] == "user-token"
    assert headers["X-Service-Token"] == "service-token-1"
    assert path == "/v3/p1/volumes/v1"


def test_call_without_caller_or_credentials_is_refused(volume_service):
    api = cinder.VolumeAPI(make_conf(volume_service.endpoint,
                                     auth_strategy="keystone"))
    with pytest.raises(exception.CinderConnectionFailed):
        api.get(volattach_context.get_admin_context(), "v1")
    assert volume_service.requests == []
