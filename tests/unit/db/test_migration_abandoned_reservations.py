"""Migration 0009 (abandoned_reservations) on a compute database that holds
the rows of the release before (revision 0008): a server with its root
disk and an attached volume keeps every row, the new table is empty, and
after the upgrade an attach's rollback abandons a uuid, a late reserve of
it is refused, the server's other mappings stay and its delete drops what
was kept, on SQLite and PostgreSQL."""
import pytest
import sqlalchemy as sa

import volattach  # noqa: F401
from volattach import context
from volattach.db import migration
from volattach import exception
from volattach import objects
from tests import db_fixtures

objects.register_all()

SERVER = "b0000000-0000-4000-8000-000000000001"
ROOT = "c0000000-0000-4000-8000-000000000001"
VOLUME_BDM = "c0000000-0000-4000-8000-000000000002"
VOLUME = "d0000000-0000-4000-8000-000000000001"
LATE = "c0000000-0000-4000-8000-000000000003"


@pytest.fixture(params=["sqlite", pytest.param("postgresql",
                                               marks=pytest.mark.postgres)])
def database_at_0008(request, tmp_path):
    with db_fixtures.configured_compute_database(
            request.param, tmp_path, revision="0008") as url:
        db_fixtures.run_sql(url, (
            "INSERT INTO instances (id, uuid, project_id, user_id, host, "
            "vm_state, power_state, locked, launch_index, flavor, deleted, "
            "created_at) VALUES (1, :server, 'demo', 'alice', 'compute1', "
            "'active', 1, :f, 0, '{\"flavorid\": \"1\"}', 0, "
            "'2026-11-25 10:00:00')", {"server": SERVER, "f": False}), (
            "INSERT INTO block_device_mappings (id, uuid, instance_uuid, "
            "source_type, destination_type, boot_index, device_name, "
            "volume_id, attachment_id, connection_info, "
            "delete_on_termination, no_device, attach_mode) VALUES "
            "(1, :root, :server, 'image', 'local', 0, '/dev/vda', NULL, "
            "NULL, NULL, :f, :f, NULL), "
            "(2, :bdm, :server, 'volume', 'volume', NULL, '/dev/vdb', "
            ":volume, 'e0000000-0000-4000-8000-000000000001', "
            "'{\"driver_volume_type\": \"rbd\"}', :f, :f, 'ro')",
            {"root": ROOT, "bdm": VOLUME_BDM, "server": SERVER,
             "volume": VOLUME, "f": False}))
        yield url


def _rows(url, table):
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return [dict(r) for r in conn.execute(sa.text(
                "SELECT * FROM %s ORDER BY 1" % table)).mappings()]
    finally:
        engine.dispose()


def test_upgrade_keeps_the_mappings_and_late_reserves_are_refused(
        database_at_0008):
    url = database_at_0008
    before = _rows(url, "block_device_mappings")
    assert not sa.inspect(sa.create_engine(url)).has_table(
        "abandoned_reservations")

    migration.db_sync(url, revision="0009")

    # at head: the objects below run against the newest schema (0011's
    # group members go with a server's delete)
    assert migration.db_version(url) >= "0009"
    assert _rows(url, "block_device_mappings") == before
    assert _rows(url, "abandoned_reservations") == []
    # the code of today runs on the newest schema
    migration.db_sync(url)

    ctxt = context.get_admin_context()
    assert objects.BlockDeviceMapping.abandon_reservation(
        ctxt, SERVER, LATE) is False
    late = objects.BlockDeviceMapping(
        ctxt, uuid=LATE, instance_uuid=SERVER, source_type="volume",
        destination_type="volume", volume_id=VOLUME, device_name="/dev/vdc")
    with pytest.raises(exception.ReservationAbandoned):
        late.create()
    mappings = objects.BlockDeviceMappingList.get_by_instance_uuid(ctxt, SERVER)
    assert [(b.uuid, b.attach_mode) for b in mappings] == [
        (ROOT, None), (VOLUME_BDM, "ro")]

    objects.Instance.get_by_uuid(ctxt, SERVER).destroy()
    assert _rows(url, "abandoned_reservations") == []
