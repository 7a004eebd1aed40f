"""Queries of the compute database's ``key_pairs`` table."""
from sqlalchemy import delete, insert, select
from sqlalchemy import exc as sa_exc

from volattach.db.api import _common as c
from volattach.db import models
from volattach import exception

KEY_PAIRS = models.KeyPair.__table__


def key_pair_create(values):
    """Store a key pair; KeyPairExists when the user has one by that name."""
    values = dict(values, created_at=c.now())

    def create(conn):
        try:
            with conn.begin_nested():
                conn.execute(insert(KEY_PAIRS).values(**values))
        except sa_exc.IntegrityError:
            raise exception.KeyPairExists(key_name=values["name"])
        return c.one_dict(conn.execute(select(KEY_PAIRS).where(
            KEY_PAIRS.c.user_id == values["user_id"],
            KEY_PAIRS.c.name == values["name"])))
    return c.database().write(create)


def key_pair_get(user_id, name):
    row = c.read_one(select(KEY_PAIRS).where(KEY_PAIRS.c.user_id == user_id,
                                             KEY_PAIRS.c.name == name))
    if row is None:
        raise exception.KeypairNotFound(user_id=user_id, name=name)
    return row


def key_pair_get_all_by_user(user_id):
    return c.read(select(KEY_PAIRS).where(KEY_PAIRS.c.user_id == user_id)
                  .order_by(c.binary(KEY_PAIRS.c.name)))


def key_pair_destroy(user_id, name):
    def destroy(conn):
        deleted = conn.execute(delete(KEY_PAIRS).where(
            KEY_PAIRS.c.user_id == user_id,
            KEY_PAIRS.c.name == name)).rowcount
        if not deleted:
            raise exception.KeypairNotFound(user_id=user_id, name=name)
    c.database().write(destroy)
