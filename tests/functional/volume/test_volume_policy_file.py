"""The volume service's policy: Cinder's rule names, overridable in
policy.yaml without code changes."""
from tests.functional.volume.volume_testlib import ADMIN, USER1, build_api
from volattach.volume import policy


def test_services_list_is_admin_only_by_default(api):
    assert api.get("/os-services", token=USER1).status_code == 403
    assert api.get("/os-services", token=ADMIN).status_code == 200


def test_override_opens_the_services_list(volume_conf, tmp_path):
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text('"volume_extension:services:index": "@"\n')
    volume_conf.set_override("policy_file", str(policy_file),
                             group="oslo_policy")
    api = build_api(volume_conf)
    r = api.get("/os-services", token=USER1)
    assert r.status_code == 200, r.text
    assert r.json["services"]


def test_override_closes_type_management_to_admins(volume_conf, tmp_path):
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text('"volume_extension:types_manage": "!"\n')
    volume_conf.set_override("policy_file", str(policy_file),
                             group="oslo_policy")
    api = build_api(volume_conf)
    r = api.post("/types", {"volume_type": {"name": "t1"}}, token=ADMIN)
    assert r.status_code == 403
    assert r.json["forbidden"]["message"] == (
        "Policy doesn't allow volume_extension:types_manage to be performed.")


def test_rules_have_cinder_names_and_project_scope():
    names = {r.name for r in policy.list_rules()}
    assert {"volume_extension:services:index",
            "volume_extension:types_manage",
            "volume_extension:volume_admin_actions:reset_status"} <= names
