"""Queries of the compute database's ``services`` table."""
from sqlalchemy import bindparam, delete, func, select, update

from volattach.db.api import _common as c
from volattach.db import models
from volattach import exception

_SERVICE_BY_HOST_AND_BINARY = (select(c.SERVICES)
                               .where(c.SERVICES.c.host == bindparam("host"),
                                      c.SERVICES.c.binary == bindparam("binary"))
                               .limit(1))


def service_create(values):
    def create(s):
        row = models.Service(**values)
        s.add(row)
        s.flush()
        return c.row_dict(row)
    return c.orm_write(create)


def service_get_by_host_and_binary(host, binary):
    return c.read_first(_SERVICE_BY_HOST_AND_BINARY, {"host": host, "binary": binary})


def service_get(service_id):
    def get(s):
        row = s.get(models.Service, service_id)
        if row is None:
            raise exception.ServiceNotFound(service_id=service_id)
        return c.row_dict(row)
    return c.orm_read(get)


def service_get_all(binary=None, host=None):
    q = select(c.SERVICES).order_by(c.SERVICES.c.id)
    if binary:
        q = q.where(c.SERVICES.c.binary == binary)
    if host:
        q = q.where(c.SERVICES.c.host == host)
    return c.read(q)


def service_update(service_id, values):
    def change(s):
        row = s.get(models.Service, service_id)
        if row is None:
            raise exception.ServiceNotFound(service_id=service_id)
        for key, value in values.items():
            setattr(row, key, value)
        s.flush()
        return c.row_dict(row)
    return c.orm_write(change)


def service_heartbeat(service_id):
    """One UPDATE: report_count + 1 and last_seen_up = now."""
    def beat(conn):
        return conn.execute(update(c.SERVICES)
                            .where(c.SERVICES.c.id == service_id)
                            .values(report_count=c.SERVICES.c.report_count + 1,
                                    last_seen_up=c.now())).rowcount
    if c.database().write_single(beat) == 0:
        raise exception.ServiceNotFound(service_id=service_id)


def service_destroy(service_id):
    c.database().write_single(lambda conn: conn.execute(
        delete(c.SERVICES).where(c.SERVICES.c.id == service_id)))


def service_get_minimum_version(binary):
    return c.database().read_single(lambda conn: conn.execute(
        select(func.min(c.SERVICES.c.version)).where(
            c.SERVICES.c.binary == binary,
            c.SERVICES.c.forced_down.is_(False))).scalar())
