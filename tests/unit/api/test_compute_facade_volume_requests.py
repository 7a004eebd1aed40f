"""volattach.api.compute.API on a real SQLite database: the volume requests read the
server and its mappings once (get_with_bdms), check the compute through the
up-cache, and answer as the one-by-one reads did."""
import datetime
import json
import uuid

import pytest
from sqlalchemy import event

import volattach  # noqa: F401
from volattach import objects
from volattach.api import compute as compute_api
from volattach.db import api as db_api
from volattach.db import engine as db_engine
from volattach.db.models import utcnow
from tests import db_fixtures
from volattach import context as volattach_context
from volattach import exception
from volattach.conf import CONF

objects.register_all()

FLAVOR = json.dumps({"id": 1, "flavorid": "1", "name": "m1.tiny", "vcpus": 1,
                     "memory_mb": 512, "root_gb": 1, "ephemeral_gb": 0, "swap": 0,
                     "rxtx_factor": 1.0, "is_public": True, "disabled": False,
                     "description": None})


class _Volumes:
    def __init__(self):
        self.calls = []

    def get(self, ctx, volume_id):
        self.calls.append(("get", volume_id))
        return {"id": volume_id, "status": "available", "multiattach": False,
                "attachments": []}

    def begin_detaching(self, ctx, volume_id):
        self.calls.append(("begin_detaching", volume_id))

    def roll_detaching(self, ctx, volume_id):
        self.calls.append(("roll_detaching", volume_id))


class _Tasks:
    class rpcapi:
        @staticmethod
        def check_can_send(method):
            return True

    def __init__(self):
        self.calls = []

    def attach_volume(self, ctx, instance, volume_id, **kwargs):
        self.calls.append(("attach_volume", volume_id, kwargs))

    def detach_volume(self, ctx, instance, volume_id):
        self.calls.append(("detach_volume", volume_id))

    def delete_instance(self, ctx, instance):
        self.calls.append(("delete_instance", instance.uuid))


@pytest.fixture
def database(tmp_path):
    with db_fixtures.configured_compute_database("sqlite", tmp_path) as url:
        yield url


@pytest.fixture
def statements(database):
    """The SQL statements run while the test runs (by first word and table)."""
    seen = []
    engine = db_engine.get_engine(database)

    def listener(conn, cursor, statement, *args):
        seen.append(" ".join(statement.split()[:4]))
    event.listen(engine, "before_cursor_execute", listener)
    yield seen
    event.remove(engine, "before_cursor_execute", listener)


@pytest.fixture
def api(database):
    return compute_api.API(volume_api=_Volumes(), compute_task_api=_Tasks())


@pytest.fixture
def ctx():
    return volattach_context.RequestContext(user_id="u1", project_id="p1",
                                            request_id="req-1")


def _server(project_id="p1", host="compute1"):
    return db_api.instance_create({
        "uuid": str(uuid.uuid4()), "project_id": project_id, "user_id": "u1",
        "vm_state": "active", "power_state": 1, "locked": False, "launch_index": 0,
        "host": host, "flavor": FLAVOR, "metadata": "{}"})["uuid"]


def _bdm(server, volume_id=None, **kw):
    values = {"uuid": str(uuid.uuid4()), "instance_uuid": server,
              "volume_id": volume_id or str(uuid.uuid4()), "source_type": "volume",
              "destination_type": "volume", "device_name": "/dev/vdb",
              "attachment_id": str(uuid.uuid4()), "connection_info": "{}",
              "delete_on_termination": False, "no_device": False}
    values.update(kw)
    return db_api.bdm_create(values)


def _compute(host="compute1", seen=None):
    return db_api.service_create({
        "uuid": str(uuid.uuid4()), "host": host, "binary": "volattach-compute",
        "version": 4, "report_count": 0, "disabled": False, "forced_down": False,
        "last_seen_up": seen or utcnow()})


