"""Queries of volume types and their extra specs."""
import uuid

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from volattach import exception
from volattach.volume.db import models
from volattach.volume.db.common import (DEFAULT_TYPE_NAME, _dict,
                                        extra_specs, utcnow, volume_types,
                                        volumes)

encryption = models.Encryption.__table__
# the encryption specs a request may set (Cinder's columns)
ENCRYPTION_FIELDS = ("cipher", "key_size", "provider", "control_location")

def _with_specs(conn, rows):
    rows = [_dict(r) for r in rows]
    if not rows:
        return rows
    specs = {}
    query = sa.select(extra_specs).where(
        extra_specs.c.volume_type_id.in_([r["id"] for r in rows]))
    for spec in conn.execute(query):
        specs.setdefault(spec.volume_type_id, {})[spec.key] = spec.value
    for row in rows:
        row["extra_specs"] = specs.get(row["id"], {})
    return rows


def type_create(conn, name, description=None, is_public=True,
                specs=None, type_id=None):
    type_id = type_id or str(uuid.uuid4())
    try:
        with conn.begin_nested():
            conn.execute(sa.insert(volume_types).values(
                id=type_id, name=name, description=description,
                is_public=is_public, created_at=utcnow()))
    except sa_exc.IntegrityError:
        raise exception.VolumeTypeExists(name=name)
    for key, value in (specs or {}).items():
        conn.execute(sa.insert(extra_specs).values(
            volume_type_id=type_id, key=key, value=value))
    return type_get(conn, type_id)


def type_get(conn, id_or_name, include_private=True):
    """A type by id, else by name (``default`` is the default type).
    ``include_private`` False (a caller who is no admin): a private type
    is not found, as in Cinder for a project without access to it (there
    is no type access list here: private types are the admins')."""
    if id_or_name == "default":
        id_or_name = DEFAULT_TYPE_NAME
    rows = conn.execute(sa.select(volume_types).where(
        volume_types.c.id == id_or_name)).all()
    if not rows:
        rows = conn.execute(sa.select(volume_types).where(
            volume_types.c.name == id_or_name)).all()
    if not rows or not (include_private or rows[0].is_public):
        raise exception.VolumeTypeNotFound(volume_type_id=id_or_name)
    return _with_specs(conn, rows)[0]


def type_list(conn, include_private=False):
    query = sa.select(volume_types).order_by(volume_types.c.created_at,
                                             volume_types.c.name)
    if not include_private:
        query = query.where(volume_types.c.is_public == sa.true())
    return _with_specs(conn, conn.execute(query).all())


def type_update(conn, type_id, name=None, description=None, is_public=None):
    """Rename, describe or publish a type (the default type keeps its
    name); returns the type."""
    vtype = type_get(conn, type_id)
    values = {}
    if name is not None and name != vtype["name"]:
        if vtype["name"] == DEFAULT_TYPE_NAME:
            raise exception.InvalidInput(
                reason="The default volume type cannot be renamed.")
        values["name"] = name
    if description is not None:
        values["description"] = description
    if is_public is not None:
        values["is_public"] = is_public
    if values:
        values["updated_at"] = utcnow()
        try:
            with conn.begin_nested():
                conn.execute(sa.update(volume_types).where(
                    volume_types.c.id == vtype["id"]).values(**values))
        except sa_exc.IntegrityError:
            raise exception.VolumeTypeExists(name=name)
    return type_get(conn, vtype["id"])


def type_delete(conn, type_id):
    vtype = type_get(conn, type_id)
    if vtype["name"] == DEFAULT_TYPE_NAME:
        raise exception.InvalidInput(
            reason="Default volume type can not be deleted.")
    in_use = conn.execute(sa.select(sa.func.count()).select_from(volumes)
                          .where(volumes.c.volume_type_id == vtype["id"]))
    if in_use.scalar():
        raise exception.VolumeTypeInUse(volume_type_id=vtype["id"])
    conn.execute(sa.delete(extra_specs).where(
        extra_specs.c.volume_type_id == vtype["id"]))
    conn.execute(sa.delete(encryption).where(
        encryption.c.volume_type_id == vtype["id"]))
    conn.execute(sa.delete(volume_types).where(
        volume_types.c.id == vtype["id"]))



