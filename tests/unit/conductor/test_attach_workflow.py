"""The conductor's attach workflow: each step's failure undoes the steps before
it (unit test: the compute RPC client and the volume API are test doubles)."""
import types
from unittest import mock

import pytest

import volattach  # noqa: F401
from volattach import objects
from volattach.conductor import connectors
from volattach.conductor import manager
from volattach import exception
from volattach import rpc

objects.register_all()


class FakeBDM:
    def __init__(self):
        self.attachment_id = None
        self.device_name = "/dev/vdb"
        self.volume_id = "vol-1"
        self.connection_info = None
        self.attach_mode = None
        self.saved = 0
        self.saves = []         # what each save wrote
        self.save_error = None
        self.destroyed = False

    def save(self):
        if self.save_error is not None:
            raise self.save_error
        self.saved += 1
        self.saves.append((self.attachment_id, self.attach_mode,
                           self.connection_info))

    def destroy(self):
        self.destroyed = True

    def set_connection_info(self, info):
        self.connection_info = info


@pytest.fixture
def workflow():
    bdm = FakeBDM()
    compute = mock.Mock()
    compute.reserve_block_device_name.return_value = bdm
    compute.sends_mappings_with_reserve.return_value = False   # a 1.3 compute
    volume = mock.Mock()
    volume.attachment_create.return_value = {"id": "att-1"}
    volume.get.return_value = {"id": "vol-1", "multiattach": False}
    volume.attachment_update.return_value = {"id": "att-1",
                                             "connection_info": {"driver_volume_type": "fake"}}
    with mock.patch.object(manager, "compute_rpcapi"), \
            mock.patch.object(objects, "InstanceActionEvent") as events, \
            mock.patch.object(objects, "Instance") as instances, \
            mock.patch.object(connectors.HostConnectors, "get",
                              return_value={"host": "h1"}) as connector:
        instances.get_by_uuid.return_value = types.SimpleNamespace(
            uuid="inst-1", host="h1", task_state=None)
        tm = manager.ComputeTaskManager(volume_api=volume)
        tm.compute_rpcapi = compute
        ctx = mock.Mock()
        # the server as the workflow reads it again (the API's read here)
        instance = instances.get_by_uuid.return_value
        yield types.SimpleNamespace(tm=tm, compute=compute, volume=volume, bdm=bdm,
                                    ctx=ctx, instance=instance, instances=instances,
                                    event=events.event_start.return_value,
                                    connector=connector)


def test_success_runs_every_step_in_order(workflow):
    w = workflow
    assert w.tm.attach_volume(w.ctx, w.instance, "vol-1") == "/dev/vdb"
    w.volume.attachment_create.assert_called_once_with(w.ctx, "vol-1", "inst-1", mode=None)
    assert w.bdm.attach_mode == "rw"
    assert w.compute.attach_volume.call_args.kwargs == {"attach_mode": "rw"}
    w.volume.attachment_update.assert_called_once()
    w.compute.attach_volume.assert_called_once_with(w.ctx, w.instance, w.bdm, attach_mode="rw")
    w.volume.attachment_complete.assert_called_once_with(w.ctx, "att-1")
    assert w.bdm.attachment_id == "att-1" and not w.bdm.destroyed
    w.volume.attachment_delete.assert_not_called()
    w.event.finish.assert_called_once_with()


def test_reserve_failure_leaves_nothing(workflow):
    w = workflow
    w.compute.reserve_block_device_name.side_effect = exception.DevicePathInUse(path="/dev/vdb")
    with pytest.raises(exception.DevicePathInUse):
        w.tm.attach_volume(w.ctx, w.instance, "vol-1")
    w.volume.attachment_create.assert_not_called()
    w.event.finish.assert_called_once()
    assert isinstance(w.event.finish.call_args.kwargs["error"], exception.DevicePathInUse)


@pytest.mark.parametrize("error", [
    rpc.RPCTimeout(topic="compute", method="reserve_block_device_name"),
    # the compute's own call that created the record lost its answer,
    # and the compute said so
    exception.ServiceUnavailable(),
    # a refusal: no record was made, and abandoning its uuid is harmless
    exception.VolumeAlreadyAttached(volume_id="vol-1", server_id="inst-1"),
])
def test_a_failed_reserve_abandons_the_uuid_it_sent(workflow, error):
    """Whatever the reserve ended with, the record may exist or be created
    later (a request held back in a restarting broker): the rollback
    abandons the uuid the conductor sent, and only that one (the database
    side: tests/unit/db/test_abandoned_reservations.py)."""
    w = workflow
    w.compute.reserve_block_device_name.side_effect = error
    with mock.patch.object(objects.BlockDeviceMapping,
                           "abandon_reservation") as abandon:
        with pytest.raises(type(error)):
            w.tm.attach_volume(w.ctx, w.instance, "vol-1")
    sent = w.compute.reserve_block_device_name.call_args.kwargs["bdm_uuid"]
    abandon.assert_called_once_with(w.ctx, "inst-1", sent)
    w.volume.attachment_create.assert_not_called()
    assert w.event.finish.call_args.kwargs["error"] is error