def _service_reads(statements):
    return [s for s in statements if s.startswith("SELECT") and "services" in s]


def test_get_with_bdms_is_get_plus_the_mappings(api, ctx):
    server = _server()
    root = _bdm(server, source_type="image", destination_type="local",
                volume_id=None, boot_index=0, device_name="/dev/vda")
    data = _bdm(server)
    instance, bdms = api.get_with_bdms(ctx, server)
    assert instance.obj_to_primitive() == api.get(ctx, server).obj_to_primitive()
    assert [b.id for b in bdms] == [root["id"], data["id"]]
    assert [b.uuid for b in api.get_volume_attachments(ctx, instance, bdms=bdms)] == \
        [b.uuid for b in api.get_volume_attachments(ctx, instance)] == [data["uuid"]]


def test_get_with_bdms_hides_other_projects_servers(api, ctx):
    server = _server(project_id="p2")
    with pytest.raises(exception.InstanceNotFound) as info:
        api.get_with_bdms(ctx, server)
    assert server in info.value.format_message()
    assert api.get_with_bdms(ctx.elevated(), server)[0].uuid == server
    with pytest.raises(exception.InstanceNotFound):
        api.get_with_bdms(ctx, str(uuid.uuid4()))


_LISTED = ("id", "uuid", "instance_uuid", "volume_id", "device_name", "tag",
           "delete_on_termination", "attachment_id", "attach_mode")


def test_list_volume_attachments_rows_match_the_objects(api, ctx, statements):
    server = _server()
    _bdm(server, source_type="image", destination_type="local", volume_id=None,
         boot_index=0, device_name="/dev/vda")
    _bdm(server, tag="t1", delete_on_termination=True, attach_mode="ro")
    _bdm(server, device_name=None, attachment_id=None)
    _bdm(_server(), device_name="/dev/vdc")      # another server's mapping
    del statements[:]
    project_id, rows = api.list_volume_attachments(ctx, server)
    assert len(statements) == 1
    assert project_id == "p1"
    instance = api.get(ctx, server)
    expected = api.get_volume_attachments(ctx, instance)
    assert len(rows) == len(expected) == 2
    for row, bdm in zip(rows, expected):
        for name in _LISTED:
            if name == "attach_mode":
                # the object says rw for a NULL column, the view does the same
                assert (row.attach_mode or "rw") == bdm.attach_mode
            else:
                assert getattr(row, name) == getattr(bdm, name), name
    assert rows[0].delete_on_termination is True and rows[0].attach_mode == "ro"


def test_list_volume_attachments_of_a_server_without_volumes(api, ctx):
    server = _server()
    _bdm(server, source_type="image", destination_type="local", volume_id=None)
    assert api.list_volume_attachments(ctx, server) == ("p1", [])
    assert api.list_volume_attachments(ctx, _server()) == ("p1", [])


def test_list_volume_attachments_hides_missing_and_other_projects_servers(api, ctx):
    server = _server(project_id="p2")
    _bdm(server)
    with pytest.raises(exception.InstanceNotFound) as info:
        api.list_volume_attachments(ctx, server)
    assert server in info.value.format_message()
    project_id, rows = api.list_volume_attachments(ctx.elevated(), server)
    assert project_id == "p2" and len(rows) == 1
    with pytest.raises(exception.InstanceNotFound):
        api.list_volume_attachments(ctx, str(uuid.uuid4()))
    deleted = _server()
    db_api.instance_destroy(deleted)
    with pytest.raises(exception.InstanceNotFound):
        api.list_volume_attachments(ctx, deleted)


