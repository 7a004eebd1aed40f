"""volume.cinder's HTTP session: the environment read once per host
(EnvCachingSession), keystoneauth's adapter kept, and requests on the wire
byte for byte what a stock keystoneauth1 Session sends."""
import json
import socket
import threading

import pytest
import requests
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session

from tests import utils
from tests.unit.volume.test_volume_cinder_unit import make_conf
from volattach import context as volattach_context
from volattach.volume import cinder


@pytest.fixture
def clean_env(monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
                 "http_proxy", "https_proxy", "all_proxy", "no_proxy",
                 "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def settings(session, url, verify=True):
    return session.merge_environment_settings(url, {}, None, verify, None)


@pytest.mark.parametrize("url", [
    "http://cinder.example:8776/v3/p/volumes/x",
    "http://skip.example/v3/p/volumes",
    "https://cinder.example/v3",
])
@pytest.mark.parametrize("verify", [True, False, "/etc/ca.pem"])
def test_same_settings_as_requests(clean_env, url, verify):
    clean_env.setenv("http_proxy", "http://proxy:3128")
    clean_env.setenv("https_proxy", "http://sproxy:3129")
    clean_env.setenv("no_proxy", "skip.example")
    clean_env.setenv("REQUESTS_CA_BUNDLE", "/env/bundle.pem")
    expected = settings(requests.Session(), url, verify)
    session = cinder.EnvCachingSession()
    assert settings(session, url, verify) == expected
    assert settings(session, url, verify) == expected   # from the cache


def test_environment_read_once_per_host(clean_env, monkeypatch):
    clean_env.setenv("http_proxy", "http://proxy:3128")
    clean_env.setenv("no_proxy", "skip.example")
    looked_up = []
    real = requests.sessions.get_environ_proxies
    monkeypatch.setattr(requests.sessions, "get_environ_proxies",
                        lambda url, no_proxy=None: looked_up.append(url)
                        or real(url, no_proxy=no_proxy))
    session = cinder.EnvCachingSession()
    for path in ("/v3/p/volumes/1", "/v3/p/attachments", "/v3/q/types"):
        result = settings(session, "http://cinder:8776" + path)
        assert result["proxies"]["http"] == "http://proxy:3128"
    assert "http" not in settings(session, "http://skip.example/v3")["proxies"]
    assert looked_up == ["http://cinder:8776/v3/p/volumes/1",
                         "http://skip.example/v3"]


def test_cached_settings_are_copies(clean_env):
    clean_env.setenv("http_proxy", "http://proxy:3128")
    session = cinder.EnvCachingSession()
    first = settings(session, "http://cinder/v3")
    first["proxies"]["http"] = "http://changed"
    first["verify"] = "changed"
    second = settings(session, "http://cinder/v3")
    assert second["proxies"]["http"] == "http://proxy:3128"
    assert second["verify"] is True


def test_explicit_proxies_and_no_trust_env_bypass_the_cache(clean_env):
    clean_env.setenv("http_proxy", "http://proxy:3128")
    session = cinder.EnvCachingSession()
    result = session.merge_environment_settings(
        "http://cinder/v3", {"http": "http://mine"}, None, True, None)
    assert result["proxies"] == {"http": "http://mine"}
    session.trust_env = False
    assert settings(session, "http://cinder/v3")["proxies"] == {}
    assert session._env_settings == {}


def test_volume_api_session_keeps_keystoneauth_adapter_and_tls_options():
    conf = make_conf(tls_min_version="1.2")
    session = cinder.VolumeAPI(conf).session
    assert isinstance(session, ks_session.Session)
    assert isinstance(session.session, cinder.EnvCachingSession)
    adapters = {scheme: session.session.get_adapter(scheme + "://h/")
                for scheme in ("http", "https")}
    assert adapters["http"] is adapters["https"]
    assert isinstance(adapters["http"], ks_session.TCPKeepAliveAdapter)
    assert adapters["http"].tls_min_version == "1.2"


# -- on the wire --------------------------------------------------------------

class RawRecorder:
    """A loopback HTTP/1.1 server keeping the raw bytes of each request
    and answering every one with a fixed JSON body (keep-alive)."""

    BODY = json.dumps({"volume": {"id": "v1", "status": "available"},
                       "volumes": [], "attachments": [],
                       "attachment": {"id": "a1", "status": "reserved"}}
                      ).encode()

    def __init__(self):
        self.requests = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,),
                             daemon=True).start()

    def _serve(self, conn):
        rfile = conn.makefile("rb")
        with conn:
            while True:
                request = utils.read_http_request(rfile)
                if request is None:
                    return
                self.requests.append(request)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: "
                             b"application/json\r\nContent-Length: %d\r\n\r\n"
                             % len(self.BODY) + self.BODY)

    def close(self):
        self.listener.close()


class StockVolumeAPI(cinder.VolumeAPI):
    """The client with the Session keystoneauth builds by itself."""

    @property
    def session(self):
        if self._session is None:
            self._session = ks_loading.load_session_from_conf_options(
                self.conf, "cinder")
        return self._session


def exercise(api, ctx):
    api.get(ctx, "v1")
    api.list_volumes(ctx, all_tenants=True)
    api.attachment_create(ctx, "v1", "i1", mode="ro")
    api.attachment_complete(ctx, "a1")
    api.attachment_delete(ctx, "a1")
    api.attachment_list(ctx, volume_id="v1", instance_id="i1")


def test_requests_are_byte_identical_to_a_stock_keystoneauth_session():
    recorder = RawRecorder()
    try:
        conf = make_conf(endpoint="http://127.0.0.1:%d/v3" % recorder.port)
        ctx = volattach_context.RequestContext(
            user_id="u1", project_id="p1", roles=["admin"],
            request_id="req-11111111-2222-3333-4444-555555555555")
        exercise(cinder.VolumeAPI(conf), ctx)
        ours = list(recorder.requests)
        del recorder.requests[:]
        exercise(StockVolumeAPI(conf), ctx)
        stock = list(recorder.requests)
    finally:
        recorder.close()
    assert len(ours) == 6
    assert ours == stock
    assert b"OpenStack-API-Version: volume 3.54\r\n" in ours[2]
    assert b"X-Auth-Token: u1:p1:admin\r\n" in ours[0]
    assert b"User-Agent: " in ours[0]
