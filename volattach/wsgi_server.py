"""Serving WSGI applications over HTTP: gunicorn for the daemons, a small
threaded HTTP/1.1 server for everything that shares one process.

``volattach-api`` and ``volattach-volume`` both use ``run``: gunicorn's own
command line is equally fine (``gunicorn -c etc/volattach/gunicorn.conf.py
api.wsgi:application``).  Each worker builds its own RPC transport and
database engine after the fork (see ``post_fork``); the master holds neither.
The worker is always gthread, even with one thread: gunicorn's sync worker
closes the connection after every response, and the compute API and the
conductor make several calls per attachment to the volume service.

``serve_in_thread`` (``volattach-all``, the volume service inside it, the
functional tests) serves an application from a thread of this process
(gunicorn would fork, and the in-memory transport does not cross processes).
wsgiref did that before, but it speaks HTTP/1.0 and closes every connection:
a TCP connection, a thread and a slow header parser per request.  Here:

- one thread per connection (``socketserver.ThreadingMixIn``) serving the
  requests that come on it in turn until the client closes it, asks to
  (``Connection: close``, or HTTP/1.0 without ``Connection: keep-alive``),
  leaves it idle for ``keepalive_timeout`` seconds, or the server shuts
  down;
- the WSGI environ is wsgiref's (PATH_INFO percent-decoded as ISO-8859-1,
  ``CONTENT_TYPE`` defaulting to ``text/plain``, repeated headers joined
  with commas); ``wsgi.input`` stops at the end of the body (a chunked
  request body is decoded first), and what the application leaves unread is
  discarded before the next request;
- the response keeps the application's ``Content-Length``, gets one when
  the application returns a list (computed from it, and sent in one
  ``sendall`` with the head), else is chunked for HTTP/1.1 clients, or ends
  by closing the connection for HTTP/1.0 ones;
- ``shutdown()`` stops accepting, closes the idle connections at once and
  lets requests in progress finish (answered with ``Connection: close``).
"""
import email.utils
import io
import platform
import socket
import socketserver
import sys
import threading
import time
import urllib.parse
from wsgiref import simple_server
from wsgiref import util as wsgiref_util

from gunicorn.app.base import BaseApplication
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

SERVER_SOFTWARE = "volattach-wsgi/1.1 %s/%s" % (
    platform.python_implementation(), platform.python_version())
MAX_LINE = 65536            # request line and each header line, as http.server
MAX_HEADERS = 100           # as http.client
MAX_CHUNKED_BODY = 64 << 20  # a chunked request body is read into memory
MAX_DISCARD = 1 << 20       # unread body bytes skipped to keep the connection
INTERNAL_ERROR_BODY = (b"A server error occurred.  Please contact the "
                       b"administrator.")   # wsgiref's words
_NO_BODY_STATUSES = (204, 304)


# -- gunicorn -----------------------------------------------------------------

class _Application(BaseApplication):

    def __init__(self, app_uri, options):
        self.app_uri = app_uri
        self.options = options
        super().__init__()

    def load_config(self):
        for key, value in self.options.items():
            if key in self.cfg.settings and value is not None:
                self.cfg.set(key, value)

    def load(self):
        from gunicorn.util import import_app
        return import_app(self.app_uri)


def gunicorn_options(bind, workers=1, threads=1, timeout=120):
    """The gunicorn settings of volattach's daemons."""
    return {
        "bind": bind,
        "workers": workers,
        "threads": threads,
        # gthread even for one thread: it keeps connections alive (for
        # ``keepalive`` seconds, gunicorn's default 2), the sync worker
        # closes each one after its response.
        "worker_class": "gthread",
        "timeout": timeout,
        "graceful_timeout": 10,
        "accesslog": None,
        "preload_app": False,
        # gunicorn 27's control socket is one path per user: two daemons
        # (api and volume) on one host would fight over it.
        "control_socket_disable": True,
    }


def run(app_uri, bind, workers=1, threads=1, timeout=120, extra=None):
    """Run gunicorn in the foreground until it is told to stop."""
    options = gunicorn_options(bind, workers, threads, timeout)
    options.update(extra or {})
    _Application(app_uri, options).run()


# -- the in-process server: requests ------------------------------------------

class _HTTPError(Exception):
    """A request the server answers itself before closing the connection."""

    def __init__(self, status, detail):
        super().__init__(detail)
        self.status = status
        self.detail = detail


class _ClientGone(Exception):
    """Writing to the client failed: nothing more can be sent."""