def test_get_volume_attachment_from_the_mappings_answers_as_the_query(api, ctx):
    server = _server()
    volume = str(uuid.uuid4())
    first = _bdm(server, volume_id=volume)
    _bdm(server, volume_id=volume, device_name="/dev/vdc")
    local = _bdm(server, destination_type="local", source_type="blank")
    instance, bdms = api.get_with_bdms(ctx, server)
    assert api.get_volume_attachment(ctx, instance, volume, bdms=bdms).id == \
        api.get_volume_attachment(ctx, instance, volume).id == first["id"]
    for missing in (str(uuid.uuid4()), local["volume_id"]):
        for kwargs in ({}, {"bdms": bdms}):
            with pytest.raises(exception.VolumeBDMNotFound):
                api.get_volume_attachment(ctx, instance, missing, **kwargs)


def test_attach_with_the_mappings_reads_no_more_bdms_and_caches_the_compute(
        api, ctx, statements):
    _compute()
    server = _server()
    attached = _bdm(server)
    instance, bdms = api.get_with_bdms(ctx, server)
    with pytest.raises(exception.InvalidVolume):
        api.attach_volume(ctx, instance, attached["volume_id"], wait=False, bdms=bdms)
    del statements[:]
    for _ in range(3):
        api.attach_volume(ctx, instance, str(uuid.uuid4()), wait=False, bdms=bdms)
    assert not [s for s in statements if "block_device_mappings" in s]
    assert len(_service_reads(statements)) == 1       # then the up-cache
    assert len([s for s in statements if s.startswith("INSERT")]) == 3
    assert [c[0] for c in api.compute_task_api.calls] == ["attach_volume"] * 3


def test_attach_to_a_down_compute_is_409_every_time(api, ctx, statements):
    _compute(seen=utcnow() - datetime.timedelta(seconds=CONF.service_down_time + 5))
    instance, bdms = api.get_with_bdms(ctx, _server())
    del statements[:]
    for _ in range(2):
        with pytest.raises(exception.ServiceUnavailableConflict):
            api.attach_volume(ctx, instance, str(uuid.uuid4()), wait=False, bdms=bdms)
    assert len(_service_reads(statements)) == 2       # a down service is re-read
    assert api.compute_task_api.calls == []


def test_detach_with_the_mappings(api, ctx, statements):
    _compute()
    server = _server()
    bdm = _bdm(server)
    instance, bdms = api.get_with_bdms(ctx, server)
    del statements[:]
    api.detach_volume(ctx, instance, bdm["volume_id"], bdms=bdms)
    assert not [s for s in statements if "block_device_mappings" in s]
    assert api.volume_api.calls == [("begin_detaching", bdm["volume_id"])]
    assert api.compute_task_api.calls == [("detach_volume", bdm["volume_id"])]
    with pytest.raises(exception.VolumeBDMNotFound):
        api.detach_volume(ctx, instance, str(uuid.uuid4()), bdms=bdms)


def test_server_delete_reads_the_compute_every_time(api, ctx, statements):
    _compute()
    for _ in range(2):
        instance = api.get(ctx, _server())
        del statements[:]
        api.delete(ctx, instance)
        assert len(_service_reads(statements)) == 1
    assert [c[0] for c in api.compute_task_api.calls] == ["delete_instance"] * 2


# -- a server action whose cast cannot be sent ------------------------------------

class _DownBus(_Tasks):
    def stop_instance(self, ctx, instance):
        import oslo_messaging
        raise oslo_messaging.MessageDeliveryFailure("broker unreachable")


def test_unsent_action_puts_task_state_back_and_records_the_failure(database, ctx):
    api = compute_api.API(volume_api=_Volumes(), compute_task_api=_DownBus())
    server = _server()
    instance = api.get(ctx, server)
    import oslo_messaging
    with pytest.raises(oslo_messaging.MessageDeliveryFailure):
        api.stop(ctx, instance)
    fresh = api.get(ctx, server)
    # not stuck in powering-off: the user can retry (or do something else)
    assert (fresh.vm_state, fresh.task_state) == ("active", None)
    [action] = objects.InstanceActionList.get_by_instance_uuid(ctx, server)
    assert action.action == "stop"
    [event] = objects.InstanceActionEventList.get_by_action(ctx, action.id)
    assert (event.event, event.result) == ("api_stop", "Error")
    assert "broker unreachable" in event.traceback


