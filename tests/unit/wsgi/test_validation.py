"""volattach.wsgi.validation: the validator cache and the messages."""
import jsonschema

from volattach.wsgi import validation

SCHEMA = {"type": "object",
          "properties": {"a": {"type": "object",
                               "properties": {"b": {"type": "integer"}}}}}


def _first_error(schema, instance):
    return next(jsonschema.Draft202012Validator(schema).iter_errors(instance))


def test_validators_are_built_once_per_schema_object():
    built = []

    def factory(schema):
        built.append(schema)
        return jsonschema.Draft202012Validator(schema)

    cache = validation.ValidatorCache(factory)
    assert cache.get(SCHEMA) is cache.get(SCHEMA)
    equal_copy = dict(SCHEMA)
    assert cache.get(equal_copy) is not cache.get(SCHEMA)
    assert built == [SCHEMA, equal_copy] and len(cache) == 2


def test_uuid_format():
    assert validation.is_uuid("4c5ef00b-4a9a-4de8-9a0b-7c0a3f7fa1f2")
    assert not validation.is_uuid("not-a-uuid")
    assert validation.is_uuid(42)  # left to the type keyword


def test_error_detail_names_the_last_field_or_first_query_parameter():
    error = _first_error(SCHEMA, {"a": {"b": "x"}})
    assert validation.error_detail(error) == (
        "Invalid input for field/attribute b. Value: x. 'x' is not of type "
        "'integer'")
    query_schema = {"type": "object",
                    "properties": {"limit": {"type": "array",
                                             "items": {"type": "integer"}}}}
    error = _first_error(query_schema, {"limit": ["x"]})
    assert validation.error_detail(error, is_body=False) == (
        "Invalid input for query parameters limit. Value: x. 'x' is not of "
        "type 'integer'")
    error = _first_error(SCHEMA, [])
    assert validation.error_detail(error) == "[] is not of type 'object'"
