"""JSON-schema validation of request bodies and query strings, Nova's way.

Schemas live in ``api.schemas``; a resource's schemas for one call are a
sequence of ``(first microversion, schema)`` pairs in ascending order (each
applies from its microversion until the next one starts)::

    CREATE = (("2.1", create_v21), ("2.49", create_v249), ("2.79", create_v279))
    body = validation.validate_body(req, schemas.volume_attachments.CREATE)

A failure raises ``ValidationError`` (400) with Nova's message, e.g.
``Invalid input for field/attribute volumeId. Value: x. 'x' is not a
'uuid'``.  Formats are checked as Nova checks them (``uuid`` with
oslo.utils' ``is_uuid_like``, ``name`` as printable characters without
leading or trailing whitespace, ``ipv4``/``ipv6``, ``date-time``,
``base64``, ``regex``).  No string may hold a NUL or a lone surrogate
(PostgreSQL and the drivers refuse them: ``volattach.wsgi.storable``).
Numbers may come as numeric strings where the schema
allows strings (``"min_count": "2"``), as in Nova; in a body, an integer
must fit a database integer column (signed 32 bits).

Query strings validate as ``{name: [values]}``; where the schema allows
additional properties (before 2.75 / 2.102), unknown parameters are dropped
from the result instead of refused.
"""
import base64
import binascii
import functools
import ipaddress
import re
import unicodedata

import jsonschema
from oslo_utils import timeutils

from volattach import exception
from volattach.wsgi import storable
from volattach.wsgi import validation as shared_validation

NAME_REASON = "printable characters. Can not start or end with whitespace."
NAME_LEADING_TRAILING_REASON = ("printable characters with at least one non "
                                "space character")


class InvalidName(Exception):
    def __init__(self, reason):
        super().__init__("An invalid 'name' value was provided. The name must "
                         "be: %s" % reason)


FORMAT_CHECKER = jsonschema.FormatChecker(formats=())


FORMAT_CHECKER.checks("uuid")(shared_validation.is_uuid)


@FORMAT_CHECKER.checks("ipv4")
def _ipv4(instance):
    if not isinstance(instance, str):
        return True
    try:
        ipaddress.IPv4Address(instance)
    except ValueError:
        return False
    return True


@FORMAT_CHECKER.checks("ipv6")
def _ipv6(instance):
    if not isinstance(instance, str):
        return True
    try:
        ipaddress.IPv6Address(instance)
    except ValueError:
        return False
    return True


@FORMAT_CHECKER.checks("date-time")
def _date_time(instance):
    if not isinstance(instance, str):
        return True
    try:
        timeutils.parse_isotime(instance)
    except ValueError:
        return False
    return True


@FORMAT_CHECKER.checks("base64")
def _base64(instance):
    if not isinstance(instance, str):
        return True
    try:
        base64.b64decode(instance.encode("utf-8"))
    except (binascii.Error, ValueError):
        return False
    return True


@FORMAT_CHECKER.checks("regex")
def _regex(instance):
    if not isinstance(instance, str):
        return True
    if not instance:
        return False
    try:
        re.compile(instance)
    except re.error:
        return False
    return True


def _printable(char):
    category = unicodedata.category(char)
    return not category.startswith("C") and (
        not category.startswith("Z") or category == "Zs")


def _visible(char):
    return _printable(char) and unicodedata.category(char) != "Zs"


@FORMAT_CHECKER.checks("name", raises=InvalidName)
def _name(instance):
    if (isinstance(instance, str) and all(_printable(c) for c in instance)
            and (not instance or (_visible(instance[0])
                                  and _visible(instance[-1])))):
        return True
    raise InvalidName(NAME_REASON)


AZ_NAME_REASON = ("printable characters except :.Can not start or end with "
                  "whitespace.")


@FORMAT_CHECKER.checks("az_name", raises=InvalidName)
def _az_name(instance):
    """Nova's availability zone names: a name without ``:``."""
    if (isinstance(instance, str) and ":" not in instance
            and all(_printable(c) for c in instance)
            and (not instance or (_visible(instance[0])
                                  and _visible(instance[-1])))):
        return True
    raise InvalidName(AZ_NAME_REASON)


