"""An admin's server list reads O(limit) rows, however many servers there
are (issue 23, benchmark scenario C): on SQLite and PostgreSQL, with a few
thousand servers of many projects, each page of ``limit`` servers newest
first (all tenants, a marker deep in the table, a project, a status, a
host, changes-since) is an index scan that stops after about ``limit``
rows.

What the database read is measured, not timed: on PostgreSQL from
``EXPLAIN (ANALYZE, FORMAT JSON)`` of the very statement the list ran (rows
each scan returned plus those its filter removed; no sequential scan, no
sort), on SQLite from the virtual machine steps the statement takes
(``set_progress_handler`` counts them), compared with what reading every
row costs.  The page's content is checked against the same order computed
in Python (ties on created_at broken by id)."""
import datetime
import json
import uuid

import pytest
import sqlalchemy as sa

import volattach  # noqa: F401
from volattach import context
from volattach import objects
from volattach.db import engine as db_engine
from volattach.db import models
from tests import db_fixtures

objects.register_all()

SERVERS = 3000
LIMIT = 10
T0 = datetime.datetime(2026, 1, 1)


def _row(i):
    # two servers per second (ties on created_at, broken by id); one in a
    # hundred in ERROR; three hosts; 30 projects
    return {"uuid": str(uuid.UUID(int=i + 1)), "project_id": "p%02d" % (i % 30),
            "user_id": "u", "display_name": "s%d" % i, "host": "h%d" % (i % 3),
            "vm_state": "error" if i % 100 == 7 else "active", "power_state": 1,
            "flavor": json.dumps({"flavorid": "1"}), "deleted": 0,
            "created_at": T0 + datetime.timedelta(seconds=i // 2),
            "updated_at": None}


@pytest.fixture(scope="module", params=[
    "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def servers(request, tmp_path_factory):
    """A migrated compute database holding SERVERS servers (one bulk
    insert); yields (kind, rows in insertion order with their ids)."""
    with db_fixtures.configured_compute_database(
            request.param, tmp_path_factory.mktemp("list")):
        rows = [_row(i) for i in range(SERVERS)]
        engine = db_engine.get_engine()
        with engine.begin() as conn:
            conn.execute(sa.insert(models.Instance.__table__), rows)
            ids = dict(conn.execute(sa.select(models.Instance.uuid, models.Instance.id)).all())
            if request.param == "postgresql":
                conn.execute(sa.text("ANALYZE instances"))
        for row in rows:
            row["id"] = ids[row["uuid"]]
        yield request.param, rows


class _Statements:
    """The SELECTs of instances with an ORDER BY run on ``engine`` while
    active (the list's page query)."""

    def __init__(self, engine):
        self.engine = engine
        self.seen = []

    def _before(self, conn, cursor, statement, parameters, context, executemany):
        if "FROM instances" in statement and "ORDER BY" in statement:
            self.seen.append((statement, parameters))

    def __enter__(self):
        sa.event.listen(self.engine, "before_cursor_execute", self._before)
        return self

    def __exit__(self, *exc):
        sa.event.remove(self.engine, "before_cursor_execute", self._before)


def _pg_rows_read(engine, statement, parameters):
    """(rows the plan's scans read, the plan's node types) of ``statement``
    run with ``parameters`` under EXPLAIN ANALYZE."""
    with engine.connect() as conn:
        plan = conn.exec_driver_sql("EXPLAIN (ANALYZE, FORMAT JSON) " + statement,
                                    parameters).scalar()
    if isinstance(plan, str):
        plan = json.loads(plan)
    read, types = 0, []

    def walk(node):
        nonlocal read
        types.append((node["Node Type"], node.get("Relation Name")))
        if "Scan" in node["Node Type"]:
            read += (node["Actual Rows"] + node.get("Rows Removed by Filter", 0)
                     + node.get("Rows Removed by Index Recheck", 0)) * node["Actual Loops"]
        for child in node.get("Plans", ()):
            walk(child)
    walk(plan[0]["Plan"])
    return read, types


def _sqlite_steps(engine, statement, parameters):
    """Virtual machine steps (in tens) SQLite takes to run ``statement``
    to its last row."""
    steps = 0

    def count():
        nonlocal steps
        steps += 1
        return 0
    raw = engine.raw_connection()
    try:
        raw.driver_connection.set_progress_handler(count, 10)
        try:
            raw.driver_connection.execute(statement, parameters).fetchall()
        finally:
            raw.driver_connection.set_progress_handler(None, 10)
    finally:
        raw.close()
    return steps


def _expected(rows, keep, marker=None):
    """The page the list must give: newest first, id breaking ties."""
    ordered = sorted((r for r in rows if keep(r)),
                     key=lambda r: (r["created_at"], r["id"]), reverse=True)
    if marker is not None:
        position = [r["uuid"] for r in ordered].index(marker)
        ordered = ordered[position + 1:]
    return [r["uuid"] for r in ordered[:LIMIT]]


def _cases(rows):
    deep = rows[SERVERS // 2 + 1]["uuid"]           # an odd one: a tie partner
    in_project = [r for r in rows if r["project_id"] == "p07"][40]["uuid"]
    on_host = [r for r in rows if r["host"] == "h1"][300]["uuid"]
    return [
        ("all tenants", {}, None, lambda r: True),
        ("all tenants, marker half way", {}, deep, lambda r: True),
        ("project, marker", {"project_id": "p07"}, in_project,
         lambda r: r["project_id"] == "p07"),
        ("status ERROR", {"vm_state": "error"}, None, lambda r: r["vm_state"] == "error"),
        ("host, marker", {"host": "h1"}, on_host, lambda r: r["host"] == "h1"),
        ("changes-since (deleted included)",
         {"changes-since": T0 - datetime.timedelta(days=1), "read_deleted": True}, None,
         lambda r: True),
    ]


@pytest.mark.parametrize("case", range(6), ids=[
    c[0] for c in _cases([_row(i) for i in range(SERVERS)])])
def test_admin_page_reads_o_limit_rows(servers, case):
    kind, rows = servers
    name, filters, marker, keep = _cases(rows)[case]
    engine = db_engine.get_engine()
    admin = context.get_admin_context()
    with _Statements(engine) as statements:
        page = objects.InstanceList.get_by_filters(admin, dict(filters), limit=LIMIT,
                                                   marker=marker)
    assert [i.uuid for i in page] == _expected(rows, keep, marker), name
    assert len(statements.seen) == 1, statements.seen
    statement, parameters = statements.seen[0]
    if kind == "postgresql":
        read, types = _pg_rows_read(engine, statement, parameters)
        assert ("Seq Scan", "instances") not in types, types
        assert all(t != "Sort" for t, _ in types), types
        assert types[0][0] == "Limit" and types[1][0] == "Index Scan", types
        assert read <= 4 * LIMIT, (name, read, types)
    else:
        # a page of LIMIT rows takes about 45 (tens of) steps: its rows'
        # columns; reading or sorting the table's 3,000 rows takes hundreds
        # to thousands more
        steps = _sqlite_steps(engine, statement, parameters)
        assert steps <= 8 * LIMIT, (name, steps)