class _Request:
    """The head of one request, as read from the connection."""

    __slots__ = ("method", "target", "version", "http11", "headers",
                 "_fields")

    def __init__(self, method, target, version, http11, headers):
        self.method = method
        self.target = target
        self.version = version
        self.http11 = http11
        self.headers = headers   # [(name, value)] in order, latin-1 text
        self._fields = {}        # lower-case name -> [values]
        for name, value in headers:
            self._fields.setdefault(name.lower(), []).append(value)

    def values(self, lower_name):
        return self._fields.get(lower_name, ())

    def tokens(self, lower_name):
        """The comma-separated tokens of a header, lower case."""
        return {token.strip().lower() for value in self.values(lower_name)
                for token in value.split(",")}

    def wants_keep_alive(self):
        connection = self.tokens("connection")
        if self.http11:
            return "close" not in connection
        return "keep-alive" in connection


def parse_request_line(line):
    """``(method, target, version, http11)`` of a request line (bytes)."""
    parts = line.decode("latin-1").split()
    if len(parts) != 3:
        raise _HTTPError(400, "Bad request line %r" % line[:100])
    method, target, version = parts
    if not version.startswith("HTTP/"):
        raise _HTTPError(400, "Bad request version %r" % version[:20])
    major, dot, minor = version[5:].partition(".")
    if not (dot and major.isdigit() and minor.isdigit()
            and major.isascii() and minor.isascii()):
        raise _HTTPError(400, "Bad request version %r" % version[:20])
    if int(major) != 1:
        raise _HTTPError(505, "HTTP version %s not supported" % version[:20])
    return method, target, version, int(minor) >= 1


def read_headers(rfile):
    """The header lines up to the empty one, as ``[(name, value)]``."""
    headers = []
    while True:
        line = rfile.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise _HTTPError(431, "Header line too long")
        if line in (b"\r\n", b"\n"):
            return headers
        if not line:
            raise _HTTPError(400, "Connection closed inside the headers")
        if len(headers) >= MAX_HEADERS:
            raise _HTTPError(431, "Too many headers")
        if line[:1] in (b" ", b"\t"):
            # RFC 9112 5.2 lets a server reject obsolete line folding.
            raise _HTTPError(400, "Folded header line")
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip():
            raise _HTTPError(400, "Bad header line %r" % line[:100])
        headers.append((name.decode("latin-1"),
                        value.strip().decode("latin-1")))


def content_length(request):
    """The request's Content-Length as an int (None without one)."""
    values = set(request.values("content-length"))
    if not values:
        return None
    if len(values) > 1:
        raise _HTTPError(400, "Conflicting Content-Length headers")
    value = values.pop()
    if not (value.isascii() and value.isdigit()):
        raise _HTTPError(400, "Bad Content-Length %r" % value[:40])
    return int(value)


def read_chunked(rfile, limit=MAX_CHUNKED_BODY):
    """Decode a chunked request body (trailers are read and dropped)."""
    parts = []
    total = 0
    while True:
        line = rfile.readline(MAX_LINE + 1)
        size_text = line.split(b";", 1)[0].strip()
        if (len(line) > MAX_LINE or not line.endswith(b"\n") or not size_text
                or size_text.strip(b"0123456789abcdefABCDEF")):
            raise _HTTPError(400, "Bad chunk size line")
        size = int(size_text, 16)
        if size == 0:
            break
        total += size
        if total > limit:
            raise _HTTPError(413, "Chunked request body over %d bytes" % limit)
        data = rfile.read(size)
        if len(data) != size or rfile.readline(3) not in (b"\r\n", b"\n"):
            raise _HTTPError(400, "Truncated or malformed chunk")
        parts.append(data)
    while True:   # trailer fields, up to the empty line
        line = rfile.readline(MAX_LINE + 1)
        if line in (b"\r\n", b"\n", b""):
            return b"".join(parts)
        if len(line) > MAX_LINE:
            raise _HTTPError(400, "Trailer line too long")


