"""api.validation: a pattern's final ``$`` is the end of the string.

Python's ``$`` also matches before a final newline: ``"\\n"`` passed
``^[0-9]*$`` and a GET of os-volume_attachments with ``limit=%0A``
answered 500 (found by the fuzz soak)."""
import pytest

from volattach.api import microversions
from volattach.api import validation
from volattach.api.schemas import parameter_types
from volattach.api.schemas import volume_attachments as schemas
from volattach import exception


@pytest.mark.parametrize("value", ["\n", "5\n", "12\n\n"])
def test_a_trailing_newline_does_not_match(value):
    with pytest.raises(exception.ValidationError):
        validation.validate(parameter_types.non_negative_integer, value)


@pytest.mark.parametrize("value", ["0", "5", "12"])
def test_digits_still_match(value):
    validation.validate(parameter_types.non_negative_integer, value)


def test_an_escaped_dollar_stays_literal():
    validation.validate({"type": "string", "pattern": "^a\\$"}, "a$")
    with pytest.raises(exception.ValidationError):
        validation.validate({"type": "string", "pattern": "^a\\$"}, "a")


def test_volume_attachment_list_refuses_a_newline_limit():
    with pytest.raises(exception.ValidationError):
        validation.validate_query(microversions.Version(2, 1),
                                  schemas.INDEX_QUERY, {"limit": ["\n"]})