def type_specs_set(conn, type_id, specs):
    """Add or replace extra specs of the type; returns ``specs``."""
    vtype = type_get(conn, type_id)
    for key, value in specs.items():
        changed = conn.execute(sa.update(extra_specs).where(
            extra_specs.c.volume_type_id == vtype["id"],
            extra_specs.c.key == key).values(value=value)).rowcount
        if not changed:
            conn.execute(sa.insert(extra_specs).values(
                volume_type_id=vtype["id"], key=key, value=value))
    conn.execute(sa.update(volume_types).where(
        volume_types.c.id == vtype["id"]).values(updated_at=utcnow()))
    return specs


def type_spec_delete(conn, type_id, key):
    vtype = type_get(conn, type_id)
    deleted = conn.execute(sa.delete(extra_specs).where(
        extra_specs.c.volume_type_id == vtype["id"],
        extra_specs.c.key == key)).rowcount
    if not deleted:
        raise exception.NotFound(
            "Volume Type %s has no extra specs with key %s."
            % (vtype["id"], key))


# -- encryption specs (/types/{type_id}/encryption) ------------------------------

def _encryption_row(conn, type_id):
    return _dict(conn.execute(sa.select(encryption).where(
        encryption.c.volume_type_id == type_id)).first())


def _refuse_in_use(conn, type_id, verb):
    """Cinder's 400: the specs of a type that volumes use stay as they are."""
    in_use = conn.execute(sa.select(sa.func.count()).select_from(volumes)
                          .where(volumes.c.volume_type_id == type_id))
    if in_use.scalar():
        raise exception.InvalidInput(
            message="Cannot %s encryption specs. Volume type in use." % verb)


def _encryption_not_found(type_id):
    return exception.NotFound(
        "Volume type encryption for type %s does not exist." % type_id)


def encryption_get(conn, type_id):
    """The type's encryption specs (a dict of the row), or None: 404 for an
    unknown type."""
    return _encryption_row(conn, type_get(conn, type_id)["id"])


def encryption_create(conn, type_id, values):
    """Give a type its encryption specs (``values``: some of
    ENCRYPTION_FIELDS); 400 when it has some or volumes use it."""
    vtype = type_get(conn, type_id)
    _refuse_in_use(conn, vtype["id"], "create")
    if _encryption_row(conn, vtype["id"]) is not None:
        raise exception.InvalidInput(
            message="Volume type encryption for type %s already exists."
            % vtype["id"])
    try:
        with conn.begin_nested():
            conn.execute(sa.insert(encryption).values(
                encryption_id=str(uuid.uuid4()), volume_type_id=vtype["id"],
                created_at=utcnow(),
                **{k: values.get(k) for k in ENCRYPTION_FIELDS}))
    except sa_exc.IntegrityError:
        # a concurrent create won the unique volume_type_id
        raise exception.InvalidInput(
            message="Volume type encryption for type %s already exists."
            % vtype["id"])
    return _encryption_row(conn, vtype["id"])


def encryption_update(conn, type_id, values):
    """Change some of the type's encryption specs; 404 when it has none,
    400 when volumes use it."""
    vtype = type_get(conn, type_id)
    _refuse_in_use(conn, vtype["id"], "update")
    changes = {k: values[k] for k in ENCRYPTION_FIELDS if k in values}
    changed = conn.execute(sa.update(encryption).where(
        encryption.c.volume_type_id == vtype["id"]).values(
            updated_at=utcnow(), **changes)).rowcount
    if not changed:
        raise _encryption_not_found(vtype["id"])
    return _encryption_row(conn, vtype["id"])


def encryption_delete(conn, type_id):
    """Remove the type's encryption specs; 404 when it has none, 400 when
    volumes use it."""
    vtype = type_get(conn, type_id)
    _refuse_in_use(conn, vtype["id"], "delete")
    deleted = conn.execute(sa.delete(encryption).where(
        encryption.c.volume_type_id == vtype["id"])).rowcount
    if not deleted:
        raise _encryption_not_found(vtype["id"])