def test_sent_action_keeps_its_task_state(database, ctx):
    class _Bus(_Tasks):
        def stop_instance(self, ctx, instance):
            self.calls.append(("stop_instance", instance.uuid))
    tasks = _Bus()
    api = compute_api.API(volume_api=_Volumes(), compute_task_api=tasks)
    server = _server()
    api.stop(ctx, api.get(ctx, server))
    assert tasks.calls == [("stop_instance", server)]
    assert api.get(ctx, server).task_state == "powering-off"


def test_swap_outside_a_volume_migration_is_refused_before_any_write(api, ctx):
    """OSSN-0094: with no migration_status on the source volume the facade
    refuses the swap after reading the source volume only: no
    begin_detaching, no attachment, nothing cast to the conductor."""
    server = _server()
    volume = str(uuid.uuid4())
    _bdm(server, volume_id=volume)
    _compute()
    instance = api.get(ctx.elevated(), server)
    with pytest.raises(exception.SwapOutsideMigration) as info:
        api.swap_volume(ctx.elevated(), instance, volume, str(uuid.uuid4()))
    assert isinstance(info.value, exception.Conflict)
    assert volume in info.value.format_message()
    assert api.volume_api.calls == [("get", volume)]
    assert api.compute_task_api.calls == []


# -- the database fails as the instance action is recorded ---------------------------

@pytest.fixture
def actions_fail(monkeypatch):
    """InstanceAction.action_start raises as with the database down (the
    rest of the database still answers, as it does for the step before)."""
    def action_start(*args, **kwargs):
        raise exception.DatabaseUnavailable()
    monkeypatch.setattr(objects.InstanceAction, "action_start", action_start)


class _MigratingVolumes(_Volumes):
    def get(self, ctx, volume_id):
        volume = super().get(ctx, volume_id)
        volume["migration_status"] = "migrating"
        return volume

    def attachment_create(self, ctx, volume_id, instance_uuid, mode=None):
        self.calls.append(("attachment_create", volume_id))
        return {"id": str(uuid.uuid4())}


def test_detach_unrecorded_leaves_the_volume_as_it_was(api, ctx, actions_fail):
    """The CI run of 4f0786a: PostgreSQL went down between begin_detaching
    and the action's record, and the volume stayed detaching (its undo
    needs the volume service's database, down too).  The record comes
    first now: nothing has changed when it fails."""
    _compute()
    server = _server()
    bdm = _bdm(server)
    instance, bdms = api.get_with_bdms(ctx, server)
    with pytest.raises(exception.DatabaseUnavailable):
        api.detach_volume(ctx, instance, bdm["volume_id"], bdms=bdms)
    assert api.volume_api.calls == []
    assert api.compute_task_api.calls == []


def test_swap_unrecorded_leaves_both_volumes_as_they_were(database, ctx,
                                                          actions_fail):
    api = compute_api.API(volume_api=_MigratingVolumes(),
                          compute_task_api=_Tasks())
    _compute()
    server = _server()
    volume, new = str(uuid.uuid4()), str(uuid.uuid4())
    _bdm(server, volume_id=volume)
    instance = api.get(ctx.elevated(), server)
    with pytest.raises(exception.DatabaseUnavailable):
        api.swap_volume(ctx.elevated(), instance, volume, new)
    assert [c[0] for c in api.volume_api.calls] == ["get", "get"]
    assert api.compute_task_api.calls == []


def test_server_action_unrecorded_puts_task_state_back(database, ctx,
                                                       actions_fail):
    tasks = _Tasks()
    api = compute_api.API(volume_api=_Volumes(), compute_task_api=tasks)
    server = _server()
    with pytest.raises(exception.DatabaseUnavailable):
        api.stop(ctx, api.get(ctx, server))
    assert api.get(ctx, server).task_state is None
    assert tasks.calls == []
