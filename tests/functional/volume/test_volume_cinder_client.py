"""volume_client.cinder.VolumeAPI against the real volume service over real HTTP
(wsgiref on a free loopback port), including error translation, the
re-read after PUT, and retries (503, connection refused, real Cinder's
multiattach quirk) that stay bounded and never touch a 400."""
import threading
import time

import pytest
from oslo_config import cfg

from tests.functional.volume.volume_testlib import (
    INSTANCE_A, INSTANCE_B, P1, P2, Recorder, connector, free_port,
    serve_wsgi)
from volattach import conf as volattach_conf
from volattach import context as volattach_context
from volattach import exception
from volattach.volume import service
from volattach.volume import wsgi
from volattach.volume_client.cinder import VolumeAPI

USER_CTX = volattach_context.RequestContext(
    user_id="user1", project_id=P1, roles=["member"], overwrite=False)
OTHER_CTX = volattach_context.RequestContext(
    user_id="user2", project_id=P2, roles=["member"], overwrite=False)
ADMIN_CTX = volattach_context.RequestContext(
    user_id="admin", project_id=P1, roles=["admin"], overwrite=False)


def client_conf(endpoint, **cinder):
    conf = cfg.ConfigOpts()
    volattach_conf.register_opts(conf)
    volattach_conf.set_embedded_defaults(conf)  # noauth
    conf([], default_config_files=[])
    conf.set_override("endpoint", endpoint, group="cinder")
    conf.set_override("retry_seconds", 2.0, group="cinder")
    for key, value in cinder.items():
        conf.set_override(key, value, group="cinder")
    return conf


@pytest.fixture
def app(volume_conf):
    service.prepare(volume_conf)
    return wsgi.make_app(volume_conf)


@pytest.fixture
def recorder(app):
    return Recorder(app)


@pytest.fixture
def server(recorder):
    srv = serve_wsgi(recorder)
    yield srv
    srv.shutdown()


@pytest.fixture
def client(server):
    return VolumeAPI(client_conf(server.url + "/v3"))


def new_volume(client, ctx=USER_CTX, **kw):
    vol = client.create_volume(ctx, 1, name="v", **kw)
    assert vol["status"] == "creating"
    return client.wait_for_volume_status(ctx, vol["id"], "available",
                                         timeout=5)


# -- the attach flow ----------------------------------------------------------

def test_attach_flow_and_detach(client, recorder):
    vol = new_volume(client)
    att = client.attachment_create(USER_CTX, vol["id"], INSTANCE_A)
    assert (att["status"], att["connection_info"]) == ("reserved", {})
    assert client.get(USER_CTX, vol["id"])["status"] == "reserved"

    updated = client.attachment_update(USER_CTX, att["id"], connector(),
                                       mountpoint="/dev/vdc")
    assert updated["status"] == "attaching"
    assert updated["connection_info"]["driver_volume_type"] == "iscsi"
    assert "shared_connections_by_attachment" in updated  # a GET's view
    client.attachment_complete(USER_CTX, att["id"])
    vol = client.get(USER_CTX, vol["id"])
    assert vol["status"] == "in-use"
    # Nova's way: the mountpoint goes into the connector.
    assert vol["attachments"][0]["device"] == "/dev/vdc"

    listed = client.attachment_list(USER_CTX, volume_id=vol["id"])
    assert [a["id"] for a in listed] == [att["id"]]
    detail = client.attachment_list(USER_CTX, instance_id=INSTANCE_A,
                                    detail=True)
    assert detail[0]["attach_mode"] == "rw"

    assert client.attachment_delete(USER_CTX, att["id"]) == []
    assert client.get(USER_CTX, vol["id"])["status"] == "available"
    with pytest.raises(exception.VolumeAttachmentNotFound) as err:
        client.attachment_delete(USER_CTX, att["id"])
    assert err.value.kwargs["attachment_id"] == att["id"]

    versions = {(m, p.split("/")[3]): h["openstack-api-version"]
                for m, p, h in recorder.requests}
    assert versions[("GET", "volumes")] == "volume 3.48"
    assert versions[("PUT", "attachments")] == "volume 3.44"
    assert versions[("POST", "attachments")] == "volume 3.44"