def test_an_answered_reserve_is_undone_by_its_record(workflow):
    """A reserve that answered is undone by destroying the record it
    returned, not by abandoning a uuid."""
    w = workflow
    w.volume.attachment_create.side_effect = exception.VolumeNotFound(
        volume_id="vol-1")
    with mock.patch.object(objects.BlockDeviceMapping,
                           "abandon_reservation") as abandon:
        with pytest.raises(exception.VolumeNotFound):
            w.tm.attach_volume(w.ctx, w.instance, "vol-1")
    assert w.bdm.destroyed
    abandon.assert_not_called()


def test_each_attach_sends_a_uuid_of_its_own(workflow):
    w = workflow
    w.tm.attach_volume(w.ctx, w.instance, "vol-1")
    w.tm.attach_volume(w.ctx, w.instance, "vol-1")
    sent = [c.kwargs["bdm_uuid"]
            for c in w.compute.reserve_block_device_name.call_args_list]
    assert len(set(sent)) == 2 and all(len(u) == 36 for u in sent)


def test_attachment_create_failure_destroys_bdm(workflow):
    w = workflow
    w.volume.attachment_create.side_effect = exception.InvalidVolume(reason="in-use")
    with pytest.raises(exception.InvalidVolume):
        w.tm.attach_volume(w.ctx, w.instance, "vol-1")
    assert w.bdm.destroyed
    w.volume.attachment_delete.assert_not_called()


def test_compute_attach_failure_deletes_attachment_and_bdm(workflow):
    w = workflow
    w.compute.attach_volume.side_effect = exception.VirtDriverError(operation="attach",
                                                                    reason="boom")
    with pytest.raises(exception.VirtDriverError):
        w.tm.attach_volume(w.ctx, w.instance, "vol-1")
    w.volume.attachment_delete.assert_called_once_with(w.ctx, "att-1")
    assert w.bdm.destroyed
    w.compute.detach_volume.assert_not_called()  # never plugged
    w.volume.attachment_complete.assert_not_called()


def test_an_unanswered_compute_attach_is_unplugged_too(workflow):
    """The compute may have plugged the volume before its answer was lost:
    the rollback unplugs (a no-op where nothing was plugged), then cleans
    up as after any failure."""
    w = workflow
    w.compute.attach_volume.side_effect = rpc.RPCTimeout(
        topic="compute", method="attach_volume")
    with pytest.raises(rpc.RPCTimeout):
        w.tm.attach_volume(w.ctx, w.instance, "vol-1")
    w.compute.detach_volume.assert_called_once_with(w.ctx, w.instance, w.bdm)
    w.volume.attachment_delete.assert_called_once_with(w.ctx, "att-1")
    assert w.bdm.destroyed
    w.volume.attachment_complete.assert_not_called()


def test_complete_failure_unplugs_then_cleans_up(workflow):
    w = workflow
    w.volume.attachment_complete.side_effect = exception.CinderConnectionFailed(reason="x")
    with pytest.raises(exception.CinderConnectionFailed):
        w.tm.attach_volume(w.ctx, w.instance, "vol-1")
    w.compute.detach_volume.assert_called_once_with(w.ctx, w.instance, w.bdm)
    w.volume.attachment_delete.assert_called_once_with(w.ctx, "att-1")
    assert w.bdm.destroyed


def test_read_only_attach_reserves_ro_and_tells_connector_and_compute(workflow):
    w = workflow
    w.tm.attach_volume(w.ctx, w.instance, "vol-1", attach_mode="ro")
    w.volume.attachment_create.assert_called_once_with(w.ctx, "vol-1", "inst-1", mode="ro")
    assert w.bdm.attach_mode == "ro"
    w.compute.attach_volume.assert_called_once_with(w.ctx, w.instance, w.bdm,
                                                    attach_mode="ro")
    assert w.connector.call_args.args[-1] == "ro"


