"""Base classes, registry, JSON field and RPC serializer of the objects."""
import contextlib
import copy
import threading

from oslo_versionedobjects import base as ovo_base
from oslo_versionedobjects import fields

remotable = ovo_base.remotable
remotable_classmethod = ovo_base.remotable_classmethod


class VolattachObjectRegistry(ovo_base.VersionedObjectRegistry):

    def registration_hook(self, cls, index):
        # objects.<Name> is always the newest registered version.
        import objects
        current = getattr(objects, cls.obj_name(), None)
        if current is None or _version(cls.VERSION) >= _version(current.VERSION):
            setattr(objects, cls.obj_name(), cls)


def _version(text):
    return tuple(int(p) for p in text.split("."))


class _Indirection:
    """Where remotable methods go instead of the database.

    A compute daemon sets it for the whole process (``set_indirection_api``);
    in the all-in-one process and in functional tests the computes share a
    process with the conductor, so their RPC endpoints and threads set it per
    thread (``indirection``), and the conductor's threads keep using the
    database.
    """

    def __init__(self):
        self.process_api = None
        self.local = threading.local()

    def __get__(self, obj, owner):
        return getattr(self.local, "api", None) or self.process_api


_INDIRECTION = _Indirection()


def set_indirection_api(api):
    _INDIRECTION.process_api = api


@contextlib.contextmanager
def indirection(api):
    previous = getattr(_INDIRECTION.local, "api", None)
    _INDIRECTION.local.api = api
    try:
        yield
    finally:
        _INDIRECTION.local.api = previous


class VolattachObject(ovo_base.VersionedObject):
    OBJ_SERIAL_NAMESPACE = "volattach_object"
    OBJ_PROJECT_NAMESPACE = "volattach"
    indirection_api = _INDIRECTION

    def obj_reset_changes_all(self):
        self.obj_reset_changes(recursive=True)


class VolattachPersistentObject:
    """Timestamps and soft-delete flag shared by database-backed objects."""

    fields = {
        "created_at": fields.DateTimeField(nullable=True),
        "updated_at": fields.DateTimeField(nullable=True),
    }


class ObjectListBase(ovo_base.ObjectListBase):
    pass


class VolattachObjectSerializer(ovo_base.VersionedObjectSerializer):
    OBJ_BASE_CLASS = VolattachObject


class JSON(fields.FieldType):
    """Any JSON-serializable value (dicts of mixed types: connectors)."""

    def coerce(self, obj, attr, value):
        return copy.deepcopy(value)

    def to_primitive(self, obj, attr, value):
        return copy.deepcopy(value)

    def from_primitive(self, obj, attr, value):
        return copy.deepcopy(value)


class JSONField(fields.AutoTypedField):
    AUTO_TYPE = JSON()


# Field types whose database values are already what the field holds: those
# values are stored without oslo.versionedobjects' per-field coercion and
# change tracking (fill runs for every row the API reads: its hot path).
_RAW_TYPES = (
    (fields.UUIDField, str), (fields.SensitiveStringField, str),
    (fields.StringField, str), (fields.BooleanField, bool),
    (fields.IntegerField, int),
)
_raw_fields = {}


def _raw_plan(cls):
    plan = _raw_fields.get(cls)
    if plan is None:
        plan = {}
        for name, field in cls.fields.items():
            for field_class, python_type in _RAW_TYPES:
                if type(field) is field_class:
                    plan[name] = (python_type, field.nullable)
                    break
        _raw_fields[cls] = plan
    return plan


def fill(obj, row, skip=()):
    """Copy the columns of a db row dict into the object's fields.

    Values whose Python type already matches a plain field are stored as
    they are; anything else (datetimes, enums, nested objects, a value of an
    unexpected type) goes through the field's normal coercion."""
    plan = _raw_plan(type(obj))
    for name in obj.fields:
        if name in skip or name not in row:
            continue
        value = row[name]
        expected = plan.get(name)
        if expected is not None and (
                type(value) is expected[0]
                or (value is None and expected[1])):
            setattr(obj, "_obj_" + name, value)
        else:
            setattr(obj, name, value)
    obj.obj_reset_changes()
    return obj