class BoundedInput:
    """``wsgi.input``: the request body and never a byte past it, so that
    the next request on a kept-alive connection stays intact."""

    def __init__(self, stream, length):
        self._stream = stream
        self._left = length
        self.truncated = False   # the client closed before the end

    def read(self, size=-1):
        if size is None or size < 0 or size > self._left:
            size = self._left
        if size <= 0:
            return b""
        data = self._stream.read(size)
        self._left -= len(data)
        if len(data) < size:
            self.truncated = True
            self._left = 0
        return data

    def readline(self, size=-1):
        if size is None or size < 0 or size > self._left:
            size = self._left
        if size <= 0:
            return b""
        data = self._stream.readline(size)
        self._left -= len(data)
        if not data or (len(data) < size and not data.endswith(b"\n")):
            self.truncated = True
            self._left = 0
        return data

    def readlines(self, hint=-1):
        lines, total = [], 0
        for line in self:
            lines.append(line)
            total += len(line)
            if 0 < hint <= total:
                break
        return lines

    def __iter__(self):
        while True:
            line = self.readline()
            if not line:
                return
            yield line

    def discard_rest(self, limit=MAX_DISCARD):
        """Skip what the application left unread; False when the
        connection cannot serve another request (too much left, or the
        client closed early)."""
        if self._left > limit:
            return False
        while self._left > 0 and not self.truncated:
            self.read(min(self._left, 65536))
        return not self.truncated


# -- the in-process server: responses -----------------------------------------

_date_cache = (0, "")   # (second, its Date value), replaced as a whole


def http_date():
    """The Date header's value, formatted once per second."""
    global _date_cache
    now = int(time.time())
    second, value = _date_cache
    if second != now:
        value = email.utils.formatdate(now, usegmt=True)
        _date_cache = (now, value)
    return value


class _Response:
    """``start_response``, ``write`` and the framing of one response."""

    def __init__(self, handler, request, keep_alive):
        self.handler = handler
        self.sock = handler.connection
        self.head_request = request.method == "HEAD"
        self.http11 = request.http11
        self.keep_alive = keep_alive
        self.status = None
        self.headers = None
        self.head_sent = False
        self.no_body = False
        self.chunked = False
        self.length = None   # the declared Content-Length
        self.sent = 0        # body bytes sent

    @property
    def code(self):
        return int(self.status[:3]) if self.status else 0

    def start_response(self, status, headers, exc_info=None):
        if exc_info is not None:
            try:
                if self.head_sent:
                    raise exc_info[1].with_traceback(exc_info[2])
            finally:
                exc_info = None
        elif self.status is not None:
            raise AssertionError("start_response called twice")
        if not isinstance(status, str) or not status[:3].isdigit():
            raise AssertionError("Bad status %r" % (status,))
        self.status = status
        self.headers = list(headers)
        return self.write

    def _head(self, body_length):
        """The status line and headers (bytes); decides the framing.
        ``body_length`` is the whole body's length when known."""
        code = self.code
        self.length = None   # (again: a failed attempt may have set them)
        self.chunked = False
        self.no_body = (self.head_request or code in _NO_BODY_STATUSES
                        or 100 <= code < 200)
        lines = ["HTTP/1.1 %s\r\n" % self.status]
        seen = set()
        for name, value in self.headers:
            lower = name.lower()
            if lower == "content-length":
                self.length = int(value)
            elif lower == "connection":
                if "close" in value.lower():
                    self.keep_alive = False
                continue   # written below, from what the server decided
            elif lower in ("transfer-encoding", "keep-alive"):
                continue   # hop-by-hop: the framing is the server's
            seen.add(lower)
            lines.append("%s: %s\r\n" % (name, value))
        if self.length is None and not self.no_body:
            if body_length is not None:
                self.length = body_length
                lines.append("Content-Length: %d\r\n" % body_length)
            elif self.http11:
                self.chunked = True
                lines.append("Transfer-Encoding: chunked\r\n")
            else:
                self.keep_alive = False   # HTTP/1.0: the close ends the body
        if self.handler.server.closing:
            self.keep_alive = False
        if "date" not in seen:
            lines.append("Date: %s\r\n" % http_date())
        if "server" not in seen:
            lines.append("Server: %s\r\n" % SERVER_SOFTWARE)
        if not self.keep_alive:
            lines.append("Connection: close\r\n")
        elif not self.http11:
            lines.append("Connection: keep-alive\r\n")
        lines.append("\r\n")
        self.head_sent = True
        return "".join(lines).encode("latin-1")

    def _send(self, head, data):
        if self.no_body:
            data = b""
        elif self.length is not None:
            room = self.length - self.sent
            if len(data) > room:   # more than declared: cut, then close
                data = data[:room]
                self.keep_alive = False
            self.sent += len(data)
        elif self.chunked and data:
            data = b"%x\r\n%s\r\n" % (len(data), data)
        self._sendall(head + data if head else data)

    def _sendall(self, payload):
        if payload:
            try:
                self.sock.sendall(payload)
            except OSError as exc:
                raise _ClientGone(exc)

    def write(self, data):
        """The WSGI ``write`` callable (also used for each body chunk)."""
        if self.status is None:
            raise AssertionError("write() before start_response()")
        if not isinstance(data, bytes):
            data = bytes(data)
        self._send(b"" if self.head_sent else self._head(None), data)

    def send_whole(self, body):
        """Head and whole body in one ``sendall``."""
        self._send(self._head(len(body)), body)

    def finish(self):
        if not self.head_sent:
            self._send(self._head(0), b"")
        if self.chunked:
            self._sendall(b"0\r\n\r\n")   # the last chunk
        elif (self.length is not None and not self.no_body
              and self.sent < self.length):
            self.keep_alive = False   # fewer bytes than declared

    def run(self, app, environ):
        """Call the application and send its response (a 500 if it fails
        before its headers are out; a cut connection if after)."""
        try:
            result = app(environ, self.start_response)
            try:
                if type(result) in (list, tuple) and not self.head_sent:
                    if self.status is None:
                        raise AssertionError("no start_response() call")
                    self.send_whole(b"".join(result))
                else:
                    for data in result:
                        if data:
                            self.write(data)
                    if self.status is None:
                        raise AssertionError("no start_response() call")
                    self.finish()
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        except _ClientGone:
            raise
        except Exception:
            LOG.exception("Error serving %s %s", environ.get("REQUEST_METHOD"),
                          environ.get("PATH_INFO"))
            self.keep_alive = False
            if not self.head_sent:
                self.status = "500 Internal Server Error"
                self.headers = [("Content-Type", "text/plain")]
                self.send_whole(INTERNAL_ERROR_BODY)


