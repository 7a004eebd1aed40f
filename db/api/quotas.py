"""Queries of the quota tables (``quotas``, ``quota_project_locks``) and
the counts the quotas compare with.

Usage is counted live, as Nova counts it (no usage table to drift): the
servers of a project (and of a user), their vcpus and memory_mb, a user's
key pairs.  What makes a check and the rows it admits one step is the
project's lock row: ``lock_project`` inserts it if missing and takes it
``FOR UPDATE`` (PostgreSQL), so that two creates of one project count one
after the other, each seeing the other's rows once it has committed (READ
COMMITTED takes a new snapshot per statement).  SQLite's write
transactions are serial already (``BEGIN IMMEDIATE``).
"""
from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite

from volattach.db.api import _common as c
from volattach.db import models

QUOTAS = models.Quota.__table__
LOCKS = models.QuotaProjectLock.__table__
CLASSES = models.QuotaClass.__table__
KEY_PAIRS = models.KeyPair.__table__


def lock_project(conn, key):
    """Take the lock row ``key`` (a project id, or ``user:<id>`` for what
    a user counts) for the rest of ``conn``'s transaction."""
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    conn.execute(dialect.insert(LOCKS).values(project_id=key)
                 .on_conflict_do_nothing())
    conn.execute(select(LOCKS.c.project_id).where(LOCKS.c.project_id == key)
                 .with_for_update())


def count_instances(conn, project_id, user_id=None):
    """``{"instances": n, "cores": vcpus, "ram": memory_mb}`` of the
    servers (not deleted) of a project, or of one user in it."""
    q = (select(func.count(), func.coalesce(func.sum(c.INSTANCES.c.vcpus), 0),
                func.coalesce(func.sum(c.INSTANCES.c.memory_mb), 0))
         .where(c.INSTANCES.c.project_id == project_id,
                c.INSTANCES.c.deleted == 0))
    if user_id is not None:
        q = q.where(c.INSTANCES.c.user_id == user_id)
    n, cores, ram = conn.execute(q).one()
    return {"instances": int(n), "cores": int(cores), "ram": int(ram)}


def count_key_pairs(conn, user_id):
    return int(conn.execute(select(func.count()).select_from(KEY_PAIRS)
                            .where(KEY_PAIRS.c.user_id == user_id)).scalar())


def quota_usages(project_id, user_id=None):
    """The counted usage of a project (and ``user_id``'s key pairs)."""
    def read(conn):
        usages = count_instances(conn, project_id, user_id)
        usages["key_pairs"] = (count_key_pairs(conn, user_id)
                               if user_id is not None else 0)
        return usages
    return c.database().read(read)


def quota_get_all(project_id, user_id=None):
    """``{resource: hard_limit}`` set for the project (``user_id`` None)
    or for one user in it."""
    rows = c.read(select(QUOTAS.c.resource, QUOTAS.c.hard_limit).where(
        QUOTAS.c.project_id == project_id,
        QUOTAS.c.user_id == (user_id or "")))
    return {r["resource"]: r["hard_limit"] for r in rows}


def quota_set_all(project_id, limits, user_id=None, check=None):
    """Store ``limits`` (``{resource: hard_limit}``) in one transaction
    under the project's lock; ``check(usages)`` runs first with the
    project's (or the user's) counted usage and may raise to store
    nothing."""
    def write(conn):
        lock_project(conn, project_id)
        if check is not None:
            usages = count_instances(conn, project_id, user_id)
            usages["key_pairs"] = (count_key_pairs(conn, user_id)
                                   if user_id else 0)
            check(usages)
        now = c.now()
        for resource, limit in limits.items():
            where = (QUOTAS.c.project_id == project_id,
                     QUOTAS.c.user_id == (user_id or ""),
                     QUOTAS.c.resource == resource)
            if not conn.execute(update(QUOTAS).where(*where).values(
                    hard_limit=limit, updated_at=now)).rowcount:
                conn.execute(insert(QUOTAS).values(
                    project_id=project_id, user_id=user_id or "",
                    resource=resource, hard_limit=limit, created_at=now))
    c.database().write(write)


def quota_destroy_all(project_id, user_id=None):
    """Forget the limits of the project (its users' too) or of one user."""
    def write(conn):
        q = delete(QUOTAS).where(QUOTAS.c.project_id == project_id)
        if user_id:
            q = q.where(QUOTAS.c.user_id == user_id)
        conn.execute(q)
    c.database().write(write)


def quota_class_get_all(class_name):
    """``{resource: hard_limit}`` set for a quota class."""
    rows = c.read(select(CLASSES.c.resource, CLASSES.c.hard_limit)
                  .where(CLASSES.c.class_name == class_name))
    return {r["resource"]: r["hard_limit"] for r in rows}


def quota_class_set_all(class_name, limits):
    def write(conn):
        lock_project(conn, "class:" + class_name)
        now = c.now()
        for resource, limit in limits.items():
            where = (CLASSES.c.class_name == class_name,
                     CLASSES.c.resource == resource)
            if not conn.execute(update(CLASSES).where(*where).values(
                    hard_limit=limit, updated_at=now)).rowcount:
                conn.execute(insert(CLASSES).values(
                    class_name=class_name, resource=resource,
                    hard_limit=limit, created_at=now))
    c.database().write(write)
