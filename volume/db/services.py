"""Queries of the ``services`` table (registration and heartbeat)."""
import uuid

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from volattach.volume.db.common import _dict, services, utcnow

def service_get_or_create(conn, host, binary, topic, availability_zone):
    """This service's row, created on first registration."""
    query = sa.select(services).where(services.c.host == host,
                                      services.c.binary == binary)
    row = conn.execute(query).first()
    if row is None:
        try:
            with conn.begin_nested():
                conn.execute(sa.insert(services).values(
                    uuid=str(uuid.uuid4()), host=host, binary=binary,
                    topic=topic, availability_zone=availability_zone,
                    disabled=False, report_count=0, created_at=utcnow(),
                    updated_at=utcnow()))
        except sa_exc.IntegrityError:
            pass  # registered concurrently by another process
        row = conn.execute(query).first()
    return _dict(row)


def service_heartbeat(conn, service_id):
    conn.execute(sa.update(services).where(services.c.id == service_id)
                 .values(updated_at=utcnow(),
                         report_count=services.c.report_count + 1))


def service_list(conn, host=None, binary=None):
    query = sa.select(services).order_by(services.c.id)
    if host:
        query = query.where(services.c.host == host)
    if binary:
        query = query.where(services.c.binary == binary)
    return [_dict(r) for r in conn.execute(query)]

