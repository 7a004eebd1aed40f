"""What the volume service asks its database per request, on SQLite and
PostgreSQL: reads are one statement without a transaction, the calls of
the attach cycle run only the statements listed here (a guard: a change
that adds a query shows up), the stored connector is rewritten only when
it changes and goes away with its attachment.
"""
import contextlib
import json

import pytest
import sqlalchemy as sa

from tests.functional.volume.volume_testlib import (
    BOTH_DBS, INSTANCE_A, INSTANCE_B, USER1, connector)
from volattach import context
from volattach import exception
from volattach.volume import manager as manager_mod

pytestmark = BOTH_DBS


@contextlib.contextmanager
def statements():
    """The SQL statements run meanwhile, as "VERB table" strings."""
    seen = []

    def record(conn, cursor, statement, *args):
        words = statement.split()
        verb = words[0].upper()
        if verb == "SELECT":
            table = words[words.index("FROM") + 1]
        elif verb in ("INSERT", "DELETE"):
            table = words[2]
        elif verb == "UPDATE":
            table = words[1]
        else:
            table = " ".join(words[1:])
        seen.append(("%s %s" % (verb, table)).strip())
    sa.event.listen(sa.engine.Engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", record)


def _begin(api, sql):
    """The BEGIN we send on SQLite (PostgreSQL's driver sends its own)."""
    return [] if "postgresql" in api.url else [sql]


def _lock(api):
    """Reading an attachment and its volume, both locked (PostgreSQL:
    FOR UPDATE; SQLite: the IMMEDIATE transaction), in one statement."""
    return ["SELECT volume_attachments"]


@pytest.fixture
def api(api, db_url):
    api.url = db_url
    return api


def test_reads_are_one_statement_without_transaction(api):
    vol = api.create_volume()
    att_id = api.attach(vol["id"])
    for path in ("/volumes/%s" % vol["id"], "/volumes/detail",
                 "/attachments/%s" % att_id, "/attachments/detail",
                 "/attachments?volume_id=%s" % vol["id"]):
        with statements() as seen:
            r = api.get(path)
        assert r.status_code == 200, r.text
        assert len(seen) == 1, (path, seen)
        assert seen[0].startswith("SELECT"), (path, seen)


def test_attach_cycle_statements(api):
    vol = api.create_volume()
    write = _begin(api, "BEGIN IMMEDIATE")
    with statements() as seen:
        r = api.reserve(vol["id"])
    att_id = r.json["attachment"]["id"]
    assert seen == write + ["UPDATE volumes",            # reserve (CAS)
                            "INSERT volume_attachments",
                            "UPDATE volumes"]            # -> reserved
    with statements() as seen:
        r = api.put("/attachments/%s" % att_id,
                    {"attachment": {"connector": connector()}})
    assert r.status_code == 200, r.text
    assert seen == write + _lock(api) + [
        "INSERT attachment_specs", "UPDATE volume_attachments",
        "UPDATE volumes"]
    with statements() as seen:
        r = api.post("/attachments/%s/action" % att_id, {"os-complete": None})
    assert r.status_code == 204, r.text
    assert seen == write + _lock(api) + ["UPDATE volume_attachments",
                                         "UPDATE volumes"]
    with statements() as seen:
        r = api.post("/volumes/%s/action" % vol["id"],
                     {"os-begin_detaching": {}})
    assert r.status_code == 202, r.text
    assert seen == write + ["UPDATE volumes"]
    with statements() as seen:
        r = api.delete("/attachments/%s" % att_id)
    assert r.status_code == 200, r.text
    assert seen == write + _lock(api) + [
        "SELECT attachment_specs",          # the connector, for the backend
        "DELETE volume_attachments",        # its specs: ON DELETE CASCADE
        "SELECT volume_attachments",        # the remaining ones
        "UPDATE volumes"]
    assert api.volume(vol["id"])["status"] == "available"


def _stored_connector(api, att_id):
    engine = sa.create_engine(api.url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text(
                "SELECT key, value FROM attachment_specs "
                "WHERE attachment_id = :a"), {"a": att_id}).all()
    finally:
        engine.dispose()
    return {key: json.loads(value) for key, value in rows}


def test_connector_rewritten_only_when_it_changes(api):
    vol = api.create_volume()
    att_id = api.reserve(vol["id"]).json["attachment"]["id"]
    first = connector("compute-1", extra_key="only in the first")
    path = "/attachments/%s" % att_id
    assert api.put(path, {"attachment": {"connector": first}}).status_code \
        == 200
    assert _stored_connector(api, att_id) == first
    with statements() as seen:
        r = api.put(path, {"attachment": {"connector": first}})
    assert r.status_code == 200, r.text
    assert [s for s in seen if "attachment_specs" in s] == [
        "SELECT attachment_specs"]
    second = connector("compute-2")
    with statements() as seen:
        r = api.put(path, {"attachment": {"connector": second}})
    assert r.status_code == 200, r.text
    assert [s for s in seen if "attachment_specs" in s] == [
        "SELECT attachment_specs", "DELETE attachment_specs",
        "INSERT attachment_specs"]
    assert _stored_connector(api, att_id) == second
    assert r.json["attachment"]["connection_info"]["target_portal"]
    assert api.delete(path).status_code == 200
    assert _stored_connector(api, att_id) == {}


def test_volume_view_lists_attached_attachments_only(api):
    vol = api.create_volume(multiattach=True)
    other = api.create_volume()
    a1 = api.attach(vol["id"], INSTANCE_A, "compute-1")
    a2 = api.attach(vol["id"], INSTANCE_B, "compute-2")
    api.reserve(vol["id"], "8bd4a2c6-1d6b-4a0e-a0de-0b1d6bfe5d2a")
    shown = api.volume(vol["id"])
    assert [a["attachment_id"] for a in shown["attachments"]] == [a1, a2]
    assert [a["host_name"] for a in shown["attachments"]] == [
        "compute-1", "compute-2"]
    detail = {v["id"]: v for v in api.get("/volumes/detail").json["volumes"]}
    assert detail[vol["id"]]["attachments"] == shown["attachments"]
    assert detail[other["id"]]["attachments"] == []
    assert [v["id"] for v in api.get("/volumes").json["volumes"]] == [
        other["id"], vol["id"]]   # newest first


def test_reserve_without_update_returning(api, volume_conf, monkeypatch):
    """A database without UPDATE ... RETURNING (SQLite before 3.35): the
    reservation is read back with a SELECT, same outcome."""
    manager = manager_mod.VolumeManager(volume_conf)
    monkeypatch.setattr(manager.db.engine.dialect, "update_returning", False)
    ctx = context.from_noauth_token(USER1)
    vol = api.create_volume()
    with statements() as seen:
        att = manager.attachment_create(ctx, vol["id"], INSTANCE_A)
    assert "SELECT volumes" in seen
    assert (att["attach_status"], att["volume_id"]) == ("reserved", vol["id"])
    assert api.volume(vol["id"])["status"] == "reserved"
    with pytest.raises(exception.InvalidVolume):
        manager.attachment_create(ctx, vol["id"], INSTANCE_B)
    manager.db.dispose()
