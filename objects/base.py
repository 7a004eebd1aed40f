"""Base classes, registry, JSON field and RPC serializer of the objects."""
import contextlib
import copy
import datetime
import re
import threading

from oslo_versionedobjects import base as ovo_base
from oslo_versionedobjects import fields

remotable = ovo_base.remotable
remotable_classmethod = ovo_base.remotable_classmethod


class VolattachObjectRegistry(ovo_base.VersionedObjectRegistry):

    def registration_hook(self, cls, index):
        # objects.<Name> is always the newest registered version.
        from volattach import objects
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


def _passes_through(field):
    """True when ``field.to_primitive`` returns the value unchanged (plain
    strings, integers, booleans, uuids...: oslo's base FieldType)."""
    field_type = getattr(field, "_type", None)
    return (type(field).to_primitive is fields.Field.to_primitive
            and field_type is not None
            and type(field_type).to_primitive is fields.FieldType.to_primitive)


_primitive_plans = {}


def _primitive_plan(cls):
    """``(name, storage attribute, field, passes through)`` per field of
    ``cls``, computed once per class."""
    plan = _primitive_plans.get(cls)
    if plan is None:
        plan = _primitive_plans[cls] = tuple(
            (name, "_obj_" + name, field, _passes_through(field))
            for name, field in cls.fields.items())
    return plan


_primitive_keys = {}


def _keys(cls):
    """The envelope keys of ``cls``'s primitives (``<namespace>.name``...)."""
    keys = _primitive_keys.get(cls)
    if keys is None:
        keys = _primitive_keys[cls] = tuple(
            cls._obj_primitive_key(k)
            for k in ("name", "namespace", "version", "data", "changes"))
    return keys


# Field types whose (coerced) values are never VersionedObjects: strings
# (enums, uuids...), numbers, booleans, datetimes and plain containers.
_NEVER_OBJECTS = (fields.String, fields.StringPattern, fields.Integer,
                  fields.Float, fields.Boolean, fields.DateTime, fields.List,
                  fields.Dict, fields.Set)
_nested_plans = {}


def _nested_plan(cls):
    """``(name, storage attribute)`` of the fields of ``cls`` that may hold
    a VersionedObject (ObjectField, and any type not known not to)."""
    plan = _nested_plans.get(cls)
    if plan is None:
        plan = _nested_plans[cls] = tuple(
            (name, "_obj_" + name) for name, field in cls.fields.items()
            if not isinstance(getattr(field, "_type", None), _NEVER_OBJECTS))
    return plan


