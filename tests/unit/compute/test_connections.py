"""Host connections reference-counted per shared target (compute.connections),
the fake driver's physical model of targets, and the compute manager's use
of both (issue 7: never disconnect a target another attachment still uses)."""
import random
import threading
import time
import types
import uuid

import pytest

from volattach import objects
import volattach  # noqa: F401
from volattach.compute import connections
from volattach.compute import manager as compute_manager
from volattach.compute.virt import fake
from volattach.conf import CONF

TARGET = "0d6a2b1e-0000-4000-8000-00000000000t"


@pytest.fixture(autouse=True)
def conf():
    CONF([], project="volattach", default_config_files=[])
    objects.register_all()
    yield CONF
    CONF.clear_override("fail_operations", group="fake_driver")
    CONF.clear_override("stats_file", group="fake_driver")


def shared_info(attachment_id, volume_id=None, target=TARGET, lun=1):
    return {"driver_volume_type": "iscsi", "attachment_id": attachment_id,
            "volume_id": volume_id or "vol-" + attachment_id,
            "target_portal": "10.0.0.1:3260",
            "target_iqn": "iqn.2010-10.org.volattach:fake:host-%s" % target,
            "target_lun": lun, "shared_target_id": target}


def own_info(attachment_id):
    return {"driver_volume_type": "iscsi", "attachment_id": attachment_id,
            "volume_id": "vol-" + attachment_id,
            "target_portal": "10.0.0.1:3260",
            "target_iqn": "iqn.2010-10.org.volattach:fake:volume-%s" % attachment_id,
            "target_lun": 0, "shared_target_id": None}


INSTANCE_UUID = "3f1c2a52-7c1e-4a57-9d3e-0b8a5a1f0c11"
INSTANCE = types.SimpleNamespace(uuid=INSTANCE_UUID)


# -- keys -------------------------------------------------------------------------
def test_target_key_prefers_shared_target_id_then_session_then_attachment():
    assert connections.target_key(shared_info("a1")) == "shared:" + TARGET
    assert (connections.target_key(shared_info("a1", lun=3))
            == connections.target_key(shared_info("a2", lun=9)))
    # no shared_target_id: the iSCSI session (portal + iqn), whatever the LUN
    real = {"driver_volume_type": "iscsi",
            "data": {"target_portal": "p:3260", "target_iqn": "iqn.x",
                     "target_lun": 4, "volume_id": "v1"}}
    other_lun = {"driver_volume_type": "iscsi",
                 "data": {"target_portal": "p:3260", "target_iqn": "iqn.x",
                          "target_lun": 5, "volume_id": "v2"}}
    assert connections.target_key(real) == connections.target_key(other_lun)
    assert connections.target_key(real).startswith("session:iscsi:p:3260")
    # non-shared targets of our backend: one per attachment
    assert connections.target_key(own_info("a1")) != connections.target_key(own_info("a2"))
    # nothing to go by: the attachment, else the fallback (the BDM)
    assert connections.target_key({"attachment_id": "a9"}) == "own:a9"
    assert connections.target_key({}, fallback="bdm-1") == "own:bdm-1"
    assert connections.user_key(shared_info("a1")) == "a1"


# -- reference counts ---------------------------------------------------------------
def test_only_the_last_user_disconnects_the_target():
    conns = connections.HostConnections("h1")
    calls = []
    for att in ("a1", "a2", "a3"):
        conns.connect(shared_info(att), lambda att=att: calls.append(("c", att)))
    assert conns.targets() == {"shared:" + TARGET: 3}
    results = []
    for att in ("a2", "a1", "a3"):
        results.append(conns.disconnect(
            shared_info(att), lambda last, att=att: calls.append(("d", att, last))))
    assert results == [False, False, True]
    assert calls[3:] == [("d", "a2", False), ("d", "a1", False), ("d", "a3", True)]
    assert conns.targets() == {}


def test_connect_of_the_same_attachment_twice_counts_once():
    conns = connections.HostConnections("h1")
    conns.connect(shared_info("a1"), lambda: None)
    conns.connect(shared_info("a1"), lambda: None)
    assert conns.disconnect(shared_info("a1"), lambda last: None) is True


