"""Request body cap and JSON nesting bound, for both HTTP services.

``read_body(environ, limit)`` reads the whole body of a request (at most
``limit`` bytes, ``[oslo_middleware] max_request_body_size`` as in Nova)
into memory and puts it back in ``wsgi.input``; a body longer than the cap,
announced or chunked, raises ``BodyTooLarge`` (413 ``overLimit``, whose
message names the limit: ``too_large_message``).  ``too_deep(raw)`` says
whether a JSON text nests arrays and objects deeper than ``MAX_DEPTH``: such
a body is refused with 400 before any parser recurses into it (Python's
json and jsonschema recurse once per level and would raise RecursionError
on the deepest bodies that fit under the cap).
"""
import io
import re

from oslo_config import cfg

# Nova's and Cinder's default (oslo.middleware's sizelimit): 112 KiB.
DEFAULT_MAX_BODY = 114688
# Far deeper than any request of either API, far below the interpreter's
# recursion limit.
MAX_DEPTH = 100

# One limit, the same on both APIs and named in every 413 (the in-process
# server's transport guard answers with the same body, volattach.embedded_server)
TOO_LARGE_MESSAGE = ("Request is too large: the body limit is %d bytes "
                     "([oslo_middleware] max_request_body_size).")
TOO_DEEP_MESSAGE = "Malformed request body"

opts = [
    cfg.IntOpt("max_request_body_size", default=DEFAULT_MAX_BODY, min=1,
               deprecated_name="osapi_max_request_body_size",
               deprecated_group="DEFAULT",
               help="The maximum body size for each request, in bytes: "
                    "a longer body is refused with 413."),
]
GROUP = "oslo_middleware"


def register_opts(conf):
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return [(GROUP, opts)]


class BodyTooLarge(Exception):
    pass


def _chunked(environ):
    return "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()


def read_body(environ, limit):
    """The body of the request (bytes), left readable again in
    ``wsgi.input``; raises BodyTooLarge above ``limit`` bytes."""
    length = environ.get("CONTENT_LENGTH") or ""
    if length.strip().isdigit():
        if int(length) > limit:
            raise BodyTooLarge()
        if int(length) == 0:
            return b""
    elif not _chunked(environ):
        return b""
    raw = environ["wsgi.input"].read(limit + 1)
    if len(raw) > limit:
        raise BodyTooLarge()
    environ["wsgi.input"] = io.BytesIO(raw)
    if _chunked(environ):
        environ["CONTENT_LENGTH"] = str(len(raw))
    return raw


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_BRACKET = re.compile(rb"[\[\]{}]")


def too_deep(raw, max_depth=MAX_DEPTH):
    """True when the JSON text ``raw`` nests deeper than ``max_depth``."""
    if raw.count(b"[") + raw.count(b"{") <= max_depth:
        return False
    depth = 0
    for match in _BRACKET.finditer(_STRING.sub(b"", raw)):
        if match.group() in (b"[", b"{"):
            depth += 1
            if depth > max_depth:
                return True
        else:
            depth -= 1
    return False


def too_large_message(limit):
    return TOO_LARGE_MESSAGE % limit


def check(environ, limit):
    """Read and check the body: None when acceptable, else (status,
    message) of the refusal (413 over the cap, 400 nested too deep)."""
    try:
        raw = read_body(environ, limit)
    except BodyTooLarge:
        return 413, too_large_message(limit)
    if raw and too_deep(raw):
        return 400, TOO_DEEP_MESSAGE
    return None
