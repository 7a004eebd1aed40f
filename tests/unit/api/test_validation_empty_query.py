"""api.validation.validate_query: an empty query string is checked by
jsonschema once per schema, with the same outcome every time."""
import pytest

from volattach.api import microversions
from volattach.api import validation
from volattach import exception

V21 = microversions.Version(2, 1)


def _counting(monkeypatch):
    calls = []
    real = validation.validate

    def validate(schema, target, is_body=True):
        calls.append(target)
        return real(schema, target, is_body)
    monkeypatch.setattr(validation, "validate", validate)
    return calls


def test_empty_query_accepted_once_then_from_memory(monkeypatch):
    schema = {"type": "object", "properties": {"limit": {"type": "array"}},
              "additionalProperties": False}
    calls = _counting(monkeypatch)
    for _ in range(3):
        assert validation.validate_query(V21, (("2.1", schema),), {}) == {}
    assert calls == [{}]
    # a non-empty query is always validated
    with pytest.raises(exception.ValidationError):
        validation.validate_query(V21, (("2.1", schema),), {"marker": ["x"]})
    assert len(calls) == 2


def test_empty_query_refused_every_time(monkeypatch):
    schema = {"type": "object", "required": ["host"]}
    calls = _counting(monkeypatch)
    for _ in range(2):
        with pytest.raises(exception.ValidationError):
            validation.validate_query(V21, (("2.1", schema),), {})
    assert len(calls) == 2
