"""Request-body validation with jsonschema, with Cinder's error messages.

``validate(schema, body)`` raises ``exception.ValidationError`` whose
message is exactly what Cinder answers, e.g. ``Invalid input for
field/attribute connector. Value: {}. {} should be non-empty``: the last
element of the failing path, the failing value, jsonschema's message.
"""
import jsonschema

from volattach import exception
from volattach.wsgi import storable
from volattach.wsgi import validation as shared_validation

_FORMAT_CHECKER = jsonschema.FormatChecker()
_FORMAT_CHECKER.checks("uuid")(shared_validation.is_uuid)


def _build(schema):
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    # an integer must fit a database integer column (Cinder's DB_MAX_INT)
    cls = jsonschema.validators.extend(
        cls, {"type": storable.type_in_range(cls.VALIDATORS["type"])})
    return cls(schema, format_checker=_FORMAT_CHECKER)


_VALIDATORS = shared_validation.ValidatorCache(_build)


def validate(schema, body):
    """Check ``body`` against ``schema``; the first error is raised.  A
    string (key or value) that a database cannot store (a NUL, a lone
    surrogate) is refused whatever the schema says
    (``volattach.wsgi.storable``)."""
    storable.check_document(body)
    for error in _VALIDATORS.get(schema).iter_errors(body):
        raise exception.ValidationError(shared_validation.error_detail(error))