def test_put_is_followed_by_a_get(app):
    """Real Cinder's PUT body is stale (status reserved): the client must
    return the attachment as a GET after the PUT shows it."""
    def stale_put(environ, start_response):
        if environ["REQUEST_METHOD"] != "PUT":
            return app(environ, start_response)
        captured = {}

        def capture(status, headers, exc_info=None):
            captured["status"], captured["headers"] = status, headers
        body = b"".join(app(environ, capture))
        body = body.replace(b'"status": "attaching"', b'"status": "reserved"')
        headers = [(k, v) for k, v in captured["headers"]
                   if k.lower() != "content-length"]
        start_response(captured["status"],
                       headers + [("Content-Length", str(len(body)))])
        return [body]

    recorder = Recorder(stale_put)
    srv = serve_wsgi(recorder)
    try:
        client = VolumeAPI(client_conf(srv.url + "/v3"))
        vol = new_volume(client)
        att = client.attachment_create(USER_CTX, vol["id"], INSTANCE_A)
        updated = client.attachment_update(USER_CTX, att["id"], connector())
        assert updated["status"] == "attaching"
        methods = [m for m, p, _ in recorder.requests if att["id"] in p]
        assert methods == ["PUT", "GET"]
    finally:
        srv.shutdown()


def test_fresh_put_body_is_not_read_again(client, recorder):
    """volattach's volume service answers PUT with the connected attachment:
    no second round trip."""
    vol = new_volume(client)
    att = client.attachment_create(USER_CTX, vol["id"], INSTANCE_A)
    updated = client.attachment_update(USER_CTX, att["id"], connector())
    assert updated["status"] == "attaching" and updated["connection_info"]
    methods = [m for m, p, _ in recorder.requests if att["id"] in p]
    assert methods == ["PUT"]


def test_create_with_connector_and_mode(client, recorder):
    vol = new_volume(client)
    att = client.attachment_create(USER_CTX, vol["id"], INSTANCE_A,
                                   connector=connector(), mode="ro",
                                   mountpoint="/dev/vdd")
    assert (att["status"], att["attach_mode"]) == ("attaching", "ro")
    post = [h for m, p, h in recorder.requests
            if m == "POST" and p.endswith("/attachments")]
    assert post[0]["openstack-api-version"] == "volume 3.54"


def test_multiattach_volume_and_concurrent_reservations(client):
    client.create_type(ADMIN_CTX, "multiattach",
                       {"multiattach": "<is> True"})
    vol = new_volume(client, multiattach=True)
    assert vol["multiattach"] is True
    results = []

    def attach(instance):
        results.append(client.attachment_create(USER_CTX, vol["id"],
                                                instance)["status"])
    instances = ["00000000-0000-4000-8000-%012d" % i for i in range(8)]
    threads = [threading.Thread(target=attach, args=(i,)) for i in instances]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == ["reserved"] * 8
    assert len(client.attachment_list(USER_CTX, volume_id=vol["id"])) == 8


# -- error translation --------------------------------------------------------

