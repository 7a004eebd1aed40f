"""JSON-schema validation pieces shared by the two HTTP services.

- ``ValidatorCache``: one jsonschema validator per schema object, built by
  the service's factory (its validator class and format checker) on first
  use; schemas are module constants, so the cache stays small.
- ``is_uuid``: the ``uuid`` format as Nova and Cinder check it (oslo.utils'
  ``is_uuid_like``; non-strings are left to the ``type`` keyword).
- ``error_detail``: the message Nova and Cinder give for a failed check,
  ``Invalid input for field/attribute <name>. Value: <value>. <reason>``
  (``query parameters`` for query strings), or jsonschema's message alone
  when the failure is at the top of the document.
"""
from oslo_utils import uuidutils


class ValidatorCache:
    """Validators by schema, built by ``factory(schema)`` once each."""

    def __init__(self, factory):
        self._factory = factory
        # id(schema) -> (schema, validator); the schema is kept so that its
        # id cannot be reused by another object
        self._validators = {}

    def get(self, schema):
        entry = self._validators.get(id(schema))
        if entry is None or entry[0] is not schema:
            entry = (schema, self._factory(schema))
            self._validators[id(schema)] = entry
        return entry[1]

    def __len__(self):
        return len(self._validators)


def is_uuid(instance):
    """The ``uuid`` format check."""
    if not isinstance(instance, str):
        return True
    return uuidutils.is_uuid_like(instance)


def error_detail(error, is_body=True):
    """The user-facing message of a jsonschema ``ValidationError``."""
    if len(error.path) > 0:
        if is_body:
            return ("Invalid input for field/attribute %s. Value: %s. %s"
                    % (error.path.pop(), error.instance, error.message))
        return ("Invalid input for query parameters %s. Value: %s. %s"
                % (error.path.popleft(), error.instance, error.message))
    return error.message