def test_failed_connect_is_not_counted():
    conns = connections.HostConnections("h1")

    def boom():
        raise RuntimeError("no path")
    with pytest.raises(RuntimeError):
        conns.connect(shared_info("a1"), boom)
    assert conns.targets() == {}


def test_failed_disconnect_keeps_the_attachment_counted():
    conns = connections.HostConnections("h1")
    conns.connect(shared_info("a1"), lambda: None)
    conns.connect(shared_info("a2"), lambda: None)

    def boom(last):
        raise RuntimeError("logout failed")
    with pytest.raises(RuntimeError):
        conns.disconnect(shared_info("a1"), boom)
    assert conns.users("shared:" + TARGET) == {"a1", "a2"}
    assert conns.disconnect(shared_info("a2"), lambda last: None) is False
    assert conns.disconnect(shared_info("a1"), lambda last: None) is True


def test_adopted_connections_count_like_connected_ones():
    conns = connections.HostConnections("h1")
    conns.adopt(shared_info("a1"))
    conns.connect(shared_info("a2"), lambda: None)
    assert conns.disconnect(shared_info("a2"), lambda last: None) is False
    assert conns.disconnect(shared_info("a1"), lambda last: None) is True


def test_locks_are_per_target():
    conns = connections.HostConnections("h1")
    inside = threading.Event()
    release = threading.Event()

    def slow_connect():
        inside.set()
        assert release.wait(5)
    t = threading.Thread(target=conns.connect,
                         args=(shared_info("a1", target="t-one"), slow_connect))
    t.start()
    assert inside.wait(5)
    # another target is not blocked by the first one's lock
    done = threading.Event()
    threading.Thread(target=lambda: (conns.connect(
        shared_info("b1", target="t-two"), lambda: None), done.set())).start()
    assert done.wait(5)
    # the same target waits
    same = threading.Event()
    threading.Thread(target=lambda: (conns.connect(
        shared_info("a2", target="t-one"), lambda: None), same.set())).start()
    assert not same.wait(0.3)
    release.set()
    assert same.wait(5)
    t.join(5)
    assert conns.targets() == {"shared:t-one": 2, "shared:t-two": 1}


# -- the fake driver's physical model -------------------------------------------------
def test_fake_driver_models_one_session_per_shared_target():
    driver = fake.FakeDriver("h1")
    driver.connect_volume(shared_info("a1"), INSTANCE)
    driver.connect_volume(shared_info("a2"), INSTANCE)
    stats = driver.stats()
    assert (stats["connects"], stats["target_connects"], stats["targets"]) == (2, 1, 1)
    assert stats["target_reuses"] == 1 and stats["max_target_users"] == 2
    driver.disconnect_volume(shared_info("a1"), INSTANCE, disconnect_target=False)
    assert driver.stats()["targets"] == 1
    driver.disconnect_volume(shared_info("a2"), INSTANCE, disconnect_target=True)
    stats = driver.stats()
    assert (stats["disconnects"], stats["target_disconnects"], stats["targets"]) == (2, 1, 0)
    assert stats["lost_connections"] == [] and stats["connections"] == 0


def test_fake_driver_records_a_logout_that_loses_other_attachments():
    driver = fake.FakeDriver("h1")
    driver.connect_volume(shared_info("a1"), INSTANCE)
    driver.connect_volume(shared_info("a2"), INSTANCE)
    driver.disconnect_volume(shared_info("a1"), INSTANCE)  # target too
    stats = driver.stats()
    assert stats["lost_connections"] == [{"target": "shared:" + TARGET,
                                          "attachments": ["a2"]}]
    assert stats["connections"] == 0 and stats["targets"] == 0


def test_fake_driver_writes_its_stats_file(conf, tmp_path):
    import json
    path = tmp_path / "stats.json"
    conf.set_override("stats_file", str(path), group="fake_driver")
    driver = fake.FakeDriver("h1")
    driver.connect_volume(shared_info("a1"), INSTANCE)
    assert json.loads(path.read_text())["target_connects"] == 1
    driver.disconnect_volume(shared_info("a1"), INSTANCE)
    data = json.loads(path.read_text())
    assert (data["host"], data["target_disconnects"], data["targets"]) == ("h1", 1, 0)


