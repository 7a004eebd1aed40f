"""The ``migrations`` table's queries and the Migration objects over them,
on SQLite and PostgreSQL: create and update, the os-migrations filters,
newest-first order, keyset paging by marker, a server's migrations in
progress."""
import datetime
import uuid

import pytest

import volattach  # noqa: F401
from volattach import context
from volattach import exception
from volattach import objects
from volattach.db import api as db_api
from tests import db_fixtures

objects.register_all()


@pytest.fixture(params=["sqlite", pytest.param("postgresql",
                                               marks=pytest.mark.postgres)])
def database(request, tmp_path):
    with db_fixtures.configured_compute_database(request.param,
                                                 tmp_path) as url:
        yield url


def _migration(**kw):
    values = {"instance_uuid": str(uuid.uuid4()), "source_compute": "c1",
              "dest_compute": "c2", "source_node": "c1", "dest_node": "c2",
              "status": "completed", "migration_type": "live-migration",
              "old_instance_type_id": 1, "new_instance_type_id": 1,
              "user_id": "u1", "project_id": "p1"}
    values.update(kw)
    return db_api.migration_create(values)


def _ids(rows):
    return [r["id"] for r in rows]


def test_create_fills_uuid_and_timestamps_and_update_moves_updated_at(database):
    row = _migration(status="accepted", dest_compute=None)
    uuid.UUID(row["uuid"])
    assert row["created_at"] is not None and row["updated_at"] is None
    assert row["hidden"] is False and row["deleted"] is False
    assert db_api.migration_get(row["id"])["status"] == "accepted"
    updated = db_api.migration_update(row["id"], {"status": "preparing",
                                                  "dest_compute": "c2"})
    assert (updated["status"], updated["dest_compute"]) == ("preparing", "c2")
    assert updated["updated_at"] >= updated["created_at"]
    assert updated["uuid"] == row["uuid"]
    with pytest.raises(exception.MigrationNotFound):
        db_api.migration_update(row["id"] + 1000, {"status": "error"})
    with pytest.raises(exception.MigrationNotFound):
        db_api.migration_get(row["id"] + 1000)


def test_filters(database):
    a = _migration(source_compute="c1", dest_compute="c2", status="completed")
    b = _migration(source_compute="c2", dest_compute="c3", status="error",
                   user_id="u2", project_id="p2")
    c = _migration(source_compute="c3", dest_compute="c1", status="running",
                   migration_type="resize", hidden=True)

    def ids(**filters):
        return sorted(_ids(db_api.migration_get_all_by_filters(filters)))

    assert ids() == sorted(_ids([a, b, c]))
    assert ids(host="c1") == sorted(_ids([a, c]))
    assert ids(host="c2") == sorted(_ids([a, b]))
    assert ids(source_compute="c2") == _ids([b])
    # host wins over source_compute
    assert ids(host="c1", source_compute="c2") == sorted(_ids([a, c]))
    assert ids(status="error") == _ids([b])
    assert ids(status=["error", "running"]) == sorted(_ids([b, c]))
    assert ids(instance_uuid=a["instance_uuid"]) == _ids([a])
    assert ids(migration_type="resize") == _ids([c])
    assert ids(user_id="u2") == _ids([b])
    assert ids(project_id="p1") == sorted(_ids([a, c]))
    assert ids(hidden=True) == _ids([c])
    assert ids(hidden=False) == sorted(_ids([a, b]))


def test_changes_since_and_before_compare_updated_at(database):
    old = _migration()
    new = _migration()
    db_api.migration_update(new["id"], {"status": "error"})
    updated = db_api.migration_get(new["id"])["updated_at"]
    aware = updated.replace(tzinfo=datetime.timezone.utc)

    def ids(**filters):
        return _ids(db_api.migration_get_all_by_filters(filters))

    # never updated: no updated_at, so never "changed since"
    assert ids(**{"changes-since": aware}) == _ids([new])
    assert ids(**{"changes-since": aware + datetime.timedelta(seconds=1)}) == []
    assert ids(**{"changes-before": aware}) == _ids([new])
    assert ids(**{"changes-before": aware - datetime.timedelta(seconds=1)}) == []
    assert old["id"] not in ids(**{"changes-before": aware})


def test_newest_first_paged_by_limit_and_marker(database):
    rows = [_migration() for _ in range(5)]
    # two with the same created_at: the id breaks the tie
    same = rows[1]["created_at"]
    db_api.migration_update(rows[2]["id"], {"created_at": same})
    newest_first = list(reversed(_ids(rows)))
    assert _ids(db_api.migration_get_all_by_filters({})) == newest_first
    assert _ids(db_api.migration_get_all_by_filters({}, limit=2)) == \
        newest_first[:2]
    for limit in (1, 2):
        seen, marker = [], None
        while True:
            page = db_api.migration_get_all_by_filters({}, limit=limit,
                                                       marker=marker)
            if not page:
                break
            seen += _ids(page)
            marker = page[-1]["uuid"]
        assert seen == newest_first
    assert db_api.migration_get_all_by_filters({}, limit=0) == []
    with pytest.raises(exception.MarkerNotFound):
        db_api.migration_get_all_by_filters({}, marker=str(uuid.uuid4()))


def test_objects_create_save_and_in_progress(database):
    ctx = context.from_noauth_token("admin:admin:admin")
    server = str(uuid.uuid4())
    mig = objects.Migration(ctx, instance_uuid=server, status="accepted",
                            migration_type="live-migration",
                            source_compute="c1")
    mig.create()
    assert (mig.user_id, mig.project_id) == ("admin", "admin")
    assert mig.hidden is False and mig.is_live_migration
    assert not mig.in_progress
    assert list(objects.MigrationList.get_in_progress_by_instance(
        ctx, server)) == []
    mig.status = "running"
    mig.dest_compute = "c2"
    mig.save()
    assert mig.updated_at is not None
    [found] = objects.MigrationList.get_in_progress_by_instance(
        ctx, server, "live-migration")
    assert (found.id, found.dest_compute, found.status) == (
        mig.id, "c2", "running")
    assert list(objects.MigrationList.get_in_progress_by_instance(
        ctx, server, "resize")) == []
    assert objects.Migration.get_by_id_and_instance(
        ctx, mig.id, server).uuid == mig.uuid
    with pytest.raises(exception.MigrationNotFoundForInstance):
        objects.Migration.get_by_id_and_instance(ctx, mig.id,
                                                 str(uuid.uuid4()))
    [listed] = objects.MigrationList.get_by_filters(
        ctx, {"instance_uuid": server})
    assert listed.uuid == mig.uuid
    with pytest.raises(exception.ObjectActionError):
        mig.create()
    with pytest.raises(exception.ObjectActionError):
        objects.Migration(ctx, instance_uuid=server).create()
