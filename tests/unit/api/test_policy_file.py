"""The compute API's policy: oslo.policy defaults and policy.yaml overrides."""
import pytest

from tests.unit.api.conftest import ADMIN
from tests.unit.api.conftest import Api
from tests.unit.api.conftest import OTHER
from tests.unit.api.conftest import USER
from tests.unit.api.conftest import make_conf
from volattach.api import policies
from volattach.api import policy
from volattach.api import wsgi as api_wsgi

INDEX = "os_compute_api:os-volumes-attachments:index"


def _api(facade, policy_file=None):
    conf = make_conf()
    if policy_file is not None:
        conf.set_override("policy_file", str(policy_file),
                          group="oslo_policy")
    return Api(api_wsgi.make_app(conf, compute_api=facade))


def _url(server):
    return "/v2.1/servers/%s/os-volume_attachments" % server.uuid


def test_override_makes_attachment_list_admin_only(tmp_path, facade):
    server = facade.add_instance()
    assert _api(facade).get(_url(server)).status_code == 200

    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text('"%s": "rule:admin_api"\n' % INDEX)
    api = _api(facade, policy_file)
    r = api.get(_url(server))
    assert r.status_code == 403
    assert r.json["forbidden"]["message"] == \
        "Policy doesn't allow %s to be performed." % INDEX
    assert api.get(_url(server), token=ADMIN).status_code == 200


def test_a_changed_policy_file_takes_effect_without_restart(
        tmp_path, facade, monkeypatch):
    import os

    from volattach.wsgi import policy as wsgi_policy
    # looked for every RELOAD_SECONDS (1 s): here at every check
    monkeypatch.setattr(wsgi_policy, "RELOAD_SECONDS", 0)
    server = facade.add_instance()
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text("{}\n")
    api = _api(facade, policy_file)
    assert api.get(_url(server)).status_code == 200
    policy_file.write_text('"%s": "!"\n' % INDEX)
    stat = policy_file.stat()
    os.utime(policy_file, (stat.st_atime, stat.st_mtime + 5))
    assert api.get(_url(server)).status_code == 403


def test_every_rule_has_project_scope_and_is_registered():
    names = {r.name for r in policies.list_rules()}
    assert INDEX in names
    for rule in policies.list_rules():
        if hasattr(rule, "operations"):
            assert rule.scope_types == ["project"], rule.name
            assert rule.operations


@pytest.mark.parametrize("token, target_project, allowed", [
    (USER, "p1", True), (OTHER, "p1", False), (ADMIN, "p1", True),
    ("carol:p1:reader", "p1", True), ("dave:p1:foo", "p1", False),
])
def test_reader_or_admin_answers(facade, token, target_project, allowed):
    from volattach import context
    _api(facade)
    ctx = context.from_noauth_token(token)
    assert policy.check(ctx, INDEX, {"project_id": target_project}) is allowed


def test_swap_stays_allowed_to_services_and_admins(facade):
    from volattach import context
    _api(facade)
    swap = "os_compute_api:os-volumes-attachments:swap"
    assert policy.check(context.from_noauth_token("c:p1:member,service"),
                        swap, {})
    assert policy.check(context.from_noauth_token(ADMIN), swap, {})
    assert not policy.check(context.from_noauth_token(USER), swap, {})
