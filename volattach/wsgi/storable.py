"""Input that one of our databases cannot take, refused at the edge of both
HTTP services, the same on SQLite and on PostgreSQL.

PostgreSQL refuses a NUL character (U+0000) in any text parameter (psycopg2
raises ``ValueError`` before the query is sent), and neither database
driver can encode a lone surrogate (U+D800..U+DFFF, which JSON's
``"\\ud800"`` escape yields) as UTF-8; SQLite takes the first and stores
it.  So such a string is refused before it reaches a query:

- ``unstorable_path(value)``: where in a JSON document (keys and values)
  the first such string is, or None; ``check_document``, which the
  JSON-schema validation of both services calls on every body and query,
  raises the 400 with the service's ``Invalid input for field/attribute
  ...`` message;
- ``PathAndQuery``: falcon middleware of both services.  A query string
  with a NUL in a name or value is a 400 (``Invalid input for query
  parameters <name>``), before any handler parses it; a path segment with
  one is the 404 of that resource (an id that no stored object can have),
  built by the service's table ``{route parameter: factory(value, params,
  req)}``.  Percent-encoded bytes that are not UTF-8 reach us as U+FFFD,
  never as surrogates, so only the NUL needs checking there (and, with
  ``integer_id``, a number beyond an integer id column);
- ``type_in_range``: the ``type`` keyword of the body validators of both
  services: where a schema allows an integer, an integer (or a string of
  digits) outside a PostgreSQL ``integer`` column (signed 32 bits) fails
  as ``maximum``/``minimum`` would (SQLite takes 64 bits, and Python
  integers beyond them overflow its driver).
"""
import re
import urllib.parse

import jsonschema

from volattach import exception

NUL = "\x00"
INT_MIN, INT_MAX = -2 ** 31, 2 ** 31 - 1
_INTEGER_TEXT = re.compile(r"\s*[-+]?[0-9]+\s*\Z")


def bad_text(value):
    """Whether the string ``value`` holds a NUL or a lone surrogate."""
    if NUL in value:
        return True
    if value.isascii():
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def printable(value):
    """``value`` as it can go into a response (lone surrogates escaped)."""
    return str(value).encode("utf-8", "backslashreplace").decode("utf-8")


def describe(value):
    """The reason a ``bad_text`` value is refused."""
    if NUL in value:
        return "%r contains a NUL character" % value
    return "%r contains a lone surrogate" % value


def unstorable_path(document, path=()):
    """The path (a tuple) of the first string (key or value) of
    ``document`` that ``bad_text`` refuses, None when there is none."""
    if isinstance(document, str):
        return path if bad_text(document) else None
    if isinstance(document, dict):
        for key, value in document.items():
            if isinstance(key, str) and bad_text(key):
                return path + (key,)
            found = unstorable_path(value, path + (key,))
            if found is not None:
                return found
    elif isinstance(document, list):
        for index, value in enumerate(document):
            found = unstorable_path(value, path + (index,))
            if found is not None:
                return found
    return None


def check_document(document, is_body=True):
    """Raise ``ValidationError`` (400) with the services' message when
    ``document`` holds a string the databases cannot take."""
    path = unstorable_path(document)
    if path is None:
        return
    value = document
    for key in path:
        value = value[key]
    if not isinstance(value, str):     # the key itself is the bad string
        value = path[-1]
    if not path:
        raise exception.ValidationError(message=describe(value))
    if is_body:
        raise exception.ValidationError(
            message="Invalid input for field/attribute %s. Value: %s. %s"
                    % (printable(path[-1]), printable(value),
                       describe(value)))
    raise exception.ValidationError(
        message="Invalid input for query parameters %s. Value: %s. %s"
                % (printable(path[0]), printable(value), describe(value)))


def type_in_range(base):
    """A ``type`` keyword function: ``base``'s check, then the range of
    an integer where the schema's type allows integers."""
    def check(validator, types, instance, schema):
        errors = list(base(validator, types, instance, schema))
        if errors:
            yield from errors
            return
        allowed = [types] if isinstance(types, str) else types
        if "integer" not in allowed or isinstance(instance, bool):
            return
        if isinstance(instance, int):
            number = instance
        elif isinstance(instance, float) and instance.is_integer():
            number = instance          # 1e300 is an integer to jsonschema
        elif isinstance(instance, str) and _INTEGER_TEXT.match(instance):
            number = int(instance)
        else:
            return
        if number > INT_MAX:
            yield jsonschema.ValidationError(
                "%s is greater than the maximum of %d" % (instance, INT_MAX))
        elif number < INT_MIN:
            yield jsonschema.ValidationError(
                "%s is less than the minimum of %d" % (instance, INT_MIN))
    return check


def integer_id(value):
    """Whether ``value`` may be the id of an integer primary key: an
    integer text within a database integer column (anything else is no
    stored row, and a Python integer beyond 64 bits overflows SQLite's
    driver)."""
    if not _INTEGER_TEXT.match(value):
        return True        # not a number: the handler's own 404
    return INT_MIN <= int(value) <= INT_MAX


class PathAndQuery:
    """falcon middleware (see the module docstring).  ``not_found``:
    ``{route parameter: factory(value, params, req) -> NotFound}``; a
    parameter not in it gets ``exception.NotFound``.  ``valid``: ``{route
    parameter: predicate}``, more that no stored id can be (e.g. a number
    beyond the id column).  List it after the middleware that takes
    ``project_id`` out of the route parameters."""

    def __init__(self, not_found, valid=None):
        self.not_found = not_found
        self.valid = valid or {}

    def process_request(self, req, resp):
        if "%00" not in req.query_string and NUL not in req.query_string:
            return
        for name, value in urllib.parse.parse_qsl(req.query_string,
                                                  keep_blank_values=True):
            for one in (name, value):
                if NUL in one:
                    raise exception.ValidationError(
                        message="Invalid input for query parameters %s. "
                                "Value: %s. %s" % (name, one, describe(one)))

    def process_resource(self, req, resp, resource, params):
        for name, value in params.items():
            if not isinstance(value, str):
                continue
            check = self.valid.get(name)
            if NUL in value or (check is not None and not check(value)):
                factory = self.not_found.get(name)
                if factory is None:
                    raise exception.NotFound()
                raise factory(value, params, req)
