"""Input that one of our databases cannot take, refused at the edge of both
HTTP services, the same on SQLite and on PostgreSQL.

PostgreSQL refuses a NUL character (U+0000) in any text parameter (psycopg2
raises ``ValueError`` before the query is sent), and neither database
driver can encode a lone surrogate (U+D800..U+DFFF, which JSON's
``"\\ud800"`` escape yields) as UTF-8; SQLite takes the first and stores
it.  So such a string is refused before it reaches a query:

- ``unstorable_path(value)``: where in a JSON document (keys and values)
  the first such string is, or None; the JSON-schema validation of both
  services calls it on every body and query (400 with the service's
  ``Invalid input for field/attribute ...`` message);
- ``PathAndQuery``: falcon middleware of both services.  A query string
  with a NUL in a name or value is a 400 (``Invalid input for query
  parameters <name>``), before any handler parses it; a path segment with
  one is the 404 of that resource (an id that no stored object can have),
  built by the service's table ``{route parameter: factory(value, params,
  req)}``.  Percent-encoded bytes that are not UTF-8 reach us as U+FFFD,
  never as surrogates, so only the NUL needs checking there.
"""
import urllib.parse

from volattach import exception

NUL = "\x00"


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


class PathAndQuery:
    """falcon middleware (see the module docstring).  ``not_found``:
    ``{route parameter: factory(value, params, req) -> NotFound}``; a
    parameter not in it gets ``exception.NotFound``.  List it after the
    middleware that takes ``project_id`` out of the route parameters."""

    def __init__(self, not_found):
        self.not_found = not_found

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
            if isinstance(value, str) and NUL in value:
                factory = self.not_found.get(name)
                if factory is None:
                    raise exception.NotFound()
                raise factory(value, params, req)