# -- the in-process server: connections ---------------------------------------

class KeepAliveHandler(socketserver.StreamRequestHandler):
    """Serves the requests of one connection, one after the other."""

    # Whole responses go out in one sendall: no small writes for Nagle's
    # algorithm to delay.
    disable_nagle_algorithm = True

    def setup(self):
        self.timeout = self.server.keepalive_timeout
        super().setup()
        self.idle = False
        self.server.track(self)

    def finish(self):
        self.server.untrack(self)
        try:
            super().finish()
        except OSError:
            pass

    def handle(self):
        try:
            while self.handle_one_request():
                pass
        except (_ClientGone, OSError):
            pass   # the client went away, stalled, or the server aborted it

    def abort(self):
        """Wake a read blocked on this idle connection and end it."""
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _next_request_line(self):
        """The next request line, or None when the connection should end."""
        server = self.server
        with server.connections_lock:
            if server.closing:
                return None
            self.idle = True
        try:
            line = self.rfile.readline(MAX_LINE + 1)
            while line in (b"\r\n", b"\n"):   # RFC 9112 2.2: ignore them
                line = self.rfile.readline(MAX_LINE + 1)
        except OSError:   # idle timeout, reset, or aborted by shutdown
            line = b""
        finally:
            with server.connections_lock:
                self.idle = False
                closing = server.closing
        if closing or not line:
            return None
        return line

    def handle_one_request(self):
        """Serve one request; True when the connection can serve another."""
        line = self._next_request_line()
        if line is None:
            return False
        request = None
        try:
            if len(line) > MAX_LINE:
                raise _HTTPError(414, "Request line too long")
            method, target, version, http11 = parse_request_line(line)
            request = _Request(method, target, version, http11,
                               read_headers(self.rfile))
            environ = self.environ(request)
            body = self._body(request, environ)
        except _HTTPError as exc:
            self._send_error(exc, line)
            return False
        environ["wsgi.input"] = body
        response = _Response(self, request, request.wants_keep_alive())
        response.run(self.server.get_app(), environ)
        self._log(line, response.code, response.sent)
        return response.keep_alive and body.discard_rest()

    def environ(self, request):
        """The WSGI environ of ``request`` (the body is added later)."""
        env = self.server.base_environ.copy()
        path, _, query = request.target.partition("?")
        env["REQUEST_METHOD"] = request.method
        env["PATH_INFO"] = urllib.parse.unquote(path, "iso-8859-1")
        env["QUERY_STRING"] = query
        env["SERVER_PROTOCOL"] = request.version
        env["REMOTE_ADDR"] = self.client_address[0]
        content_type = request.values("content-type")
        env["CONTENT_TYPE"] = content_type[0] if content_type else "text/plain"
        for name, value in request.headers:
            key = name.replace("-", "_").upper()
            if key in env:
                continue   # CONTENT_TYPE, CONTENT_LENGTH (as wsgiref)
            key = "HTTP_" + key
            if key in env:
                env[key] += "," + value
            else:
                env[key] = value
        return env

    def _body(self, request, environ):
        """``wsgi.input`` for the request (sets ``CONTENT_LENGTH``)."""
        encodings = request.tokens("transfer-encoding")
        length = content_length(request)
        if encodings:
            if encodings != {"chunked"}:
                raise _HTTPError(501, "Transfer-Encoding %s not supported"
                                 % ", ".join(sorted(encodings)))
            if length is not None:
                raise _HTTPError(400, "Both Content-Length and chunked")
        elif not length:
            if length == 0:
                environ["CONTENT_LENGTH"] = "0"
            return BoundedInput(self.rfile, 0)
        if request.http11 and "100-continue" in request.tokens("expect"):
            self._sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        if length is None:
            data = read_chunked(self.rfile)
            environ["CONTENT_LENGTH"] = str(len(data))
            return BoundedInput(io.BytesIO(data), len(data))
        environ["CONTENT_LENGTH"] = str(length)
        return BoundedInput(self.rfile, length)

    def _sendall(self, data):
        try:
            self.connection.sendall(data)
        except OSError as exc:
            raise _ClientGone(exc)

    def _send_error(self, error, line):
        body = ("%s\n" % error.detail).encode("latin-1", "replace")
        reason = _REASONS.get(error.status, "Error")
        head = ("HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
                "Content-Length: %d\r\nDate: %s\r\nServer: %s\r\n"
                "Connection: close\r\n\r\n" % (
                    error.status, reason, len(body), http_date(),
                    SERVER_SOFTWARE))
        self._log(line, error.status, len(body))
        self._sendall(head.encode("latin-1") + body)

    def _log(self, line, code, size):
        log = self.server.access_log
        if log is not None and log.isEnabledFor(logging.DEBUG):
            log.debug('%s - "%s" %s %s', self.client_address[0],
                      line.decode("latin-1").rstrip("\r\n")[:200], code, size)


