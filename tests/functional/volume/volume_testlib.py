"""Helpers of the volume service's functional tests (used by conftest.py
and the test modules).

Fixtures in conftest.py:

* ``volume_conf``: a private ConfigOpts with the service's database under
  the test's tmp dir (SQLite), or, for the ``db_url`` parametrized tests,
  in a private schema of the PostgreSQL given by $VOLATTACH_TEST_PG_URL.
* ``api``: the WSGI app (``volume.wsgi.make_app``) behind falcon's test
  client, with a small helper that adds the token, the microversion and the
  /v3/<project> prefix.
* ``served``: the service over real HTTP (``volume.service.serve_in_thread``
  on a free loopback port).
"""
import http.server
import json
import threading
import uuid

import falcon.testing
import pytest
import sqlalchemy as sa
from oslo_config import cfg

from tests import utils
from volattach import conf as volattach_conf
from volattach.volume import service
from volattach.volume import wsgi

free_port = utils.free_port

# Run a test on both databases: ``@BOTH_DBS`` (indirect ``db_url``).
BOTH_DBS = pytest.mark.parametrize("db_url", [
    "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
    indirect=True)

P1 = "6c6f63616c70726f6a65637430303031"
P2 = "6c6f63616c70726f6a65637430303032"
PADMIN = "6c6f63616c70726f6a65637430303030"
USER1 = "user1:%s" % P1
USER2 = "user2:%s" % P2
ADMIN = "admin:%s:admin" % PADMIN

INSTANCE_A = "3f177cef-3b27-4014-9f98-8409645dc0f0"
INSTANCE_B = "24b868d8-4372-40c4-b8a7-66041a34d6d9"


def connector(host="compute-1", **extra):
    """The connector of the transcript (Nova's libvirt iSCSI connector)."""
    value = {"initiator": "iqn.1993-08.org.debian:01:cad181614cec",
             "ip": "127.0.0.1", "platform": "x86_64", "host": host,
             "os_type": "linux", "multipath": False,
             "mountpoint": "/dev/vdb", "mode": "rw"}
    value.update(extra)
    return value


def make_conf(state_path, **volume_overrides):
    conf = cfg.ConfigOpts()
    volattach_conf.register_opts(conf)
    volattach_conf.set_embedded_defaults(conf)  # noauth
    conf([], default_config_files=[])
    conf.set_override("state_path", str(state_path))
    conf.set_override("host", "testhost", group="volume")
    for key, value in volume_overrides.items():
        conf.set_override(key, value, group="volume")
    return conf


class PgSchema:
    """A private schema of the test PostgreSQL, dropped afterwards."""

    def __init__(self, base_url):
        self.base_url = base_url
        self.name = "volattach_volume_test_%s" % uuid.uuid4().hex[:12]
        self.engine = sa.create_engine(base_url)
        with self.engine.begin() as conn:
            conn.execute(sa.text("CREATE SCHEMA %s" % self.name))
        url = sa.engine.make_url(base_url)
        self.url = url.update_query_dict(
            {"options": "-csearch_path=%s" % self.name}
        ).render_as_string(hide_password=False)

    def drop(self):
        with self.engine.begin() as conn:
            conn.execute(sa.text("DROP SCHEMA %s CASCADE" % self.name))
        self.engine.dispose()


def pg_url_or_skip():
    """$VOLATTACH_TEST_PG_URL (e.g. postgresql+psycopg2://postgres@127.0.0.1
    :5432/volattach_test); unset: skip, or fail under CI."""
    return utils.require_env(utils.PG_URL_ENV,
                             "this PostgreSQL test of the volume service")


class Api:
    """falcon's test client with Cinder's conventions filled in."""

    def __init__(self, app):
        self.client = falcon.testing.TestClient(app)

    def request(self, method, path, body=None, mv="3.54", token=USER1,
                project=None, headers=None):
        if not path.startswith("/v3") and path != "/":
            if project is None:
                project = token.split(":")[1] if token else P1
            path = "/v3/%s%s" % (project, path)
        all_headers = {}
        if token is not None:
            all_headers["X-Auth-Token"] = token
        if mv is not None:
            all_headers["OpenStack-API-Version"] = "volume %s" % mv
        all_headers.update(headers or {})
        kwargs = {"headers": all_headers}
        if body is not None:
            kwargs["json"] = body
        return self.client.simulate_request(method, path, **kwargs)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body, **kw)

    def put(self, path, body=None, **kw):
        return self.request("PUT", path, body, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)

    # -- shortcuts, asserting success --------------------------------------

    def create_type(self, name=None, extra_specs=None):
        r = self.post("/types", {"volume_type": {
            "name": name or "type-%s" % uuid.uuid4().hex[:6],
            "extra_specs": extra_specs or {}}}, token=ADMIN)
        assert r.status_code == 200, r.text
        return r.json["volume_type"]

    def create_volume(self, token=USER1, multiattach=False, **extra):
        volume = {"size": 1, "name": "vol"}
        if multiattach:
            volume["volume_type"] = self.create_type(
                extra_specs={"multiattach": "<is> True"})["id"]
        volume.update(extra)
        r = self.post("/volumes", {"volume": volume}, token=token)
        assert r.status_code == 202, r.text
        return r.json["volume"]

    def volume(self, volume_id, token=USER1):
        r = self.get("/volumes/%s" % volume_id, token=token)
        assert r.status_code == 200, r.text
        return r.json["volume"]

    def reserve(self, volume_id, instance=INSTANCE_A, token=USER1, mv="3.54",
                **extra):
        """POST /attachments; ``extra`` goes into the attachment body."""
        body = {"attachment": {"volume_uuid": volume_id,
                               "instance_uuid": instance}}
        body["attachment"].update(extra)
        return self.post("/attachments", body, token=token, mv=mv)

    def attachment(self, attachment_id, token=USER1):
        r = self.get("/attachments/%s" % attachment_id, token=token)
        assert r.status_code == 200, r.text
        return r.json["attachment"]

    def attachments_of(self, volume_id, token=USER1):
        r = self.get("/attachments?volume_id=%s" % volume_id, token=token)
        assert r.status_code == 200, r.text
        return r.json["attachments"]

    def attach(self, volume_id, instance=INSTANCE_A, host="compute-1",
               token=USER1):
        """reserve -> update -> complete; returns the attachment id."""
        r = self.reserve(volume_id, instance, token=token)
        assert r.status_code == 200, r.text
        att_id = r.json["attachment"]["id"]
        r = self.put("/attachments/%s" % att_id,
                     {"attachment": {"connector": connector(host)}},
                     token=token)
        assert r.status_code == 200, r.text
        r = self.post("/attachments/%s/action" % att_id,
                      {"os-complete": None}, token=token)
        assert r.status_code == 204, r.text
        return att_id


