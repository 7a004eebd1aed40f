"""The external-events facade and its schemas, alone: the names each
microversion accepts, the policy default, and how the accepted events are
grouped (one cast per compute host, one fanout to the conductors), with
the codes of those that are not sent (404, 400, 422)."""
import uuid

import pytest

from volattach import context as volattach_context
from volattach import exception
from volattach import objects
from volattach.api import microversions
from volattach.api import policy
from volattach.api import validation
from volattach.api.compute import external_events
from volattach.api.schemas import server_external_events as schemas

objects.register_all()


def _body(name, **extra):
    return {"events": [dict({"name": name,
                             "server_uuid": str(uuid.uuid4())}, **extra)]}


@pytest.mark.parametrize("name,first", [
    ("network-changed", "2.1"), ("network-vif-plugged", "2.1"),
    ("network-vif-unplugged", "2.1"), ("network-vif-deleted", "2.1"),
    ("volume-extended", "2.51"), ("power-update", "2.76"),
    ("accelerator-request-bound", "2.82"), ("volume-reimaged", "2.93")])
def test_each_name_from_its_microversion(name, first):
    version = microversions.Version.parse(first)
    validation.validate_body(version, schemas.CREATE, _body(name, tag="t"))
    if first != "2.1":
        before = microversions.Version(version.major, version.minor - 1)
        with pytest.raises(exception.ValidationError):
            validation.validate_body(before, schemas.CREATE,
                                     _body(name, tag="t"))


def test_the_policy_default_is_service_or_admin(api):
    rule = "os_compute_api:os-server-external-events:create"
    for roles, allowed in (("member", False), ("reader", False),
                           ("service", True), ("admin", True)):
        ctx = volattach_context.from_noauth_token("u:p:" + roles)
        if allowed:
            policy.authorize(ctx, rule, {})
        else:
            with pytest.raises(exception.PolicyNotAuthorized):
                policy.authorize(ctx, rule, {})


class _Casts:
    def __init__(self, fail_hosts=()):
        self.computes, self.conductors = [], []
        self.fail_hosts = fail_hosts

    def external_instance_event(self, ctx, instances, events=None,
                                host=None):
        if events is None:                     # the conductors' fanout
            self.conductors.append(instances)
            return
        if host in self.fail_hosts:
            raise exception.ServiceUnavailable()
        self.computes.append((host, sorted(i.uuid for i in instances),
                              [e.key for e in events]))

    def can_send(self, method):
        return True

    def can_send_version(self, host, version):
        return True


class _Volumes:
    def __init__(self):
        self.gets = []

    def get(self, ctx, volume_id):
        self.gets.append(volume_id)
        return {"id": volume_id, "size": 5}


def _instance(host):
    return objects.Instance(uuid=str(uuid.uuid4()), host=host)


@pytest.fixture
def facade(monkeypatch):
    servers = {"a": _instance("h1"), "b": _instance("h1"),
               "c": _instance("h2"), "old": _instance("h0"),
               "nohost": _instance(None)}
    versions = {"h0": 12, "h1": 13, "h2": 13}
    monkeypatch.setattr(objects.InstanceList, "get_by_filters", classmethod(
        lambda cls, ctx, filters: [i for i in servers.values()
                                   if i.uuid in filters["uuids"]]))
    monkeypatch.setattr(objects.ServiceList, "get_all", classmethod(
        lambda cls, ctx, binary=None: [
            objects.Service(host=h, version=v) for h, v in versions.items()]))
    actions = []
    monkeypatch.setattr(objects.InstanceAction, "action_start", classmethod(
        lambda cls, ctx, uuid, action: actions.append((uuid, action))))
    casts = _Casts()
    api = external_events.ExternalEventsAPI(volume_api=_Volumes(),
                                            compute_task_api=casts)
    api._compute_rpcapi = casts
    api.servers, api.casts, api.actions = servers, casts, actions
    return api


def _event(server, name="volume-extended", tag="vol-1", **extra):
    return dict({"name": name, "server_uuid": server.uuid, "tag": tag},
                **extra)


def test_one_cast_per_host_and_sizes_read_once(facade):
    s = facade.servers
    events = [_event(s["a"]), _event(s["b"]), _event(s["c"]),
              _event(s["a"], name="network-changed", tag=None)] * 250
    ctx = volattach_context.get_admin_context()
    answered, ok = facade.external_instance_event(ctx, events)
    assert ok and len(answered) == 1000
    assert all(e["code"] == 200 for e in answered)
    assert sorted(h for h, _, _ in facade.casts.computes) == ["h1", "h2"]
    h1 = next(c for c in facade.casts.computes if c[0] == "h1")
    assert h1[1] == sorted([s["a"].uuid, s["b"].uuid])   # each server once
    assert len(h1[2]) == 750
    assert facade.volume_api.gets == ["vol-1"]           # once per volume
    assert len(facade.actions) == 750                   # extend_volume each


def test_the_codes_of_events_not_sent(facade):
    s = facade.servers
    missing = {"name": "network-changed",
               "server_uuid": str(uuid.uuid4())}
    events = [missing, _event(s["a"], tag=None), _event(s["nohost"]),
              _event(s["old"]), _event(s["a"], name="volume-reimaged")]
    answered, ok = facade.external_instance_event(
        volattach_context.get_admin_context(), events)
    assert not ok
    assert [e["code"] for e in answered] == [404, 400, 422, 422, 200]
    assert all(e["status"] == "failed" for e in answered[:4])
    assert facade.casts.computes == []                    # none to computes
    assert [[e.key for e in evs] for evs in facade.casts.conductors] == [
        ["volume-reimaged-vol-1"]]


def test_a_cast_that_cannot_be_sent_fails_only_its_events(facade):
    s = facade.servers
    facade.casts.fail_hosts = ("h1",)
    answered, ok = facade.external_instance_event(
        volattach_context.get_admin_context(),
        [_event(s["a"]), _event(s["c"])])
    assert not ok
    assert [e["code"] for e in answered] == [422, 200]