def test_errors_are_translated(client):
    missing = "cb9c6e85-171c-41c9-b061-d8c566b0532c"
    with pytest.raises(exception.VolumeNotFound) as err:
        client.get(USER_CTX, missing)
    assert err.value.kwargs["volume_id"] == missing
    with pytest.raises(exception.VolumeNotFound):
        client.attachment_create(USER_CTX, missing, INSTANCE_A)
    with pytest.raises(exception.VolumeAttachmentNotFound):
        client.attachment_get(USER_CTX, missing)
    with pytest.raises(exception.VolumeAttachmentNotFound):
        client.attachment_update(USER_CTX, missing, connector())
    with pytest.raises(exception.VolumeAttachmentNotFound):
        client.attachment_complete(USER_CTX, missing)

    vol = new_volume(client)
    att = client.attachment_create(USER_CTX, vol["id"], INSTANCE_A)
    with pytest.raises(exception.InvalidVolume) as err:
        client.attachment_create(USER_CTX, vol["id"], INSTANCE_B)
    assert err.value.format_message() == (
        "Invalid volume: Volume %s status must be available or downloading "
        "to reserve, but the current status is reserved." % vol["id"])
    with pytest.raises(exception.InvalidInput) as err:
        client.attachment_update(USER_CTX, att["id"], {"host": "compute-1"})
    assert err.value.format_message() == (
        "Invalid input received: Connector doesn't have required "
        "information: initiator")
    with pytest.raises(exception.InvalidInput) as err:
        client.attachment_create(USER_CTX, "not-a-uuid", INSTANCE_A)
    assert "'not-a-uuid' is not a 'uuid'" in err.value.format_message()
    with pytest.raises(exception.InvalidVolume):
        client.delete_volume(USER_CTX, vol["id"])
    with pytest.raises(exception.Forbidden) as err:
        client.create_type(USER_CTX, "nope", {})
    assert "types_manage" in err.value.format_message()
    # Another project's attachment is simply not found.
    with pytest.raises(exception.VolumeAttachmentNotFound):
        client.attachment_get(OTHER_CTX, att["id"])


def test_unexpected_status_is_cinder_api_error(app):
    recorder = Recorder(app, script=[
        (lambda env: env["REQUEST_METHOD"] == "GET",
         ("500 Internal Server Error",
          {"computeFault": {"code": 500, "message": "boom"}}))])
    srv = serve_wsgi(recorder)
    try:
        client = VolumeAPI(client_conf(srv.url + "/v3"))
        with pytest.raises(exception.CinderAPIError) as err:
            client.get(USER_CTX, "x")
        assert err.value.kwargs == {"code": 500, "reason": "boom"}
        assert recorder.count("GET") == 1
    finally:
        srv.shutdown()


# -- headers ------------------------------------------------------------------

@pytest.mark.parametrize("send_role, include_roles", [(True, True),
                                                      (False, False)])
def test_auth_and_service_role_headers(server, recorder, send_role,
                                       include_roles):
    client = VolumeAPI(client_conf(
        server.url + "/v3", send_service_role=send_role,
        noauth_include_roles=include_roles))
    vol = new_volume(client)
    att = client.attachment_create(USER_CTX, vol["id"], INSTANCE_A,
                                   connector=connector())
    client.attachment_delete(USER_CTX, att["id"])
    (delete,) = [h for m, p, h in recorder.requests if m == "DELETE"]
    assert delete["x-auth-token"] == (
        "user1:%s:member" % P1 if include_roles else "user1:%s" % P1)
    assert ("x-service-roles" in delete) is send_role
    if send_role:
        assert delete["x-service-roles"] == "service"
    others = [h for m, p, h in recorder.requests if m != "DELETE"]
    assert all("x-service-roles" not in h for h in others)
    assert all(p.startswith("/v3/%s/" % P1) for _, p, _ in recorder.requests)


def test_one_session_reused(client):
    vol = new_volume(client)
    session = client.session
    client.get(USER_CTX, vol["id"])
    assert client.session is session


# -- retries ------------------------------------------------------------------

UNAVAILABLE = ("503 Service Unavailable",
               {"serviceUnavailable": {"code": 503, "message": "busy"}})


def test_503_is_retried(app):
    recorder = Recorder(app, script=[
        (lambda env: env["REQUEST_METHOD"] == "POST", UNAVAILABLE),
        (lambda env: env["REQUEST_METHOD"] == "POST", UNAVAILABLE)])
    srv = serve_wsgi(recorder)
    try:
        client = VolumeAPI(client_conf(srv.url + "/v3"))
        vol = client.create_volume(USER_CTX, 1)
        assert vol["status"] == "creating"
        assert recorder.count("POST") == 3
    finally:
        srv.shutdown()


