"""What the compute database's query modules share: the ``Database`` they
run through, row conversion, the Core tables, and the text comparisons
that give the same answer on SQLite and on PostgreSQL:

- ``binary(column)``: a text column ordered by its code points (SQLite's
  BINARY, PostgreSQL's "C" collation, whatever the cluster's locale);
- ``contains(column, text)``: whether ``text`` occurs in the column, case
  sensitive, no wildcards (SQLite's LIKE ignores ASCII case, PostgreSQL's
  does not, and both read ``%`` and ``_``).
"""
from sqlalchemy import Boolean
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql import functions

from volattach.db.core import engine as core_engine
from volattach.db import engine as db_engine
from volattach.db import models

INSTANCES = models.Instance.__table__
BDMS = models.BlockDeviceMapping.__table__
SERVICES = models.Service.__table__
FLAVORS = models.Flavor.__table__
ACTIONS = models.InstanceAction.__table__
EVENTS = models.InstanceActionEvent.__table__
ABANDONED = models.AbandonedReservation.__table__
TAGS = models.InstanceTag.__table__


class binary(functions.FunctionElement):
    """``binary(column)``: order by code points on either database."""
    inherit_cache = True
    name = "binary"


@compiles(binary)
def _binary(element, compiler, **kw):
    return compiler.process(element.clauses, **kw)   # SQLite: BINARY


@compiles(binary, "postgresql")
def _binary_postgresql(element, compiler, **kw):
    return '(%s) COLLATE "C"' % compiler.process(element.clauses, **kw)


class contains(functions.FunctionElement):
    """``contains(column, text)``: a case-sensitive substring test."""
    inherit_cache = True
    name = "contains"
    type = Boolean()


@compiles(contains)
def _contains(element, compiler, **kw):
    column, text = list(element.clauses)
    return "(instr(%s, %s) > 0)" % (compiler.process(column, **kw),
                                    compiler.process(text, **kw))


@compiles(contains, "postgresql")
def _contains_postgresql(element, compiler, **kw):
    column, text = list(element.clauses)
    return "(strpos(%s, %s) > 0)" % (compiler.process(column, **kw),
                                     compiler.process(text, **kw))


def now():
    return models.utcnow()


def database():
    return db_engine.database()


def row_dict(obj):
    """An ORM row as a plain dict (``metadata_`` named ``metadata``)."""
    if obj is None:
        return None
    values = {c.key: getattr(obj, c.key) for c in obj.__mapper__.column_attrs}
    if "metadata_" in values:
        values["metadata"] = values.pop("metadata_")
    return values


def fix_keys(values):
    """``values`` with ``metadata`` renamed to the ORM's ``metadata_``."""
    values = dict(values)
    if "metadata" in values:
        values["metadata_"] = values.pop("metadata")
    return values


def dicts(result):
    """The rows of a Core result as plain dicts: its keys zipped with each
    row, about a third cheaper than ``dict()`` of each ``.mappings()`` row
    (which looks every key up through the result's key map; a server's
    row, 34 columns: 117 against 164 us per read, issue 23)."""
    keys = tuple(result.keys())
    return [dict(zip(keys, row)) for row in result]


def first_dict(result):
    """The first row of a Core result as a dict (``dicts``), or None."""
    keys = tuple(result.keys())
    row = result.first()
    return None if row is None else dict(zip(keys, row))


def one_dict(result):
    """The one row of a Core result as a dict (``dicts``); NoResultFound
    or MultipleResultsFound otherwise, as ``Result.one``."""
    keys = tuple(result.keys())
    return dict(zip(keys, result.one()))


def read(stmt, params=None):
    """Rows of a Core SELECT as dicts (reads skip the ORM: no identity map,
    no entity objects; this is the API's hot path).  One statement: no
    transaction around it (``Database.read_single``)."""
    return database().read_single(
        lambda conn: dicts(conn.execute(stmt, params)))


def read_one(stmt):
    rows = read(stmt.limit(1))
    return rows[0] if rows else None


def read_first(stmt, params):
    """The first row of a prebuilt SELECT (which has its own LIMIT 1)."""
    rows = read(stmt, params)
    return rows[0] if rows else None


def _in_session(fn, args):
    def run(conn):
        with core_engine.orm_session(conn) as session:
            return fn(session, *args)
    return run


def orm_read(fn, *args):
    """``fn(session, *args)`` in one read transaction."""
    return database().read(_in_session(fn, args))


def orm_write(fn, *args):
    """``fn(session, *args)`` in one write transaction (committed when
    ``fn`` returns; ``fn`` flushes before reading generated values)."""
    return database().write(_in_session(fn, args))
