"""volume.cinder's lean transport (kept-alive http.client connections per
thread) against scripted loopback HTTP servers: connection reuse, the
resend on a connection the server closed while idle, no resend of a POST
whose answer was cut short, the fallback to keystoneauth/requests (proxy,
keystoneauth debug logging, cookies), keystoneauth's 401 re-auth, TLS, and
requests on the wire identical to a stock keystoneauth Session's."""
import gzip
import logging
import os
import socket
import ssl
import subprocess
import threading
import time

import pytest
from keystoneauth1 import plugin as ks_plugin

from tests import utils
from tests.unit.volume.test_volume_cinder_session import (  # noqa: F401
    StockVolumeAPI, clean_env, make_conf)
from volattach import context as volattach_context
from volattach import exception
from volattach.volume import cinder

CTX = volattach_context.RequestContext(
    user_id="u1", project_id="p1", roles=["admin"], auth_token="user-token",
    request_id="req-11111111-2222-3333-4444-555555555555")
VOLUME = (b'{"volume": {"id": "v1", "status": "available"}, '
          b'"attachment": {"id": "a1", "status": "reserved"}, '
          b'"volumes": [], "attachments": []}')


def ok(body=VOLUME, extra=b""):
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n%s\r\n" % (len(body), extra) + body)


class ScriptedServer:
    """Loopback HTTP/1.1: keeps each request's raw bytes, answers with the
    next scripted reply (bytes, a function returning them, or "close" to
    hang up without answering, or ("then-close", bytes) to answer and then
    close the connection), and
    ``ok()`` once the script is spent."""

    def __init__(self, script=(), context=None):
        self.script = list(script)
        self.requests = []
        self.connections = 0
        self.context = context
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self):
        scheme = "https" if self.context else "http"
        return "%s://127.0.0.1:%d/v3" % (scheme, self.port)

    def _accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,),
                             daemon=True).start()

    def _serve(self, conn):
        if self.context:
            try:
                conn = self.context.wrap_socket(conn, server_side=True)
            except (ssl.SSLError, OSError):
                conn.close()
                return
        rfile = conn.makefile("rb")
        with conn:
            while True:
                request = utils.read_http_request(rfile)
                if request is None:
                    return
                self.requests.append(request)
                reply = self.script.pop(0) if self.script else ok()
                if callable(reply):
                    reply = reply()
                if reply == "close":
                    return
                if isinstance(reply, tuple):
                    conn.sendall(reply[1])
                    return
                conn.sendall(reply)

    def close(self):
        self.listener.close()


def served(script=(), **cinder_opts):
    server = ScriptedServer(script)
    api = cinder.VolumeAPI(make_conf(endpoint=server.url, retry_seconds=0,
                                     **cinder_opts))
    return server, api


def lean_endpoints(api):
    return [e for e in api._endpoints.values()
            if isinstance(e, cinder.LeanEndpoint)]


def test_calls_of_one_thread_share_one_kept_alive_connection(clean_env):
    server, api = served()
    for _ in range(5):
        assert api.get(CTX, "v1")["id"] == "v1"
    assert server.connections == 1
    assert len(server.requests) == 5
    assert len(lean_endpoints(api)) == 1


