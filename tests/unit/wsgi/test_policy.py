"""volattach.wsgi.policy: remembered answers are per caller, action, target."""
from oslo_policy import policy as oslo_policy

from tests.unit.api.conftest import make_conf
from volattach import context
from volattach.wsgi import policy


def _rules():
    return [oslo_policy.RuleDefault("thing:read", "role:reader or is_admin:True"),
            oslo_policy.RuleDefault("thing:svc", "service_roles:service")]


def _policy():
    p = policy.Policy(_rules)
    p.init(make_conf())
    return p


def _counting(p):
    calls = []
    enforce = p.enforcer.enforce

    def counted(*args, **kwargs):
        calls.append(args[2])
        return enforce(*args, **kwargs)
    p.enforcer.enforce = counted
    return calls


def test_a_new_context_of_the_same_caller_is_answered_from_memory():
    p = _policy()
    calls = _counting(p)
    for _ in range(3):
        ctx = context.from_noauth_token("alice:p1:reader")
        assert p.check(ctx, "thing:read")
    assert len(calls) == 1
    assert calls[0]["roles"] == ["reader"]


def test_callers_differing_in_one_policy_value_get_their_own_answers():
    p = _policy()
    calls = _counting(p)
    reader = context.from_noauth_token("alice:p1:reader")
    assert p.check(reader, "thing:read")
    assert not p.check(context.from_noauth_token("alice:p1:member"),
                       "thing:read")
    assert p.check(context.from_noauth_token("alice:p1:admin"), "thing:read")
    # same user and project, only the service roles differ
    plain = context.RequestContext(user_id="nova", project_id="svc")
    service = context.RequestContext(user_id="nova", project_id="svc",
                                     service_roles=["service"])
    assert not p.check(plain, "thing:svc")
    assert p.check(service, "thing:svc")
    # the roles of a context changed after a check (elevated keeps the object
    # type but is a new object; a mutated one must not reuse the answer)
    reader.roles = []
    assert not p.check(reader, "thing:read")
    assert len(calls) == 6


def test_the_target_is_part_of_the_key():
    p = _policy()
    rules = [oslo_policy.RuleDefault("thing:own", "project_id:%(project_id)s")]
    p = policy.Policy(lambda: rules)
    p.init(make_conf())
    ctx = context.from_noauth_token("alice:p1")
    assert p.check(ctx, "thing:own", {"project_id": "p1"})
    assert not p.check(ctx, "thing:own", {"project_id": "p2"})


class _OwnCredentials(context.RequestContext):
    """A context class whose policy values are not oslo.context's."""

    def to_policy_values(self):
        values = dict(super().to_policy_values())
        values["roles"] = ["reader"] if self.user_id == "bob" else []
        return values


def test_a_context_class_with_its_own_policy_values_is_keyed_on_them():
    p = _policy()
    bob = _OwnCredentials(user_id="bob", project_id="p1")
    carol = _OwnCredentials(user_id="carol", project_id="p1")
    assert p.check(bob, "thing:read")
    assert not p.check(carol, "thing:read")
    carol.user_id = "bob"
    assert p.check(carol, "thing:read")
