"""/types/{type_id}/encryption: the encryption specs of a volume type
(Cinder's volume type encryption API; admin).

GET of the collection answers the specs unwrapped, ``{}`` for a type
without any; POST creates them (200, ``{"encryption": ...}``), 400 when the
type has some already or volumes use it.  Under ``/encryption/{x}``: GET
answers one spec ``{x: value}``; PUT and DELETE take the encryption id
(which Cinder does not check either) and change or remove the type's
specs: 404 when it has none, 400 while volumes use the type; DELETE is 202.
"""
import falcon

from volattach import exception
from volattach.volume.handlers import body, context
from volattach.volume.schemas import types as schemas

FIELDS = ("cipher", "key_size", "provider", "control_location")


def _time(value):
    return value.isoformat() if value is not None else None


def view(row):
    """Cinder's show of the specs: its row, live ones only."""
    return {
        "volume_type_id": row["volume_type_id"],
        "encryption_id": row["encryption_id"],
        "key_size": row["key_size"],
        "provider": row["provider"],
        "control_location": row["control_location"],
        "cipher": row["cipher"],
        "deleted": False,
        "created_at": _time(row["created_at"]),
        "updated_at": _time(row["updated_at"]),
        "deleted_at": None,
    }


def _values(data):
    """The request's specs with key_size as an integer (the schema allows
    a string of digits); keys without a column are dropped."""
    values = {k: data[k] for k in FIELDS if k in data}
    if values.get("key_size") is not None:
        values["key_size"] = int(values["key_size"])
    return values


def _not_found(type_id):
    return exception.NotFound(
        "Volume type encryption for type %s does not exist." % type_id)


class Collection:
    def __init__(self, manager):
        self.manager = manager

    def on_get(self, req, resp, type_id):
        row = self.manager.type_encryption_get(context(req), type_id)
        resp.media = view(row) if row else {}

    def on_post(self, req, resp, type_id):
        values = _values(body(req, schemas.encryption_create)["encryption"])
        row = self.manager.type_encryption_create(context(req), type_id,
                                                  values)
        created = {k: row[k] for k in FIELDS}
        created.update(volume_type_id=row["volume_type_id"],
                       encryption_id=row["encryption_id"])
        resp.media = {"encryption": created}


class Item:
    def __init__(self, manager):
        self.manager = manager

    def on_get(self, req, resp, type_id, key):
        row = self.manager.type_encryption_get(context(req), type_id)
        specs = view(row) if row else {}
        if key not in specs:
            raise _not_found(type_id)
        resp.media = {key: specs[key]}

    def on_put(self, req, resp, type_id, key):
        values = _values(body(req, schemas.encryption_update)["encryption"])
        self.manager.type_encryption_update(context(req), type_id, values)
        resp.media = {"encryption": values}

    def on_delete(self, req, resp, type_id, key):
        self.manager.type_encryption_delete(context(req), type_id)
        resp.status = falcon.HTTP_202