def test_concurrent_calls_use_separate_connections_then_share_them(
        clean_env):
    def slow():
        time.sleep(0.3)
        return ok()
    server, api = served([slow, slow])
    threads = [threading.Thread(target=api.get, args=(CTX, "v1"))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert server.connections == 2
    for _ in range(3):
        api.get(CTX, "v1")
    thread = threading.Thread(target=api.get, args=(CTX, "v1"))
    thread.start()
    thread.join()
    assert server.connections == 2     # kept alive, taken by any thread
    assert len(server.requests) == 6


@pytest.mark.parametrize("method", ["get", "attachment_complete"])
def test_connection_closed_while_idle_is_replaced(clean_env, method):
    # The server answers, then closes the kept-alive connection (as an
    # idle timeout would): the next request, even a POST, is sent again on
    # a fresh connection, and the server sees it once.
    server, api = served([("then-close", ok())])
    api.get(CTX, "v1")
    getattr(api, method)(CTX, "v1")
    assert server.connections == 2
    assert len(server.requests) == 2


def test_post_whose_answer_is_cut_short_is_not_resent(clean_env):
    # The POST reached the server, which dies halfway through the answer:
    # the error surfaces (as it did through requests) and is not retried.
    cut = ok()[:-10]
    for api_class in (cinder.VolumeAPI, StockVolumeAPI):
        server = ScriptedServer([("then-close", cut)])
        api = api_class(make_conf(endpoint=server.url, retry_seconds=5))
        with pytest.raises(exception.CinderConnectionFailed):
            api.attachment_complete(CTX, "a1")
        assert len(server.requests) == 1, api_class
        server.close()


def test_fresh_connection_closed_without_answer_fails_like_requests(
        clean_env):
    # A fresh connection that gets no answer is a connection failure, as
    # keystoneauth reported it (ConnectFailure, then tenacity's bounded
    # retry): no immediate resend by the transport.
    for api_class in (cinder.VolumeAPI, StockVolumeAPI):
        server = ScriptedServer(["close"] * 10)
        api = api_class(make_conf(endpoint=server.url, retry_seconds=0))
        with pytest.raises(exception.CinderConnectionFailed) as err:
            api.get(CTX, "v1")
        assert "Unable to establish connection" in str(err.value)
        assert len(server.requests) == 1, api_class
        server.close()


def test_refused_connection_is_a_connection_failure(clean_env):
    probe = socket.create_server(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    api = cinder.VolumeAPI(make_conf(
        endpoint="http://127.0.0.1:%d/v3" % port, retry_seconds=0))
    with pytest.raises(exception.CinderConnectionFailed):
        api.get(CTX, "v1")


def test_read_timeout_of_a_post_is_not_retried(clean_env):
    # The server reads the POST and never answers: keystoneauth reported a
    # timeout (ConnectTimeout), which is not retried for a POST.
    hang = threading.Event()
    listener = socket.create_server(("127.0.0.1", 0))
    seen = []

    def accept():
        conn, _ = listener.accept()
        seen.append(conn.recv(65536))
        hang.wait(5)
        conn.close()
    threading.Thread(target=accept, daemon=True).start()
    api = cinder.VolumeAPI(make_conf(
        endpoint="http://127.0.0.1:%d/v3" % listener.getsockname()[1],
        retry_seconds=5, timeout=0.3))
    try:
        with pytest.raises(exception.CinderConnectionFailed) as err:
            api.attachment_complete(CTX, "a1")
        assert "timed out" in str(err.value)
        assert len(seen) == 1
    finally:
        hang.set()
        listener.close()


def test_gzip_answer_is_decoded(clean_env):
    body = gzip.compress(VOLUME)
    server, api = served([
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        b"Content-Encoding: gzip\r\nContent-Length: %d\r\n\r\n"
        % len(body) + body])
    assert api.get(CTX, "v1")["status"] == "available"


def test_error_answer_is_translated(clean_env):
    body = b'{"itemNotFound": {"code": 404, "message": "gone"}}'
    server, api = served([
        b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body) + body])
    with pytest.raises(exception.VolumeNotFound):
        api.get(CTX, "v1")


# -- what goes through keystoneauth/requests instead ---------------------------

def test_proxied_endpoint_goes_through_requests(clean_env):
    proxy = ScriptedServer()
    clean_env.setenv("http_proxy", "http://127.0.0.1:%d" % proxy.port)
    api = cinder.VolumeAPI(make_conf(endpoint="http://cinder.invalid:8776/v3",
                                     retry_seconds=0))
    assert api.get(CTX, "v1")["id"] == "v1"
    # requests wrote the absolute URI a proxy expects
    assert proxy.requests[0].startswith(
        b"GET http://cinder.invalid:8776/v3/p1/volumes/v1 HTTP/1.1\r\n")
    assert api._endpoints == {("http", "cinder.invalid:8776"): None}


def test_endpoint_in_no_proxy_uses_the_lean_transport(clean_env):
    server = ScriptedServer()
    clean_env.setenv("http_proxy", "http://127.0.0.1:9")
    clean_env.setenv("no_proxy", "127.0.0.1")
    api = cinder.VolumeAPI(make_conf(endpoint=server.url, retry_seconds=0))
    api.get(CTX, "v1")
    assert len(lean_endpoints(api)) == 1


def test_keystoneauth_debug_logging_goes_through_keystoneauth(
        clean_env, caplog):
    server, api = served()
    with caplog.at_level(logging.DEBUG, logger="keystoneauth.session"):
        api.get(CTX, "v1")
    assert api._endpoints == {}
    assert "REQ: curl" in caplog.text


def test_cookies_are_kept_and_sent_back_as_requests_does(clean_env):
    def run(api_class):
        server = ScriptedServer([ok(extra=b"Set-Cookie: lb=node2; Path=/\r\n")])
        api = api_class(make_conf(endpoint=server.url, retry_seconds=0))
        api.get(CTX, "v1")
        api.get(CTX, "v1")
        server.close()
        return [r.replace(b"%d" % server.port, b"PORT")
                for r in server.requests]
    ours, stock = run(cinder.VolumeAPI), run(StockVolumeAPI)
    assert b"Cookie: lb=node2\r\n" in ours[1]
    assert ours == stock


# -- keystone mode ----------------------------------------------------------------

class CountingServiceAuth(ks_plugin.BaseAuthPlugin):
    """A service token plugin whose token changes when invalidated."""

    def __init__(self):
        super().__init__()
        self.generation = 1

    def get_token(self, session, **kwargs):
        return "service-token-%d" % self.generation

    def invalidate(self):
        self.generation += 1
        return True


def keystone_run(api_class, script):
    server = ScriptedServer(script)
    api = api_class(make_conf(endpoint=server.url, retry_seconds=0,
                              auth_strategy="keystone"))
    api.session   # loads the (absent) service auth, then ours replaces it
    api._service_auth = CountingServiceAuth()
    try:
        api.get(CTX, "v1")
    except exception.CinderAPIError:
        pass
    server.close()
    assert bool(lean_endpoints(api)) == (api_class is cinder.VolumeAPI)
    return [r.replace(b"%d" % server.port, b"PORT") for r in server.requests]


def test_keystone_401_reauthenticates_once_as_keystoneauth_does(
        clean_env):
    unauthorized = (b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n")
    ours = keystone_run(cinder.VolumeAPI, [unauthorized])
    stock = keystone_run(StockVolumeAPI, [unauthorized])
    assert len(ours) == 2
    assert b"X-Service-Token: service-token-1\r\n" in ours[0]
    assert b"X-Service-Token: service-token-2\r\n" in ours[1]
    assert b"X-Auth-Token: user-token\r\n" in ours[1]
    assert ours == stock
    # twice 401: given up after one re-auth, as before
    ours = keystone_run(cinder.VolumeAPI, [unauthorized, unauthorized])
    stock = keystone_run(StockVolumeAPI, [unauthorized, unauthorized])
    assert len(ours) == 2 and ours == stock


# -- on the wire: more calls than test_volume_cinder_session's ---------------------

def exercise_all(api):
    api.get(CTX, "v1")
    api.list_volumes(CTX, detail=False, all_tenants=True)
    api.attachment_update(CTX, "a1", {"host": "h", "initiator": "iqn"},
                          "/dev/vdb")
    api.attachment_delete(CTX, "a1")
    api.attachment_list(CTX, volume_id="v 1/ü", instance_id="i%41")
    api.delete_volume(CTX, "v1")
    api.update_readonly_flag(CTX, "v1", True)


@pytest.mark.parametrize("cinder_opts", [
    {}, {"auth_strategy": "keystone"}, {"noauth_include_roles": False},
])
def test_wire_bytes_identical_to_stock_keystoneauth(clean_env,
                                                    cinder_opts):
    def run(api_class):
        server = ScriptedServer()
        api = api_class(make_conf(endpoint=server.url, retry_seconds=0,
                                  **cinder_opts))
        exercise_all(api)
        server.close()
        return [r.replace(b"%d" % server.port, b"PORT")
                for r in server.requests]
    ours, stock = run(cinder.VolumeAPI), run(StockVolumeAPI)
    assert len(ours) == 8
    assert ours == stock


# -- TLS ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """A self-signed certificate for 127.0.0.1 (cert, key)."""
    directory = tmp_path_factory.mktemp("tls")
    cert, key = str(directory / "cert.pem"), str(directory / "key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
         "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True)
    return cert, key


def tls_server(certificate, client_ca=None):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    if client_ca:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(client_ca)
    return ScriptedServer(context=context)


def test_https_with_cafile(clean_env, certificate):
    server = tls_server(certificate)
    api = cinder.VolumeAPI(make_conf(endpoint=server.url, retry_seconds=0,
                                     cafile=certificate[0]))
    api.get(CTX, "v1")
    api.get(CTX, "v1")
    assert server.connections == 1 and len(lean_endpoints(api)) == 1


def test_https_unknown_ca_fails_and_insecure_does_not(clean_env,
                                                      certificate):
    server = tls_server(certificate)
    api = cinder.VolumeAPI(make_conf(endpoint=server.url, retry_seconds=0))
    with pytest.raises(exception.CinderConnectionFailed) as err:
        api.get(CTX, "v1")
    assert "SSL exception" in str(err.value)
    api = cinder.VolumeAPI(make_conf(endpoint=server.url, retry_seconds=0,
                                     insecure=True))
    assert api.get(CTX, "v1")["id"] == "v1"


def test_https_client_certificate(clean_env, certificate):
    server = tls_server(certificate, client_ca=certificate[0])
    api = cinder.VolumeAPI(make_conf(
        endpoint=server.url, retry_seconds=0, cafile=certificate[0],
        certfile=certificate[0], keyfile=certificate[1]))
    assert api.get(CTX, "v1")["id"] == "v1"


def test_tls_context_options(certificate):
    context = cinder.tls_context(False, None)
    assert context.verify_mode == ssl.CERT_NONE
    assert not context.check_hostname
    context = cinder.tls_context(True, None)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] > 10   # certifi's bundle
    context = cinder.tls_context(certificate[0], None)
    assert context.cert_store_stats()["x509_ca"] == 1
    # keystoneauth's adapter starts from ssl's default context (system
    # CAs) when ciphers or a minimum version are set
    context = cinder.tls_context(certificate[0], None, tls_min_version="1.3",
                                 tls_ciphers="ECDHE+AESGCM")
    assert context.minimum_version == ssl.TLSVersion.TLSv1_3
    assert context.verify_mode == ssl.CERT_REQUIRED
    context = cinder.tls_context(os.path.dirname(certificate[0]), None)
    assert context.verify_mode == ssl.CERT_REQUIRED


def test_requests_ca_bundle_environment_is_honoured(clean_env,
                                                    certificate):
    clean_env.setenv("REQUESTS_CA_BUNDLE", certificate[0])
    server = tls_server(certificate)
    api = cinder.VolumeAPI(make_conf(endpoint=server.url, retry_seconds=0))
    assert api.get(CTX, "v1")["id"] == "v1"


def test_request_target_quotes_like_requests():
    assert cinder.request_target("http://h/v3/p/volumes") == "/v3/p/volumes"
    assert cinder.request_target("http://h/v3/p/a", {"x": 1, "y": "a b"}) == (
        "/v3/p/a?x=1&y=a+b")
    assert cinder.request_target("http://h/v3/p/a b%41") == "/v3/p/a%20bA"