def _number_from_str(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return float(value)
        except (TypeError, ValueError):
            return None


_BASE = jsonschema.Draft202012Validator


def _minimum(validator, minimum, instance, schema):
    number = _number_from_str(instance)
    if number is None:
        return
    yield from _BASE.VALIDATORS["minimum"](validator, minimum, number, schema)


def _maximum(validator, maximum, instance, schema):
    number = _number_from_str(instance)
    if number is None:
        return
    yield from _BASE.VALIDATORS["maximum"](validator, maximum, number, schema)


@functools.lru_cache(maxsize=None)
def _anchored(pattern):
    """``pattern`` compiled so that a final ``$`` means the end of the
    string: Python's ``$`` also matches before a final newline, which let
    a lone newline through ``^[0-9]*$`` (such a limit answered 500)."""
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + "\\Z"
    return re.compile(pattern)


def _pattern(validator, pattern, instance, schema):
    if validator.is_type(instance, "string") and not _anchored(
            pattern).search(instance):
        yield jsonschema.ValidationError(
            "%r does not match %r" % (instance, pattern))


_Validator = jsonschema.validators.extend(
    _BASE, {"minimum": _minimum, "maximum": _maximum, "pattern": _pattern})
# Bodies: integers also within a database integer column.  Query strings
# keep any size (a huge ``limit`` is capped, as in Nova).
_BodyValidator = jsonschema.validators.extend(
    _Validator, {"type": storable.type_in_range(_BASE.VALIDATORS["type"])})

_validators = shared_validation.ValidatorCache(
    lambda schema: _BodyValidator(schema, format_checker=FORMAT_CHECKER))
_query_validators = shared_validation.ValidatorCache(
    lambda schema: _Validator(schema, format_checker=FORMAT_CHECKER))


def select(version, versioned):
    """The schema of ``versioned`` that applies at ``version`` (or None)."""
    chosen = None
    for start, schema in versioned:
        if version.matches(start):
            chosen = schema
    return chosen


def validate(schema, target, is_body=True):
    """Validate ``target``; raise ValidationError with Nova's message.
    A string (key or value) that a database cannot store (a NUL, a lone
    surrogate) is refused first, whatever the schema says
    (``volattach.wsgi.storable``)."""
    storable.check_document(target, is_body)
    try:
        validators = _validators if is_body else _query_validators
        error = next(validators.get(schema).iter_errors(target), None)
    except TypeError as exc:
        raise exception.ValidationError(message=str(exc))
    if error is None:
        return
    if isinstance(error.cause, InvalidName):
        detail = str(error.cause)
    else:
        detail = shared_validation.error_detail(error, is_body)
    raise exception.ValidationError(message=detail)


def validate_body(version, versioned, body):
    """Validate a request body against the schema of ``version``."""
    schema = select(version, versioned)
    if schema is not None:
        validate(schema, body)
    return body


# id(schema) -> schema, for the schemas that accept an empty query (the
# schema is kept so that its id cannot be reused by another object)
_empty_query_valid = {}


def validate_query(version, versioned, query):
    """Validate ``{name: [values]}``; drop unknown names where allowed."""
    schema = select(version, versioned)
    if schema is None:
        return query
    if not query:
        # most requests have no query string: whether a schema accepts an
        # empty one never changes, so ask jsonschema once per schema
        if _empty_query_valid.get(id(schema)) is not schema:
            validate(schema, query, is_body=False)
            _empty_query_valid[id(schema)] = schema
        return query
    validate(schema, query, is_body=False)
    if schema.get("additionalProperties", True) is not False:
        known = schema.get("properties", {})
        patterns = [re.compile(p) for p in schema.get("patternProperties", {})]
        query = {name: values for name, values in query.items()
                 if name in known or any(p.match(name) for p in patterns)}
    return query