def test_503_retries_are_bounded(app):
    always = [(lambda env: True, UNAVAILABLE)] * 1000
    recorder = Recorder(app, script=always)
    srv = serve_wsgi(recorder)
    try:
        client = VolumeAPI(client_conf(srv.url + "/v3", retry_seconds=0.6))
        start = time.monotonic()
        with pytest.raises(exception.CinderConnectionFailed) as err:
            client.get(USER_CTX, "x")
        # Never past the bound (the next wait would cross it: stop).
        assert time.monotonic() - start < 0.6 + 0.5
        assert recorder.count("GET") >= 3
        assert "busy" in err.value.format_message()
    finally:
        srv.shutdown()


def test_connection_refused_retried_then_fails():
    port = free_port()  # nothing listens there
    client = VolumeAPI(client_conf("http://127.0.0.1:%d/v3" % port,
                                   retry_seconds=0.6))
    start = time.monotonic()
    with pytest.raises(exception.CinderConnectionFailed) as err:
        client.get(USER_CTX, "x")
    assert 0.2 <= time.monotonic() - start < 0.6 + 0.5
    assert "Unable to establish connection" in err.value.format_message()


def test_connection_refused_retried_until_service_is_up(app):
    port = free_port()
    client = VolumeAPI(client_conf("http://127.0.0.1:%d/v3" % port,
                                   retry_seconds=10))
    started = {}

    def start_later():
        time.sleep(0.5)
        started["server"] = serve_wsgi(app, port=port)
    threading.Thread(target=start_later).start()
    try:
        vol = client.create_volume(USER_CTX, 1)
        assert vol["status"] == "creating"
    finally:
        time.sleep(0.1)
        if "server" in started:
            started["server"].shutdown()


def test_400_is_not_retried(client, recorder):
    vol = new_volume(client)
    client.attachment_create(USER_CTX, vol["id"], INSTANCE_A)
    before = recorder.count("POST", "/attachments")
    with pytest.raises(exception.InvalidVolume):
        client.attachment_create(USER_CTX, vol["id"], INSTANCE_B)
    assert recorder.count("POST", "/attachments") == before + 1


def cinder29_busy(status):
    return ("400 Bad Request", {"badRequest": {"code": 400, "message":
            "Invalid volume: Volume 919c322c-4631-4741-9c3c-7e8dc599ceaa "
            "status must be available or in-use or downloading to reserve, "
            "but the current status is %s." % status}})


def is_attachment_post(env):
    return (env["REQUEST_METHOD"] == "POST"
            and env["PATH_INFO"].endswith("/attachments"))


def test_real_cinder_multiattach_busy_400_is_retried(app):
    recorder = Recorder(app, script=[
        (is_attachment_post, cinder29_busy("reserved")),
        (is_attachment_post, cinder29_busy("attaching"))])
    srv = serve_wsgi(recorder)
    try:
        client = VolumeAPI(client_conf(srv.url + "/v3"))
        vol = new_volume(client)
        att = client.attachment_create(USER_CTX, vol["id"], INSTANCE_A)
        assert att["status"] == "reserved"
        assert recorder.count("POST", "/attachments") == 3
    finally:
        srv.shutdown()


def test_real_cinder_multiattach_busy_retry_is_bounded(app):
    recorder = Recorder(app, script=[(is_attachment_post,
                                      cinder29_busy("reserved"))] * 1000)
    srv = serve_wsgi(recorder)
    try:
        client = VolumeAPI(client_conf(srv.url + "/v3", retry_seconds=0.5))
        start = time.monotonic()
        with pytest.raises(exception.InvalidVolume) as err:
            client.attachment_create(USER_CTX, "919c322c-4631-4741-9c3c-"
                                     "7e8dc599ceaa", INSTANCE_A)
        assert time.monotonic() - start < 3.0
        assert "current status is reserved" in err.value.format_message()
        assert recorder.count("POST", "/attachments") >= 2
    finally:
        srv.shutdown()