class VolattachObject(ovo_base.VersionedObject):
    """Base of volattach's objects.

    Four methods of oslo.versionedobjects are given faster equivalents here
    (same results, same wire format): ``obj_attr_is_set`` (oslo's rebuilds the
    list of field names on every call, and ``obj_what_changed``,
    ``obj_reset_changes`` and ``obj_to_primitive`` call it once per field),
    ``obj_what_changed`` (which looks for changes inside nested objects in
    the fields that can hold one, not in every field),
    ``obj_to_primitive`` at the object's own version (other targets and
    version manifests go through oslo's, which knows how to backport), and
    ``_obj_from_primitive`` (values of plain fields that already have their
    field's type are stored as ``fill`` stores them, without a coercion
    each).  Every API request and RPC message builds, checks, serializes and
    deserializes these objects: this is on their hot path.
    tests/unit/test_objects_fast_paths.py compares them with oslo's.
    """
    OBJ_SERIAL_NAMESPACE = "volattach_object"
    OBJ_PROJECT_NAMESPACE = "volattach"
    indirection_api = _INDIRECTION

    def obj_reset_changes_all(self):
        self.obj_reset_changes(recursive=True)

    def obj_attr_is_set(self, attrname):
        if attrname in self.fields:
            return ("_obj_" + attrname) in self.__dict__
        # extra fields and unknown names: oslo's answer (or AttributeError)
        return super().obj_attr_is_set(attrname)

    def obj_what_changed(self):
        changed = self._changed_fields
        if changed:
            fields_ = self.fields
            changes = {name for name in changed if name in fields_}
        else:
            changes = set()
        values = self.__dict__
        for name, attr in _nested_plan(type(self)):
            value = values.get(attr)
            if (isinstance(value, ovo_base.VersionedObject)
                    and value.obj_what_changed()):
                changes.add(name)
        return changes

    @classmethod
    def _obj_from_primitive(cls, context, objver, primitive):
        self = cls()
        self._context = context
        self.VERSION = objver
        objdata = cls._obj_primitive_field(primitive, "data")
        changes = cls._obj_primitive_field(primitive, "changes", [])
        fields_ = cls.fields
        values = self.__dict__
        plan = _wire_plan(cls)
        for name, value in objdata.items():
            entry = plan.get(name)
            if entry is None:
                continue                # not a field of this class: ignored
            attr, python_type, nullable = entry
            # a plain field's from_primitive gives the value back, and its
            # coercion too when the value has the field's type already
            if python_type is not None:
                if value is None:
                    if nullable:
                        values[attr] = None
                        continue
                elif type(value) is python_type:
                    values[attr] = value
                    continue
                elif (python_type is _ISOTIME and type(value) is str
                        and _ISOTIME_UTC.fullmatch(value)):
                    # oslo's own wire format (isotime: seconds, "Z"): what
                    # iso8601 and the coercion give, parsed in C
                    try:
                        values[attr] = _fromisoformat(value)
                        continue
                    except ValueError:
                        pass        # (hour 24, day 31 of April...): oslo's
            setattr(self, name, fields_[name].from_primitive(self, name, value))
        self._changed_fields = {x for x in changes if x in fields_}
        return self

    def obj_to_primitive(self, target_version=None, version_manifest=None):
        if version_manifest or (target_version is not None
                                and target_version != self.VERSION):
            return super().obj_to_primitive(target_version, version_manifest)
        values = self.__dict__
        data = {}
        for name, attr, field, plain in _primitive_plan(type(self)):
            if attr in values:
                value = values[attr]
                data[name] = (value if plain or value is None
                              else field.to_primitive(self, name, value))
        name_key, namespace_key, version_key, data_key, changes_key = \
            _keys(type(self))
        primitive = {name_key: self.obj_name(),
                     namespace_key: self.OBJ_PROJECT_NAMESPACE,
                     version_key: self.VERSION, data_key: data}
        changes = [name for name in self.obj_what_changed() if name in data]
        if changes:
            primitive[changes_key] = changes
        return primitive


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
    """``(name, storage attribute, python type or None, nullable)`` per
    field of ``cls``; the python type is ``datetime`` for a timezone-aware
    DateTimeField, None for fields that always go through coercion."""
    plan = _raw_fields.get(cls)
    if plan is None:
        plan = []
        for name, field in cls.fields.items():
            python_type = None
            for field_class, raw_type in _RAW_TYPES:
                if type(field) is field_class:
                    python_type = raw_type
                    break
            if (type(field) is fields.DateTimeField
                    and getattr(field._type, "tzinfo_aware", False)):
                python_type = datetime.datetime
            plan.append((name, "_obj_" + name, python_type, field.nullable))
        plan = _raw_fields[cls] = tuple(plan)
    return plan


_wire_plans = {}

# A timezone-aware DateTimeField in a wire plan: its values come as strings,
# oslo's isotime format "2026-08-01T12:30:45Z" (UTC, whole seconds).
# iso8601.parse_date (oslo's from_primitive) gives that string's datetime with
# tzinfo datetime.timezone.utc, which the coercion keeps; so does
# datetime.fromisoformat, without iso8601's Python parsing.  Any other string
# (offsets, fractions, spaces...) goes through oslo's from_primitive.
_ISOTIME = object()
_ISOTIME_UTC = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z",
                          re.ASCII)
_fromisoformat = datetime.datetime.fromisoformat


def _wire_plan(cls):
    """``{name: (storage attribute, python type or None, nullable)}`` of
    ``cls``'s fields, for values that come from primitives: the python type
    of a plain field (``_raw_plan``), ``_ISOTIME`` for a timezone-aware
    DateTimeField (datetimes come as strings), None for any other."""
    plan = _wire_plans.get(cls)
    if plan is None:
        plan = _wire_plans[cls] = {
            name: (attr, _ISOTIME if python_type is datetime.datetime
                   else python_type, nullable)
            for name, attr, python_type, nullable in _raw_plan(cls)}
    return plan


def fill(obj, row, skip=()):
    """Copy the columns of a db row dict into the object's fields.

    Values whose Python type already matches a plain field are stored as
    they are; a naive datetime (the database's UTC) gets the UTC tzinfo that
    the field's coercion would give it; anything else (enums, nested
    objects, a value of an unexpected type) goes through the field's normal
    coercion."""
    values = obj.__dict__
    for name, attr, python_type, nullable in _raw_plan(type(obj)):
        if name not in row or name in skip:
            continue
        value = row[name]
        if python_type is not None:
            if value is None:
                if nullable:
                    values[attr] = None
                    continue
            elif type(value) is python_type:
                if python_type is datetime.datetime:
                    if value.tzinfo is None:
                        values[attr] = value.replace(tzinfo=datetime.timezone.utc)
                        continue
                else:
                    values[attr] = value
                    continue
        setattr(obj, name, value)
    obj.obj_reset_changes()
    return obj
