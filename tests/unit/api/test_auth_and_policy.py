"""noauth and keystone authentication, project isolation, policy."""
import falcon.testing
import pytest

from volattach.api import auth
from volattach.api import policy
from volattach.api import wsgi as api_wsgi
from tests.unit.api.conftest import ADMIN
from tests.unit.api.conftest import OTHER
from tests.unit.api.conftest import SERVICE
from tests.unit.api.conftest import USER
from tests.unit.api.conftest import make_conf
from volattach import context as volattach_context
from volattach import exception


@pytest.mark.parametrize("token", [None, "", "nocolon", "user:", ":project",
                                   "a:b:c:d"])
def test_missing_or_invalid_noauth_token_is_401(api, token):
    result = api.get("/v2.1/flavors", token=token)
    assert result.status_code == 401
    assert result.json == {"unauthorized": {
        "code": 401, "message": "Authentication required"}}


@pytest.mark.parametrize("path", ["/", "/v2.1", "/v2.1/"])
def test_version_documents_need_no_token(api, path):
    assert api.get(path, token=None).status_code == 200


def test_noauth_token_sets_user_project_and_roles(api, facade):
    instance = facade.add_instance(project_id="p1")
    api.get("/v2.1/servers/%s" % instance.uuid, token="alice:p1:member,reader")
    (ctx, _id), _kw = facade.last_call("get")
    assert (ctx.user_id, ctx.project_id) == ("alice", "p1")
    assert ctx.roles == ["member", "reader"] and not ctx.is_admin
    api.get("/v2.1/servers/%s" % instance.uuid, token=ADMIN)
    (ctx, _id), _kw = facade.last_call("get")
    assert ctx.is_admin


def test_another_projects_server_is_404(api, facade):
    instance = facade.add_instance(project_id="p1")
    assert api.get("/v2.1/servers/%s" % instance.uuid,
                   token=USER).status_code == 200
    result = api.get("/v2.1/servers/%s" % instance.uuid, token=OTHER)
    assert result.status_code == 404
    assert result.json["itemNotFound"]["message"] == \
        "Instance %s could not be found." % instance.uuid
    result = api.get("/v2.1/servers/%s/os-volume_attachments" % instance.uuid,
                     token=OTHER)
    assert result.status_code == 404
    assert not facade.called("get_volume_attachments")


def test_admin_sees_another_projects_server(api, facade):
    instance = facade.add_instance(project_id="p1")
    assert api.get("/v2.1/servers/%s" % instance.uuid,
                   token=ADMIN).status_code == 200


def test_os_services_is_admin_only(api):
    result = api.get("/v2.1/os-services", token=USER)
    assert result.status_code == 403
    assert result.json == {"forbidden": {
        "code": 403, "message": "Policy doesn't allow "
                                "os_compute_api:os-services:list to be "
                                "performed."}}
    assert api.get("/v2.1/os-services", token=ADMIN).status_code == 200


def test_url_project_id_must_match_the_callers(api, facade):
    instance = facade.add_instance(project_id="p1")
    ok = api.get("/v2.1/p1/servers/%s" % instance.uuid, token=USER)
    assert ok.status_code == 200
    assert ok.json["server"]["links"][0]["href"].endswith(
        "/v2.1/p1/servers/%s" % instance.uuid)
    bad = api.get("/v2.1/p2/servers/%s" % instance.uuid, token=USER)
    assert bad.status_code == 400
    assert "doesn't match Context's project_id 'p1'" in \
        bad.json["badRequest"]["message"]


# -- policy table ------------------------------------------------------------------

def _ctx(token):
    return volattach_context.from_noauth_token(token)


def test_policy_rules():
    owner, other, admin, service = (_ctx(USER), _ctx(OTHER), _ctx(ADMIN),
                                    _ctx(SERVICE))
    target = {"project_id": "p1"}
    show = "os_compute_api:servers:show"
    assert policy.check(owner, show, target)
    assert not policy.check(other, show, target)
    assert policy.check(admin, show, target)
    swap = "os_compute_api:os-volumes-attachments:swap"
    assert not policy.check(owner, swap, {})
    assert policy.check(admin, swap, {}) and policy.check(service, swap, {})
    with pytest.raises(exception.PolicyNotAuthorized) as info:
        policy.authorize(owner, "os_compute_api:os-services:list")
    assert "os_compute_api:os-services:list" in info.value.format_message()


# -- keystone ------------------------------------------------------------------------

def test_keystone_context_is_built_from_auth_token_headers():
    seen = {}

    def app(environ, start_response):
        seen["ctx"] = environ[auth.ENV_CONTEXT]
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b""]

    client = falcon.testing.TestClient(auth.KeystoneContext(app))
    client.simulate_get("/v2.1/servers", headers={
        "X-User-Id": "u-1", "X-Project-Id": "p-1",
        "X-Roles": "reader, member,admin", "X-Service-Roles": "service",
        "X-Auth-Token": "tok"})
    ctx = seen["ctx"]
    assert (ctx.user_id, ctx.project_id, ctx.auth_token) == ("u-1", "p-1",
                                                             "tok")
    assert ctx.roles == ["reader", "member", "admin"] and ctx.is_admin
    assert ctx.service_roles == ["service"] and ctx.is_service


def test_keystone_context_without_user_is_401():
    client = falcon.testing.TestClient(auth.KeystoneContext(
        lambda environ, start_response: None))
    result = client.simulate_get("/v2.1/servers")
    assert result.status_code == 401


def test_keystone_strategy_wraps_auth_token_but_not_version_documents(facade):
    conf = make_conf(auth_strategy="keystone")
    app = api_wsgi.make_app(conf, compute_api=facade)
    # the auth layer between the body limit and microversion is keystone's
    layer = app.application.application.application.application
    assert isinstance(layer, auth.Keystone)
    assert type(layer.protected).__module__.startswith("keystonemiddleware")
    client = falcon.testing.TestClient(app)
    assert client.simulate_get("/").status_code == 200
    assert client.simulate_get("/v2.1/").status_code == 200


def test_keystone_strategy_refuses_a_request_without_token(facade):
    conf = make_conf(auth_strategy="keystone")
    api_wsgi.make_app(conf, compute_api=facade)  # registers [keystone_authtoken]
    conf.set_override("www_authenticate_uri", "http://keystone.invalid/v3",
                      group="keystone_authtoken")
    client = falcon.testing.TestClient(api_wsgi.make_app(conf,
                                                         compute_api=facade))
    result = client.simulate_get("/v2.1/servers")
    assert result.status_code == 401
    assert result.headers["www-authenticate"] == \
        'Keystone uri="http://keystone.invalid/v3"'
    assert result.headers["x-openstack-request-id"].startswith("req-")
    assert not facade.calls


@pytest.mark.parametrize("middleware,headers", [
    (auth.NoAuth, {"X-Auth-Token": "bob:p2"}),
    (auth.KeystoneContext, {"X-User-Id": "bob", "X-Project-Id": "p2"}),
])
def test_the_context_replaces_a_stale_one_in_the_thread_store(middleware,
                                                              headers):
    # what oslo.log reads to name the request of a line
    from oslo_context import context as oslo_context
    volattach_context.from_noauth_token("alice:p1", request_id="req-stale")

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b""]

    environ_extra = {"openstack.request_id": "req-new"}
    try:
        client = falcon.testing.TestClient(middleware(app))
        client.simulate_get("/v2.1/servers", headers=headers,
                            extras=environ_extra)
        current = oslo_context.get_current()
        assert (current.user_id, current.request_id) == ("bob", "req-new")
    finally:
        volattach_context.clear_current()
