"""``bdm_abandon_reservation``: an attach whose reserve got no answer gives
up on the record's uuid, on SQLite and PostgreSQL.  The record is destroyed
if the reserve made it; a creation that comes later (a reserve held back in
a restarting broker) is refused, through either way a compute creates
(``bdm_create``, ``bdm_create_unless_new_mappings``); other records and
other uuids are untouched; the instance's delete drops what it kept.  On
PostgreSQL both orders of a creation and an abandon that overlap are
serialized by the instance's row."""
import threading
import time
import uuid

import pytest
from sqlalchemy import text

import volattach  # noqa: F401
from volattach.db import api as db_api
from volattach.db.api import block_devices
from volattach.db import engine as db_engine
from volattach import exception
from tests import db_fixtures


@pytest.fixture(params=["sqlite", pytest.param("postgresql",
                                               marks=pytest.mark.postgres)])
def database(request, tmp_path):
    with db_fixtures.configured_compute_database(request.param, tmp_path) as url:
        yield url


def _values(instance_uuid, bdm_uuid=None):
    return {"uuid": bdm_uuid or str(uuid.uuid4()),
            "instance_uuid": instance_uuid, "volume_id": str(uuid.uuid4()),
            "destination_type": "volume", "source_type": "volume",
            "device_name": "/dev/vdb", "delete_on_termination": False,
            "no_device": False}


def _uuids(instance_uuid):
    return [b["uuid"] for b in db_api.bdm_get_by_instance_uuids([instance_uuid])]


def _kept(url):
    engine = db_engine.make_engine(url)
    try:
        with engine.connect() as conn:
            return sorted(r[0] for r in conn.execute(text(
                "SELECT bdm_uuid FROM abandoned_reservations")))
    finally:
        engine.dispose()


def test_a_record_the_reserve_made_is_destroyed_and_not_made_again(database):
    server = db_fixtures.instance_row()
    other = db_api.bdm_create(_values(server))
    made = db_api.bdm_create(_values(server))

    assert db_api.bdm_abandon_reservation(server, made["uuid"]) is True
    assert _uuids(server) == [other["uuid"]]
    # the same reserve delivered again
    with pytest.raises(exception.ReservationAbandoned):
        db_api.bdm_create(_values(server, made["uuid"]))
    assert _uuids(server) == [other["uuid"]]
    # abandoning again is harmless
    assert db_api.bdm_abandon_reservation(server, made["uuid"]) is False
    assert _kept(database) == [made["uuid"]]


@pytest.mark.parametrize("create", ["bdm_create", "unless_new_mappings"])
def test_a_reserve_that_comes_after_the_abandon_creates_nothing(database,
                                                                 create):
    server = db_fixtures.instance_row()
    late = str(uuid.uuid4())
    assert db_api.bdm_abandon_reservation(server, late) is False
    with pytest.raises(exception.ReservationAbandoned) as refused:
        if create == "bdm_create":
            db_api.bdm_create(_values(server, late))
        else:
            db_api.bdm_create_unless_new_mappings(_values(server, late), [])
    assert late in str(refused.value)
    assert isinstance(refused.value, exception.Conflict)
    assert _uuids(server) == []
    # another attach of the server is not affected
    db_api.bdm_create(_values(server))
    assert len(_uuids(server)) == 1


def test_the_instance_delete_drops_what_it_kept(database):
    server, other = db_fixtures.instance_row(), db_fixtures.instance_row()
    mine, theirs = str(uuid.uuid4()), str(uuid.uuid4())
    db_api.bdm_abandon_reservation(server, mine)
    db_api.bdm_abandon_reservation(other, theirs)
    db_api.instance_destroy(server)
    assert _kept(database) == [theirs]
    # a deleted instance keeps nothing new: it takes no mapping anyway
    db_api.bdm_abandon_reservation(server, str(uuid.uuid4()))
    assert _kept(database) == [theirs]


def _wait_for_lock_wait(url, timeout=30):
    """Until a backend of ``url``'s database waits on a lock."""
    engine = db_engine.make_engine(url)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with engine.connect() as conn:
                if conn.execute(text(
                        "SELECT count(*) FROM pg_stat_activity WHERE "
                        "datname = current_database() AND "
                        "wait_event_type = 'Lock'")).scalar():
                    return
            time.sleep(0.02)
        raise AssertionError("nothing waited on a lock")
    finally:
        engine.dispose()


def _in_thread(fn, *args):
    outcome = {}

    def run():
        try:
            outcome["result"] = fn(*args)
        except Exception as error:
            outcome["error"] = error
    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


@pytest.mark.postgres
def test_an_abandon_waits_for_a_creation_in_flight_and_destroys_it(tmp_path):
    with db_fixtures.configured_compute_database("postgresql", tmp_path) as url:
        server = db_fixtures.instance_row()
        values = _values(server)
        engine = db_engine.make_engine(url)
        try:
            with engine.connect() as conn:
                # the compute's creation, not yet committed
                transaction = conn.begin()
                block_devices._check_instance_takes_mappings(conn, values)
                conn.execute(block_devices._BDM_INSERT_RETURNING, values)
                thread, outcome = _in_thread(db_api.bdm_abandon_reservation,
                                             server, values["uuid"])
                _wait_for_lock_wait(url)
                transaction.commit()
            thread.join(60)
        finally:
            engine.dispose()
        assert outcome == {"result": True}
        assert _uuids(server) == []


@pytest.mark.postgres
def test_a_creation_that_waited_for_an_abandon_is_refused(tmp_path):
    with db_fixtures.configured_compute_database("postgresql", tmp_path) as url:
        server = db_fixtures.instance_row()
        values = _values(server)
        params = {"instance_uuid_": server, "bdm_uuid_": values["uuid"]}
        engine = db_engine.make_engine(url)
        try:
            with engine.connect() as conn:
                # the abandon's transaction, not yet committed
                transaction = conn.begin()
                assert conn.execute(block_devices._INSTANCE_FOR_ABANDON,
                                    params).first()
                conn.execute(text(
                    "INSERT INTO abandoned_reservations (bdm_uuid, "
                    "instance_uuid) VALUES (:bdm_uuid_, :instance_uuid_)"),
                    params)
                thread, outcome = _in_thread(db_api.bdm_create, values)
                _wait_for_lock_wait(url)
                transaction.commit()
            thread.join(60)
        finally:
            engine.dispose()
        assert isinstance(outcome.get("error"), exception.ReservationAbandoned)
        assert _uuids(server) == []


def test_a_record_with_an_attachment_is_kept(database):
    """Only the attach that gave up would have given its record an
    attachment; one that holds any is not destroyed (the uuid is still
    refused to a creation)."""
    server = db_fixtures.instance_row()
    made = db_api.bdm_create(dict(_values(server), attachment_id="att-1"))
    assert db_api.bdm_abandon_reservation(server, made["uuid"]) is False
    assert _uuids(server) == [made["uuid"]]
