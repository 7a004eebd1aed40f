"""volattach.wsgi.storable: the strings and integers that a database
cannot take, found in documents, route ids and schemas."""
import jsonschema
import pytest

from volattach import exception
from volattach.wsgi import storable


@pytest.mark.parametrize("document,path", [
    ({"a": "ok", "b": ["x", "y\x00"]}, ("b", 1)),
    ({"volume": {"name": "\ud800"}}, ("volume", "name")),
    ({"metadata": {"k\x00": "v"}}, ("metadata", "k\x00")),
    ("\x00", ()),
    ({"a": 1, "b": None, "c": ["é", "\u200b", "\U0001f600"]}, None),
])
def test_unstorable_path(document, path):
    assert storable.unstorable_path(document) == path


def test_check_document_names_the_field_and_escapes_surrogates():
    with pytest.raises(exception.ValidationError) as raised:
        storable.check_document({"volume": {"name": "a\udfff"}})
    message = raised.value.format_message()
    assert message.startswith(
        "Invalid input for field/attribute name. Value: a\\udfff.")
    message.encode("utf-8")           # renderable
    with pytest.raises(exception.ValidationError) as raised:
        storable.check_document({"marker": ["\x00"]}, is_body=False)
    assert raised.value.format_message().startswith(
        "Invalid input for query parameters marker.")
    storable.check_document({"name": "fine"})


@pytest.mark.parametrize("value,ok", [
    (2 ** 31 - 1, True), (2 ** 31, False), (-2 ** 31, True),
    (-2 ** 31 - 1, False), ("2147483648", False), (" 12 ", True),
    ("99999999999999999999", False), ("abc", True), (True, True),
    (1.5, True), (1.5e300, False), (2.0, True)])
def test_type_in_range(value, ok):
    base = jsonschema.Draft202012Validator
    cls = jsonschema.validators.extend(
        base, {"type": storable.type_in_range(base.VALIDATORS["type"])})
    validator = cls({"type": ["integer", "string", "boolean", "number"]})
    assert validator.is_valid(value) is ok
    # a schema without integers keeps any digits
    assert cls({"type": "string"}).is_valid("99999999999999999999")


@pytest.mark.parametrize("value,ok", [
    ("12", True), ("2147483648", False), ("-2147483649", False),
    ("abc", True), ("99999999999999999999999", False)])
def test_integer_id(value, ok):
    assert storable.integer_id(value) is ok
