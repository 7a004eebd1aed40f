"""Every connection the conductor hands a compute says whether the volume
is multiattach (``connection_info['multiattach']``, as Nova's compute sets
it from the volume): attach, the connect of build and unshelve, swap (the
NEW volume's flag) and live migration (the destination's attachment).
The libvirt driver writes ``<shareable/>`` for it.  Unit tests: the
compute RPC client, the volume API and the objects are test doubles (the
fixtures of the tasks' own unit tests)."""
import types
from unittest import mock

import volattach  # noqa: F401
from volattach import objects
from volattach.conductor.tasks import base
from tests.unit.conductor.test_attach_workflow import workflow  # noqa: F401
from tests.unit.conductor.test_live_migration_workflow import w  # noqa: F401
from tests.unit.conductor.test_swap_rollback import swap  # noqa: F401

objects.register_all()


def _volumes(multiattach):
    """A volume API double's ``get``: the volumes of ``multiattach`` are."""
    return lambda ctx, volume_id: {"id": volume_id, "status": "in-use",
                                   "multiattach": volume_id in multiattach}


def _task(volume_api):
    return base.TaskBase(mock.sentinel.ctx, types.SimpleNamespace(uuid="i"),
                         compute_rpcapi=mock.Mock(), volume_api=volume_api,
                         connectors=types.SimpleNamespace(
                             get=lambda *a: {"host": "h1"}))


def test_the_helper_sets_the_flag_from_the_volume_only():
    volume_api = mock.Mock()
    volume_api.get.side_effect = _volumes({"shared"})
    task = _task(volume_api)
    attachment = {"connection_info": {"driver_volume_type": "rbd",
                                      "name": "p/i"}}
    assert task._connection_info("shared", attachment) == {
        "driver_volume_type": "rbd", "name": "p/i", "multiattach": True}
    # a single-attach volume: no flag, even one the answer carried
    attachment["connection_info"]["multiattach"] = True
    assert task._connection_info("single", attachment) == {
        "driver_volume_type": "rbd", "name": "p/i"}
    # the answer itself is not changed
    assert attachment["connection_info"]["multiattach"] is True


def test_attach_of_a_multiattach_volume(workflow):  # noqa: F811
    workflow.volume.get.return_value = None
    workflow.volume.get.side_effect = _volumes({"vol-1"})
    workflow.tm.attach_volume(workflow.ctx, workflow.instance, "vol-1")
    assert workflow.bdm.saves[-1][2] == {"driver_volume_type": "fake",
                                         "multiattach": True}
    # the compute plugs the record that holds it
    plugged = workflow.compute.attach_volume.call_args.args[2]
    assert plugged.connection_info["multiattach"] is True


def test_attach_of_a_single_attach_volume(workflow):  # noqa: F811
    workflow.volume.get.side_effect = _volumes(set())
    workflow.tm.attach_volume(workflow.ctx, workflow.instance, "vol-1")
    assert "multiattach" not in workflow.bdm.saves[-1][2]


class Record:
    is_volume = True

    def __init__(self, volume_id, attachment_id):
        self.volume_id = volume_id
        self.attachment_id = attachment_id
        self.device_name = "/dev/vdb"
        self.attach_mode = "rw"
        self.instance_uuid = "i"
        self.connection_info = None

    def set_connection_info(self, info):
        self.connection_info = info

    def save_if_attachment(self, attachment_id):
        return attachment_id == self.attachment_id


def test_connect_volumes_of_build_and_unshelve():
    volume_api = mock.Mock()
    volume_api.get.side_effect = _volumes({"shared"})
    volume_api.attachment_update.side_effect = (
        lambda ctx, att, connector, mountpoint: {
            "id": att, "connection_info": {"attachment_id": att}})
    shared, single = Record("shared", "a-1"), Record("single", "a-2")
    _task(volume_api)._connect_volumes("h1", [shared, single])
    assert shared.connection_info == {"attachment_id": "a-1",
                                      "multiattach": True}
    assert single.connection_info == {"attachment_id": "a-2"}


def test_swap_carries_the_new_volumes_flag(swap):  # noqa: F811
    swap.volume.get.side_effect = lambda ctx, volume_id: {
        "id": volume_id, "multiattach": volume_id == "vol-new",
        "migration_status": None}
    base.execute_cast(swap.task)
    sent = swap.compute.swap_volume.call_args.args[3]
    assert sent == {"x": 1, "multiattach": True}
    assert swap.record.connection_info == sent


def test_swap_onto_a_single_attach_volume_drops_the_flag(swap):  # noqa: F811
    # the old volume was multiattach, the new one is not
    swap.volume.get.side_effect = lambda ctx, volume_id: {
        "id": volume_id, "multiattach": volume_id == "vol-old",
        "migration_status": None}
    swap.volume.attachment_update.return_value = {
        "connection_info": {"x": 1, "multiattach": True}}
    base.execute_cast(swap.task)
    assert swap.compute.swap_volume.call_args.args[3] == {"x": 1}


def test_live_migration_destination_attachments(w):  # noqa: F811
    listing = w.volume.get.side_effect
    w.volume.get.side_effect = lambda ctx, volume_id: dict(
        listing(ctx, volume_id), multiattach=volume_id == "vol-2")
    w.tm.live_migrate_instance(w.ctx, w.instance, None)
    new = w.compute.pre_live_migration.call_args.args[2]
    assert [b.connection_info for b in new] == [
        {"attachment_id": "new-1"},
        {"attachment_id": "new-2", "multiattach": True}]
    # the switched records keep it for the next reconnect
    assert [b.connection_info for b in w.bdms] == [
        b.connection_info for b in new]
