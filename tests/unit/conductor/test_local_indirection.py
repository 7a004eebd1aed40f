"""``conductor.local_indirection.LocalIndirection``: a compute's object calls
served in the calling thread on a real (SQLite) database, as the bus would
serve them: the compute's reserve creates its record through it, object
and class calls answer with copies (nothing shared with the caller),
a refusal comes back as its class, and the calls reach the database without
a bus (none is set up here)."""
import types
import uuid

import pytest

import volattach  # noqa: F401
from volattach import context as volattach_context
from volattach import exception
from volattach import objects
from volattach.compute import manager as compute_manager
from volattach.compute.virt import fake
from volattach.conductor import local_indirection
from volattach.objects import base as objects_base
from tests import db_fixtures

objects.register_all()


class Counted(local_indirection.LocalIndirection):
    """The local indirection, counting the calls it serves."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def _call(self, context, method, **values):
        self.calls.append(method)
        return super()._call(context, method, **values)


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setattr(objects_base._INDIRECTION, "process_api", None)
    with db_fixtures.configured_compute_database("sqlite", tmp_path):
        yield types.SimpleNamespace(
            ctx=volattach_context.RequestContext(user_id="u", project_id="p"),
            server=db_fixtures.instance_row(), local=Counted(),
            compute=compute_manager.ComputeManager("h1", fake.FakeDriver("h1")))


def _listing(env):
    with objects_base.indirection(env.local):
        return objects.BlockDeviceMappingList.get_by_instance_uuid(
            env.ctx, env.server)


def test_the_reserve_creates_its_record_through_it(env):
    instance = types.SimpleNamespace(uuid=env.server, host="h1")
    chosen = str(uuid.uuid4())
    with objects_base.indirection(env.local):
        bdm = env.compute.reserve_block_device_name(
            env.ctx, instance, None, "vol-1", bdms=_listing(env),
            bdm_uuid=chosen)
    assert (bdm.uuid, bdm.volume_id, bdm.device_name) == (
        chosen, "vol-1", "/dev/vda")
    assert bdm.id and not bdm.obj_what_changed()
    [stored] = _listing(env)
    assert (stored.id, stored.uuid) == (bdm.id, chosen)
    # the listing the test sent, the creation, the listing read here
    assert env.local.calls == ["object_class_action_versions",
                               "object_action",
                               "object_class_action_versions"]


def test_answers_are_copies(env):
    with objects_base.indirection(env.local):
        bdm = objects.BlockDeviceMapping(
            env.ctx, uuid=str(uuid.uuid4()), instance_uuid=env.server,
            source_type="volume", destination_type="volume",
            volume_id="vol-1", device_name="/dev/vdb")
        bdm.create()
        first = objects.BlockDeviceMappingList.get_by_instance_uuid(
            env.ctx, env.server)
        first[0].device_name = "/dev/vdz"       # not saved
        again = objects.BlockDeviceMappingList.get_by_instance_uuid(
            env.ctx, env.server)
    assert again[0].device_name == "/dev/vdb"
    assert again[0] is not first[0]
    # the instance the caller holds got the manager's updates, not its
    # object
    assert bdm.id == again[0].id


def test_a_refusal_comes_back_as_its_class(env):
    chosen = str(uuid.uuid4())
    with objects_base.indirection(None):
        objects.BlockDeviceMapping.abandon_reservation(
            env.ctx, env.server, chosen)
    with objects_base.indirection(env.local):
        late = objects.BlockDeviceMapping(
            env.ctx, uuid=chosen, instance_uuid=env.server,
            source_type="volume", destination_type="volume",
            volume_id="vol-1", device_name="/dev/vdb")
        with pytest.raises(exception.ReservationAbandoned):
            late.create()
    assert _listing(env).objects == []
