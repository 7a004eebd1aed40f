"""The tag and metadata writes of ``db.api.server_tags_metadata`` against
the server's delete and against each other, on SQLite and PostgreSQL: a
write after the delete finds no server and leaves no tag; two merges that
each fit the metadata limit alone but not together: one is refused, none
is lost; the 50-tag limit and the list's tag filters."""
import concurrent.futures
import json
import threading

import pytest

import volattach  # noqa: F401
from volattach.db import api as db_api
from volattach import exception
from tests import db_fixtures


@pytest.fixture(params=["sqlite", pytest.param("postgresql",
                                               marks=pytest.mark.postgres)])
def database(request, tmp_path):
    with db_fixtures.configured_compute_database(request.param, tmp_path) as url:
        yield url


def test_writes_after_the_delete_find_no_server(database):
    uuid = db_fixtures.instance_row()
    assert db_api.tag_add(uuid, "a", 50) is True
    assert db_api.tag_add(uuid, "a", 50) is False
    db_api.instance_destroy(uuid)
    assert db_api.tag_get_all(uuid) == []
    for write in (lambda: db_api.tag_add(uuid, "b", 50),
                  lambda: db_api.tag_set_all(uuid, ["c"]),
                  lambda: db_api.instance_metadata_update(uuid, {"k": "v"})):
        with pytest.raises(exception.InstanceNotFound):
            write()
    assert db_api.tag_get_all(uuid) == []


def test_two_merges_over_the_limit_together(database):
    uuid = db_fixtures.instance_row(metadata=json.dumps({"base": "x"}))
    halves = [{"a%d" % i: "v" for i in range(70)},
              {"b%d" % i: "v" for i in range(70)}]
    start = threading.Barrier(2)

    def merge(items):
        start.wait()
        try:
            return len(db_api.instance_metadata_update(uuid, items,
                                                       max_items=128))
        except exception.MetadataLimitExceeded:
            return "refused"

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = sorted(pool.map(merge, halves), key=str)
    assert results == [71, "refused"]
    row = db_api.instance_get_by_uuid(uuid)
    assert len(json.loads(row["metadata"])) == 71


def test_tag_limit_and_filters(database):
    one = db_fixtures.instance_row()
    two = db_fixtures.instance_row()
    db_api.tag_set_all(one, ["t%d" % i for i in range(50)])
    with pytest.raises(exception.TooManyTags):
        db_api.tag_add(one, "t50", 50)
    db_api.tag_set_all(two, ["t1", "x"])

    def uuids(**filters):
        return {r["uuid"] for r in db_api.instance_get_all(filters)}
    assert uuids(tags=["t1", "x"]) == {two}
    assert uuids(**{"tags-any": ["x", "t49"]}) == {one, two}
    assert uuids(**{"not-tags": ["t1", "x"]}) == {one}
    assert uuids(**{"not-tags-any": ["x"]}) == {one}