_REASONS = {400: "Bad Request", 413: "Content Too Large",
            414: "URI Too Long", 431: "Request Header Fields Too Large",
            501: "Not Implemented", 505: "HTTP Version Not Supported"}


class WSGIServer(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    """A threaded HTTP/1.1 keep-alive WSGI server (see the module doc).

    ``access_log``: a logger given each request at DEBUG (None: silent).
    """

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    keepalive_timeout = 60.0
    access_log = None

    def __init__(self, server_address, handler_class=KeepAliveHandler,
                 bind_and_activate=True):
        self.connections = set()
        self.connections_lock = threading.Lock()
        self.closing = False
        super().__init__(server_address, handler_class, bind_and_activate)

    def setup_environ(self):
        super().setup_environ()
        self.base_environ.update({
            "SERVER_SOFTWARE": SERVER_SOFTWARE,
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
            "wsgi.file_wrapper": wsgiref_util.FileWrapper,
        })

    def track(self, handler):
        with self.connections_lock:
            self.connections.add(handler)

    def untrack(self, handler):
        with self.connections_lock:
            self.connections.discard(handler)

    def close_idle_connections(self):
        """From now on serve no new request; end the idle connections (the
        busy ones end after their response)."""
        with self.connections_lock:
            self.closing = True
            idle = [handler for handler in self.connections if handler.idle]
            # Aborted under the lock: a handler cannot go from idle to busy
            # in between (it checks ``closing`` under the same lock).
            for handler in idle:
                handler.abort()

    def shutdown(self):
        """Stop ``serve_forever`` and the idle kept-alive connections."""
        super().shutdown()
        self.close_idle_connections()

    def server_close(self):
        self.close_idle_connections()
        super().server_close()

    def handle_error(self, request, client_address):
        LOG.exception("Error on the connection from %s", client_address[0])


def make_server(host, port, app, server_class=WSGIServer,
                handler_class=KeepAliveHandler):
    """A bound, listening server for ``app`` (port 0: any free port)."""
    server = server_class((host, port), handler_class)
    server.set_app(app)
    return server


def serve_in_thread(app, host, port, name="wsgi", server_class=WSGIServer,
                    poll_interval=0.5, access_log=None):
    """Serve ``app`` from a daemon thread of this process.

    For volattach-all and functional tests, where every role shares one
    process (gunicorn would fork, and the in-memory transport does not cross
    processes).  Returns the server (``server.thread`` is its thread); call
    ``server.shutdown()`` then ``server.server_close()`` to stop it.
    """
    server = make_server(host, port, app, server_class=server_class)
    if access_log is not None:
        server.access_log = access_log
    thread = threading.Thread(target=server.serve_forever,
                              kwargs={"poll_interval": poll_interval},
                              name=name, daemon=True)
    thread.start()
    server.thread = thread
    return server
