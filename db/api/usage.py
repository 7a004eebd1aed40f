"""The servers that ran in a period (os-simple-tenant-usage): deleted ones
included, those launched before its end and not terminated before its
start, oldest first, paged by a marker server."""
from sqlalchemy import and_, or_, select

from volattach.db.api import _common as c
from volattach import exception


def instance_get_active_by_window(begin, end, project_id=None, limit=None,
                                  marker=None):
    """Rows of the servers active between ``begin`` and ``end`` (naive
    UTC), by (created_at, id); after server ``marker`` (MarkerNotFound)."""
    t = c.INSTANCES

    def read(conn):
        q = select(t).where(
            or_(t.c.terminated_at.is_(None), t.c.terminated_at > begin),
            t.c.launched_at < end)
        if project_id is not None:
            q = q.where(t.c.project_id == project_id)
        if marker is not None:
            row = conn.execute(select(t.c.created_at, t.c.id).where(
                t.c.uuid == marker)).first()
            if row is None:
                raise exception.MarkerNotFound(marker=marker)
            created, row_id = row
            q = q.where(or_(t.c.created_at > created,
                            and_(t.c.created_at == created, t.c.id > row_id)))
        q = q.order_by(t.c.created_at, t.c.id)
        if limit is not None:
            q = q.limit(limit)
        return c.dicts(conn.execute(q))
    return c.database().read(read)