def test_older_compute_reads_the_mappings_itself(workflow):
    w = workflow
    with mock.patch.object(objects, "BlockDeviceMappingList") as listing:
        w.tm.attach_volume(w.ctx, w.instance, "vol-1", device="/dev/vdc", tag="t")
    listing.get_by_instance_uuid.assert_not_called()
    w.compute.reserve_block_device_name.assert_called_once_with(
        w.ctx, w.instance, "/dev/vdc", "vol-1", tag="t",
        delete_on_termination=False, bdms=None, bdm_uuid=mock.ANY)


def test_compute_1_4_gets_the_mappings_with_the_reserve(workflow):
    w = workflow
    w.compute.sends_mappings_with_reserve.return_value = True
    with mock.patch.object(objects, "BlockDeviceMappingList") as listing:
        w.tm.attach_volume(w.ctx, w.instance, "vol-1", delete_on_termination=True)
    w.compute.sends_mappings_with_reserve.assert_called_once_with("h1")
    listing.get_by_instance_uuid.assert_called_once_with(w.ctx, "inst-1")
    w.compute.reserve_block_device_name.assert_called_once_with(
        w.ctx, w.instance, None, "vol-1", tag=None, delete_on_termination=True,
        bdms=listing.get_by_instance_uuid.return_value, bdm_uuid=mock.ANY)


# -- one save of the BDM per attach ---------------------------------------------------
def test_the_bdm_is_saved_once_with_attachment_mode_and_connection(workflow):
    w = workflow
    w.tm.attach_volume(w.ctx, w.instance, "vol-1")
    assert w.bdm.saves == [("att-1", "rw", {"driver_volume_type": "fake"})]


def test_the_single_save_lands_before_the_compute_plugs(workflow):
    w = workflow
    w.compute.attach_volume.side_effect = lambda *a, **k: saved_at_plug.append(
        list(w.bdm.saves))
    saved_at_plug = []
    w.tm.attach_volume(w.ctx, w.instance, "vol-1")
    assert saved_at_plug == [[("att-1", "rw", {"driver_volume_type": "fake"})]]


def test_a_read_only_volume_is_saved_ro_in_the_same_save(workflow):
    w = workflow
    w.volume.attachment_update.return_value = {
        "id": "att-1", "attach_mode": "ro",
        "connection_info": {"driver_volume_type": "fake"}}
    w.tm.attach_volume(w.ctx, w.instance, "vol-1")      # rw asked
    assert w.bdm.saves == [("att-1", "ro", {"driver_volume_type": "fake"})]
    w.compute.attach_volume.assert_called_once_with(w.ctx, w.instance, w.bdm,
                                                    attach_mode="ro")


def test_attachment_update_failure_deletes_the_unsaved_attachment(workflow):
    w = workflow
    w.volume.attachment_update.side_effect = exception.InvalidVolume(reason="x")
    with pytest.raises(exception.InvalidVolume):
        w.tm.attach_volume(w.ctx, w.instance, "vol-1")
    assert w.bdm.saves == []
    w.volume.attachment_delete.assert_called_once_with(w.ctx, "att-1")
    assert w.bdm.destroyed
    w.compute.attach_volume.assert_not_called()


def test_bdm_save_failure_deletes_the_connected_attachment(workflow):
    w = workflow
    w.bdm.save_error = exception.BDMNotFound(id=1)      # destroyed meanwhile
    with pytest.raises(exception.BDMNotFound):
        w.tm.attach_volume(w.ctx, w.instance, "vol-1")
    w.volume.attachment_delete.assert_called_once_with(w.ctx, "att-1")
    assert w.bdm.destroyed
    w.compute.attach_volume.assert_not_called()
    w.volume.attachment_complete.assert_not_called()


@pytest.mark.parametrize("gone", [
    exception.InstanceNotFound(instance_id="inst-1"),
    types.SimpleNamespace(uuid="inst-1", host="h1", task_state="deleting")],
    ids=["deleted", "deleting"])
def test_a_server_deleted_meanwhile_gets_nothing_plugged(workflow, gone):
    """Checked again once the record holds its attachment: a delete that
    read the server's records before cannot see this one."""
    w = workflow
    if isinstance(gone, Exception):
        # found by the reads around the reserve, gone at the third
        w.instances.get_by_uuid.side_effect = [w.instance, w.instance, gone]
    else:
        w.instances.get_by_uuid.return_value = gone
    with pytest.raises((exception.InstanceNotFound, exception.InstanceInvalidState)):
        w.tm.attach_volume(w.ctx, w.instance, "vol-1")
    assert w.bdm.saved == 1                      # the record had its attachment
    w.compute.attach_volume.assert_not_called()
    w.volume.attachment_delete.assert_called_once_with(w.ctx, "att-1")
    w.volume.attachment_complete.assert_not_called()
    assert w.bdm.destroyed


