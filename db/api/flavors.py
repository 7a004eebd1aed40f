"""Queries of the compute database's ``flavors`` table."""
from sqlalchemy import select

from volattach.db.api import _common as c
from volattach import exception


def flavor_get_all():
    return c.read(select(c.FLAVORS).where(c.FLAVORS.c.disabled.is_(False))
                  .order_by(c.FLAVORS.c.flavorid))


def flavor_get_by_flavor_id(flavorid):
    row = c.read_one(select(c.FLAVORS).where(c.FLAVORS.c.flavorid == str(flavorid)))
    if row is None:
        raise exception.FlavorNotFound(flavor_id=flavorid)
    return row
