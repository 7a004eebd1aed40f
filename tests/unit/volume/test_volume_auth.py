"""volume.auth: the context built from noauth tokens or keystone headers,
service roles, and the URL project check (a minimal falcon app)."""
import falcon
import falcon.testing
import pytest

from volattach.volume import auth
from volattach.volume import faults
from volattach.volume import middleware


class Echo:
    def on_get(self, req, resp, **params):
        ctx = req.context.ctx
        resp.media = {"user": ctx.user_id, "project": ctx.project_id,
                      "roles": ctx.roles, "admin": ctx.is_admin,
                      "service_roles": ctx.service_roles,
                      "token": ctx.auth_token, "params": params,
                      "request_id": ctx.request_id}


def client(strategy):
    app = falcon.App(middleware=[middleware.RequestIdMiddleware(),
                                 auth.AuthMiddleware(strategy)])
    faults.install(app)
    app.add_route("/v3/{project_id}/things", Echo())
    app.add_route("/v3/things", Echo())
    return falcon.testing.TestClient(app)


def test_noauth_token_with_roles_and_service_roles():
    r = client("noauth").simulate_get("/v3/p1/things", headers={
        "X-Auth-Token": "u1:p1:admin,member", "X-Service-Roles": "service"})
    assert r.status_code == 200
    body = r.json
    assert (body["user"], body["project"], body["roles"], body["admin"],
            body["service_roles"]) == ("u1", "p1", ["admin", "member"], True,
                                       ["service"])
    assert body["params"] == {}  # project_id is consumed by the middleware
    assert body["request_id"] == r.headers["x-openstack-request-id"]


def test_noauth_default_roles_are_not_admin():
    r = client("noauth").simulate_get("/v3/things",
                                      headers={"X-Auth-Token": "u1:p1"})
    assert (r.json["roles"], r.json["admin"]) == (["member", "reader"], False)


def test_project_mismatch_is_403_except_for_admins():
    c = client("noauth")
    r = c.simulate_get("/v3/p2/things", headers={"X-Auth-Token": "u1:p1"})
    assert r.status_code == 403
    assert "forbidden" in r.json
    r = c.simulate_get("/v3/p2/things",
                       headers={"X-Auth-Token": "u1:p1:admin"})
    assert r.status_code == 200


def test_keystone_headers():
    c = client("keystone")
    r = c.simulate_get("/v3/p1/things", headers={
        "X-Identity-Status": "Confirmed", "X-User-Id": "u1",
        "X-Project-Id": "p1", "X-Roles": "reader, admin",
        "X-Auth-Token": "tok", "X-Service-Roles": "service"})
    assert r.status_code == 200
    assert (r.json["roles"], r.json["admin"], r.json["token"],
            r.json["service_roles"]) == (["reader", "admin"], True, "tok",
                                         ["service"])


@pytest.mark.parametrize("headers", [
    {}, {"X-Identity-Status": "Invalid", "X-User-Id": "u",
         "X-Project-Id": "p"},
    {"X-Identity-Status": "Confirmed", "X-User-Id": "u"},
])
def test_keystone_unconfirmed_is_401(headers):
    r = client("keystone").simulate_get("/v3/things", headers=headers)
    assert r.status_code == 401
    assert r.json["unauthorized"]["code"] == 401


@pytest.mark.parametrize("strategy,headers", [
    ("noauth", {"X-Auth-Token": "bob:p2"}),
    ("keystone", {"X-Identity-Status": "Confirmed", "X-User-Id": "bob",
                  "X-Project-Id": "p2"}),
])
def test_the_context_replaces_a_stale_one_in_the_thread_store(strategy,
                                                              headers):
    # what oslo.log reads to name the request of a line
    from oslo_context import context as oslo_context
    from volattach import context as volattach_context
    volattach_context.from_noauth_token("alice:p1", request_id="req-stale")
    try:
        r = client(strategy).simulate_get("/v3/p2/things", headers=headers)
        assert r.status_code == 200
        current = oslo_context.get_current()
        assert (current.user_id, current.request_id) == (
            "bob", r.headers["x-openstack-request-id"])
    finally:
        volattach_context.clear_current()