def build_api(conf):
    service.prepare(conf)
    return Api(wsgi.make_app(conf))




def serve_wsgi(app, port=0):
    """Serve any WSGI app over HTTP on loopback from a daemon thread;
    returns the server (``.url``, ``.port``, ``.shutdown()``)."""
    from volattach import embedded_server
    return embedded_server.serve_in_thread(
        app, "127.0.0.1", port, name="volume-test-wsgi")


class Recorder:
    """WSGI middleware recording requests, optionally answering some of
    them itself: ``script`` is a list of (predicate(environ), (status,
    body dict)) consumed in order, each used once."""

    def __init__(self, app, script=None):
        self.app = app
        self.script = list(script or [])
        self.requests = []
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        headers = {k[5:].replace("_", "-").lower(): v
                   for k, v in environ.items() if k.startswith("HTTP_")}
        with self.lock:
            self.requests.append((environ["REQUEST_METHOD"],
                                  environ["PATH_INFO"], headers))
            for i, (predicate, (status, body)) in enumerate(self.script):
                if predicate(environ):
                    del self.script[i]
                    data = json.dumps(body).encode()
                    start_response(status, [
                        ("Content-Type", "application/json"),
                        ("Content-Length", str(len(data)))])
                    return [data]
        return self.app(environ, start_response)

    def count(self, method=None, path_part=""):
        return len([r for r in self.requests
                    if (method is None or r[0] == method)
                    and path_part in r[1]])


class ComputeStub:
    """A compute API of one route, on a free loopback port (``url``: its
    /v2.1): POST /v2.1/os-server-external-events: records each request and
    answers ``reply(events) -> (status, body)``; ``hold``: an Event the
    handler waits for before answering (a compute API that hangs)."""

    def __init__(self, reply):
        self.reply = reply
        self.requests = []
        self.hold = None
        self.received = threading.Event()
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(
                    int(self.headers["Content-Length"])))
                stub.requests.append((self.path, dict(self.headers), body))
                stub.received.set()
                if stub.hold is not None:
                    stub.hold.wait(30)
                status, answer = stub.reply(body["events"])
                data = json.dumps(answer).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass                # the client gave up (timeout)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                      Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d/v2.1" % self.server.server_port
        threading.Thread(target=self.server.serve_forever,
                         kwargs={"poll_interval": 0.01}, daemon=True).start()

    def close(self):
        if self.hold is not None:
            self.hold.set()
        self.server.shutdown()
        self.server.server_close()
