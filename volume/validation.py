"""Request-body validation with jsonschema, with Cinder's error messages.

``validate(schema, body)`` raises ``exception.ValidationError`` whose
message is exactly what Cinder answers, e.g. ``Invalid input for
field/attribute connector. Value: {}. {} should be non-empty``: the last
element of the failing path, the failing value, jsonschema's message.
"""
import jsonschema
from oslo_utils import uuidutils

from volattach import exception

_FORMAT_CHECKER = jsonschema.FormatChecker()


@_FORMAT_CHECKER.checks("uuid")
def _is_uuid(instance):
    if not isinstance(instance, str):
        return True
    return uuidutils.is_uuid_like(instance)


_VALIDATORS = {}


def _validator(schema):
    key = id(schema)
    validator = _VALIDATORS.get(key)
    if validator is None:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        validator = cls(schema, format_checker=_FORMAT_CHECKER)
        _VALIDATORS[key] = validator
    return validator


def validate(schema, body):
    """Check ``body`` against ``schema``; the first error is raised."""
    for error in _validator(schema).iter_errors(body):
        if len(error.path) > 0:
            detail = ("Invalid input for field/attribute %s. Value: %s. %s"
                      % (error.path.pop(), error.instance, error.message))
        else:
            detail = error.message
        raise exception.ValidationError(detail)