def test_a_server_migrating_since_the_api_read_it_gets_nothing_reserved(workflow):
    w = workflow
    w.instances.get_by_uuid.return_value = types.SimpleNamespace(
        uuid="inst-1", host="h1", task_state="migrating")
    with pytest.raises(exception.InstanceInvalidState):
        w.tm.attach_volume(w.ctx, w.instance, "vol-1")
    w.compute.reserve_block_device_name.assert_not_called()
    w.volume.attachment_create.assert_not_called()
    w.event.finish.assert_called_once()


@pytest.mark.parametrize("moved", [
    types.SimpleNamespace(uuid="inst-1", host="h1", task_state="migrating"),
    types.SimpleNamespace(uuid="inst-1", host="h2", task_state=None)],
    ids=["migrating", "moved"])
def test_a_migration_started_during_the_reserve_gets_the_record_back(
        workflow, moved):
    """Read again once the record exists: the record goes, nothing was
    attached in the volume service, nothing plugged."""
    w = workflow
    w.instances.get_by_uuid.side_effect = [w.instance, moved]
    with pytest.raises(exception.InstanceInvalidState):
        w.tm.attach_volume(w.ctx, w.instance, "vol-1")
    w.volume.attachment_create.assert_not_called()
    w.compute.attach_volume.assert_not_called()
    assert w.bdm.destroyed
    w.event.finish.assert_called_once()


@pytest.mark.parametrize("version,refused", [(None, True), (13, True),
                                             (14, False)])
def test_a_key_in_the_connection_needs_a_compute_that_takes_it(
        workflow, version, refused):
    """A read-only rbd connection carries the volume's key (``keyring``):
    a compute older than RBD_KEYRING_SERVICE_VERSION would look for a
    keyring file, so the attach is refused (409) and rolled back before
    anything is saved or plugged."""
    w = workflow
    w.volume.attachment_update.return_value = {
        "id": "att-1", "attach_mode": "ro", "connection_info": {
            "driver_volume_type": "rbd", "auth_username": "u",
            "keyring": "[client.u]\n\tkey = x\n"}}
    service = (None if version is None
               else types.SimpleNamespace(version=version))
    with mock.patch.object(objects, "Service") as services:
        services.get_by_host_and_binary.return_value = service
        if refused:
            with pytest.raises(exception.ComputeTooOldForFeature) as e:
                w.tm.attach_volume(w.ctx, w.instance, "vol-1",
                                   attach_mode="ro")
            assert isinstance(e.value, exception.Conflict)      # 409
            assert "h1" in str(e.value)
            assert w.bdm.saves == []
            w.volume.attachment_delete.assert_called_once_with(w.ctx,
                                                               "att-1")
            w.compute.attach_volume.assert_not_called()
        else:
            w.tm.attach_volume(w.ctx, w.instance, "vol-1", attach_mode="ro")
            w.compute.attach_volume.assert_called_once()
    services.get_by_host_and_binary.assert_called_once_with(
        w.ctx.elevated.return_value, "h1", "volattach-compute")


def test_servers_with_a_keyed_connection_need_new_computes():
    """The scheduler's minimum for a server's volumes (a move, an
    unshelve): a read-only rbd record with a key needs the computes that
    take it, another read-only one only read-only support."""
    from volattach.conductor.tasks import base
    from volattach.objects import service as service_obj

    def bdm(mode, info):
        return types.SimpleNamespace(is_volume=True, attach_mode=mode,
                                     get_connection_info=lambda: info)
    keyed = {"driver_volume_type": "rbd", "keyring": "k"}
    cases = [([bdm("rw", None)], None),
             ([bdm("ro", {"driver_volume_type": "rbd"})],
              service_obj.READ_ONLY_ATTACH_SERVICE_VERSION),
             ([bdm("rw", None), bdm("ro", keyed)],
              service_obj.RBD_KEYRING_SERVICE_VERSION)]
    for bdms, wanted in cases:
        with mock.patch.object(objects, "BlockDeviceMappingList") as lists:
            lists.get_by_instance_uuid.return_value = bdms
            assert base.min_version_for(
                mock.Mock(), types.SimpleNamespace(uuid="i")) == wanted