class SlowFakeDriver(fake.FakeDriver):
    """Connect and disconnect take a little while, so threads interleave."""

    def connect_volume(self, connection_info, instance):
        time.sleep(random.uniform(0, 0.002))
        super().connect_volume(connection_info, instance)

    def disconnect_volume(self, connection_info, instance, disconnect_target=True):
        time.sleep(random.uniform(0, 0.002))
        super().disconnect_volume(connection_info, instance, disconnect_target)


def _hammer(worker, threads=16, rounds=40):
    errors = []

    def run(n):
        try:
            for r in range(rounds):
                worker("t%d-r%d" % (n, r))
        except Exception as exc:  # reported below
            errors.append(exc)
    pool = [threading.Thread(target=run, args=(n,)) for n in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(60)
    assert not errors
    return threads * rounds


def test_concurrent_attachments_of_one_target_never_lose_a_connection():
    random.seed(7)
    driver = SlowFakeDriver("h1")
    conns = connections.HostConnections("h1")

    def worker(att):
        info = shared_info(att)
        conns.connect(info, lambda: driver.connect_volume(info, INSTANCE))
        time.sleep(random.uniform(0, 0.002))
        conns.disconnect(info, lambda last: driver.disconnect_volume(
            info, INSTANCE, disconnect_target=last))

    operations = _hammer(worker)
    stats = driver.stats()
    assert stats["lost_connections"] == []
    assert stats["connects"] == stats["disconnects"] == operations
    assert stats["targets"] == 0 and stats["connections"] == 0
    assert stats["target_connects"] == stats["target_disconnects"] >= 1
    # the threads did overlap on the target (else the test proves nothing)
    assert stats["max_target_users"] > 1 and stats["target_reuses"] > 0
    assert conns.targets() == {}


def test_deciding_outside_the_target_lock_loses_a_connection():
    """The control: 'am I the last user?' answered outside the target lock
    (what a count from the volume service amounts to), then an attach on
    the same target, then the logout: the fake driver sees the loss."""
    driver = fake.FakeDriver("h1")
    key = connections.target_key(shared_info("a1"))
    driver.connect_volume(shared_info("a1"), INSTANCE)
    others = driver.targets[key] - {"a1"}               # detach of a1 decides
    driver.connect_volume(shared_info("a2"), INSTANCE)  # attach of a2 races in
    driver.disconnect_volume(shared_info("a1"), INSTANCE,
                             disconnect_target=not others)
    assert driver.stats()["lost_connections"] == [
        {"target": key, "attachments": ["a2"]}]


def test_the_target_lock_orders_a_racing_attach_after_the_last_detach():
    """The same interleaving through HostConnections: the attach waits for
    the detach's logout, then logs in again; nothing is lost."""
    driver = fake.FakeDriver("h1")
    conns = connections.HostConnections("h1")
    a1, a2 = shared_info("a1"), shared_info("a2")
    conns.connect(a1, lambda: driver.connect_volume(a1, INSTANCE))
    deciding = threading.Event()
    proceed = threading.Event()

    def slow_disconnect(last):
        deciding.set()
        assert proceed.wait(5)
        driver.disconnect_volume(a1, INSTANCE, disconnect_target=last)
    detach = threading.Thread(target=conns.disconnect, args=(a1, slow_disconnect))
    detach.start()
    assert deciding.wait(5)
    attach = threading.Thread(target=conns.connect, args=(
        a2, lambda: driver.connect_volume(a2, INSTANCE)))
    attach.start()
    attach.join(0.3)
    assert attach.is_alive()              # blocked on the target lock
    proceed.set()
    detach.join(5)
    attach.join(5)
    stats = driver.stats()
    assert stats["lost_connections"] == []
    assert (stats["target_connects"], stats["target_disconnects"]) == (2, 1)
    assert driver.targets == {key_of(a2): {"a2"}}


def key_of(info):
    return connections.target_key(info)


# -- the compute manager ---------------------------------------------------------------
def _bdm(att, info, device):
    bdm = objects.BlockDeviceMapping(
        None, uuid=str(uuid.uuid5(uuid.NAMESPACE_URL, att)),
        instance_uuid=INSTANCE_UUID, source_type="volume",
        destination_type="volume", volume_id="vol-" + att, device_name=device,
        boot_index=None, attachment_id=att, attach_mode="rw")
    bdm.set_connection_info(info)
    return bdm


def test_manager_attach_detach_swap_and_terminate_keep_the_shared_target():
    driver = fake.FakeDriver("h1")
    manager = compute_manager.ComputeManager("h1", driver)
    inst = INSTANCE
    b1 = _bdm("a1", shared_info("a1"), "/dev/vdb")
    b2 = _bdm("a2", shared_info("a2", lun=2), "/dev/vdc")
    manager.attach_volume(None, inst, b1)
    manager.attach_volume(None, inst, b2)
    assert driver.stats()["target_connects"] == 1
    manager.detach_volume(None, inst, b1)
    assert driver.stats()["targets"] == 1          # a2 still uses it
    # swap a2 onto a3 behind the same target: never disconnected meanwhile
    manager.swap_volume(None, inst, b2, shared_info("a3", lun=3))
    stats = driver.stats()
    assert (stats["target_connects"], stats["target_disconnects"]) == (1, 0)
    b3 = _bdm("a3", shared_info("a3", lun=3), "/dev/vdc")
    manager.terminate_instance(None, inst, [b3])
    stats = driver.stats()
    assert (stats["target_connects"], stats["target_disconnects"]) == (1, 1)
    assert stats["lost_connections"] == [] and stats["targets"] == 0
    assert manager.connections.targets() == {}


def test_manager_failed_attach_releases_only_its_own_use(conf):
    driver = fake.FakeDriver("h1")
    manager = compute_manager.ComputeManager("h1", driver)
    inst = INSTANCE
    manager.attach_volume(None, inst, _bdm("a1", shared_info("a1"), "/dev/vdb"))
    conf.set_override("fail_operations", ["attach"], group="fake_driver")
    with pytest.raises(Exception):
        manager.attach_volume(None, inst, _bdm("a2", shared_info("a2"), "/dev/vdc"))
    stats = driver.stats()
    assert stats["targets"] == 1 and stats["lost_connections"] == []
    assert manager.connections.users("shared:" + TARGET) == {"a1"}


def test_rebuild_plugs_exactly_what_the_guest_had(monkeypatch):
    """Under the instance lock the compute re-reads the records and plugs
    into the new guest only the volumes the old one had: an attach whose
    plug has not run yet (its record already has connection_info) and a
    detach that already unplugged are left to their own compute steps."""
    driver = fake.FakeDriver("h1")
    manager = compute_manager.ComputeManager("h1", driver)
    inst = types.SimpleNamespace(uuid=INSTANCE_UUID, image_ref="img")
    plugged = _bdm("a1", shared_info("a1"), "/dev/vdb")
    unplugged = _bdm("a2", shared_info("a2", lun=2), "/dev/vdc")
    manager.build_and_run_instance(None, inst, [plugged, unplugged])
    manager.detach_volume(None, inst, unplugged)      # its record stays a while
    pending = _bdm("a3", shared_info("a3", lun=3), "/dev/vdd")  # not plugged yet
    monkeypatch.setattr(
        objects.BlockDeviceMappingList, "get_by_instance_uuid",
        classmethod(lambda cls, ctx, uuid: [plugged, unplugged, pending]))
    manager.rebuild_instance(None, inst, [plugged], power_on=True)
    assert set(driver.guests[inst.uuid]["devices"]) == {"/dev/vdb"}
    manager.attach_volume(None, inst, pending)        # the attach goes on
    assert set(driver.guests[inst.uuid]["devices"]) == {"/dev/vdb", "/dev/vdd"}
    manager.rebuild_instance(None, inst, [], power_on=False)
    assert driver.guests[inst.uuid]["power"] == "shutdown"
    assert set(driver.guests[inst.uuid]["devices"]) == {"/dev/vdb", "/dev/vdd"}
