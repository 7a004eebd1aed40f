"""Serving a WSGI application from a thread of this process, with waitress.

For ``volattach-all`` (the compute API and the volume service in one
process) and the functional tests: gunicorn would fork, and the in-process
message bus does not cross processes.  The daemons (``volattach-api``,
``volattach-volume``) run gunicorn instead (``volattach.wsgi_server``).

waitress reads and parses request heads in one event-loop thread and runs
the application in a pool of ``[wsgi] threads`` threads, so a slow or idle
client holds a socket, never a thread.  On top of waitress's own checks
(header names are tokens, CRLF line ends inside the head, header names with
an underscore dropped, ``Content-Length`` digits only, head and body size
caps answered 431/413) this module adds:

- waitress's own refusals answer in the APIs' fault format (``ErrorTask``:
  JSON ``badRequest`` for a control character in a header, ``overLimit``
  naming ``[oslo_middleware] max_request_body_size`` for a body over
  ``[wsgi] max_request_body_size``);

- request heads must end in CRLF: a bare LF anywhere in the head answers 400
  at once (waitress alone would wait for a CRLF CRLF that never comes);
- the request target is origin-form (``/path``) or ``*``: an absolute-form
  target (``http://host/path``, what a client sends to a proxy) answers 400;
- a request head not complete ``[wsgi] header_timeout`` seconds after its
  first byte is cut off (the connection is closed), however slowly it
  trickles in; idle kept-alive connections close after
  ``[wsgi] keepalive_timeout``;
- at most ``[wsgi] max_connections`` connections are open at once (waitress
  stops accepting until one closes).

And three things waitress does per request that cost CPU for nothing here
(``benchmarks/README.md``, 2026-11-25):

- a 204 or 304 answer closed the connection (waitress closes every HTTP/1.1
  answer without ``Content-Length``, and drops that header from bodiless
  answers): the connection is kept, such an answer ends with its head
  (RFC 9112, 6.3);
- the head and the first body chunk went out in two ``send`` calls (two
  wake-ups of the client): they go out in one;
- each finished request woke the event loop through its wake-up pipe, so
  that the loop polled the connection for reading again: the connection
  stays polled for reading while its request runs
  (``channel_request_lookahead`` 1, which also notices a client that hangs
  up mid-request), and the wake-up is skipped when the loop has nothing to
  do for the connection (nothing left to send, not closing).
"""
import re
import threading
import time

from oslo_config import cfg
from oslo_log import log as logging
from waitress import adjustments
from waitress import channel as waitress_channel
from waitress import parser as waitress_parser
from waitress import server as waitress_server
from waitress import task as waitress_task
from waitress import utilities as waitress_utilities

from volattach import conf as volattach_conf

LOG = logging.getLogger(__name__)


_BARE_LF = re.compile(rb"(?<!\r)\n")


class RequestParser(waitress_parser.HTTPRequestParser):
    """waitress's parser, refusing bare LFs and absolute-form targets."""

    def received(self, data):
        if self.body_rcv is None and not self.completed:
            head = self.header_plus + data
            end = head.find(b"\r\n\r\n")
            if _BARE_LF.search(head if end < 0 else head[:end]):
                self.parse_header(b"GET / HTTP/1.0\r\n")
                self.error = waitress_utilities.BadRequest(
                    "Bare LF in the request head")
                self.completed = True
                self.connection_close = True
                return len(data)
        return super().received(data)

    def parse_header(self, header_plus):
        super().parse_header(header_plus)
        if self.proxy_scheme or self.proxy_netloc:
            raise waitress_parser.ParsingError(
                "Absolute-form request target refused")


# The channel whose request this thread is running (waitress pool threads).
_serving = threading.local()


class Task(waitress_task.WSGITask):
    """waitress's WSGI task: keeps the connection after a 204 or 304 and
    sends the head with the first body chunk."""

    _bodiless_keepalive = False

    def build_response_header(self):
        # waitress closes an HTTP/1.1 connection whose answer has no
        # Content-Length; a 1xx, 204 or 304 answer has none (the header is
        # dropped), yet its length is known: it ends with its head.
        self._bodiless_keepalive = (
            self.version == "1.1" and not self.has_body
            and not self.close_on_finish
            and self.request.headers.get("CONNECTION", "").lower() != "close")
        try:
            return super().build_response_header()
        finally:
            self._bodiless_keepalive = False

    def set_close_on_finish(self):
        if self._bodiless_keepalive:
            return      # the "no Content-Length" reason, for a bodiless answer
        super().set_close_on_finish()

    def write(self, data):
        if self.wrote_header:
            return super().write(data)
        # The first write sends the head: hold it, and whatever of ``data``
        # goes out with it, and send them together.
        channel = self.channel
        channel.held = []
        try:
            return super().write(data)
        finally:
            held, channel.held = channel.held, None
            if held:
                channel.write_soon(held[0] if len(held) == 1
                                   else b"".join(held))


class ErrorTask(waitress_task.ErrorTask):
    """waitress's answer to a request it refuses itself (a bad header, a
    body over its transport cap), in the APIs' fault format: JSON
    ``badRequest``, ``overLimit`` (naming the one body limit, ``[oslo_middleware]
    max_request_body_size``), ``computeFault`` for the rest."""

    def execute(self):
        import json
        from volattach.wsgi import body as wsgi_body
        from volattach.wsgi import faults as shared_faults
        error = self.request.error
        status = error.code
        if status == 413:
            message = wsgi_body.too_large_message(
                self.channel.server.body_limit)
        else:
            message = " ".join(str(error.body).split()) or error.reason
        body = json.dumps(shared_faults.fault_body(status, message)).encode()
        self.status = "%d %s" % (status, error.reason)
        self.response_headers.append(("Content-Type", "application/json"))
        self.set_close_on_finish()
        self.content_length = len(body)
        self.write(body)


class Channel(waitress_channel.HTTPChannel):
    """A connection; remembers when the request head now arriving began."""

    parser_class = RequestParser
    task_class = Task
    error_task_class = ErrorTask
    head_started = None
    # Output held by Task.write (the head and the first chunk), or None.
    held = None
    # What readable() last answered the event loop (None while it decides):
    # whether the loop polls this connection for reading.
    polled_for_read = None

    def write_soon(self, data):
        held = self.held
        if held is not None:
            if data.__class__ is bytes:
                held.append(data)
                return len(data)
            # anything else (a bytearray, a file wrapper) goes after what
            # is held
            self.held = None
            if held:
                super().write_soon(b"".join(held))
        return super().write_soon(data)

    def readable(self):
        self.polled_for_read = None
        readable = super().readable()
        self.polled_for_read = readable
        return readable

    def loop_has_nothing_to_do(self):
        """After this connection's request: whether the event loop already
        polls it for reading and has nothing to send nor close, so that
        waking it up would change nothing."""
        return bool(self.polled_for_read and not self.requests
                    and not self.total_outbufs_len and not self.will_close
                    and not self.close_when_flushed)

    def service(self):
        _serving.channel = self
        try:
            super().service()
        finally:
            _serving.channel = None

    def received(self, data):
        now = time.monotonic()
        if self.head_started is None and data:
            self.head_started = now
        before = self.request
        result = super().received(data)
        request = self.request
        if request is None or request.headers_finished:
            self.head_started = None
        elif before is not None and request is not before:
            self.head_started = now   # a pipelined request's head began
        return result

    def writable(self):
        # While a task runs, its thread sends its own output (waitress's
        # send_bytes is 1); the event loop takes over only past the high
        # watermark or once the task is done.  Without this the loop spins
        # on POLLOUT for as long as the task thread sits in send() or waits
        # for the GIL, holding the GIL itself.
        if (self.requests and not self.will_close
                and not self.close_when_flushed
                and self.total_outbufs_len <= self.adj.outbuf_high_watermark):
            return False
        return super().writable()


class Server(waitress_server.TcpWSGIServer):
    """One listening socket, its event loop thread and its threads."""

    channel_class = Channel
    header_timeout = 20.0
    # [oslo_middleware] max_request_body_size: what a 413 names
    body_limit = 114688
    thread = None
    name = "wsgi"

    @property
    def server_address(self):
        return (self.effective_host, self.port)

    @property
    def port(self):
        return int(self.effective_port)

    @property
    def url(self):
        host = self.effective_host
        if ":" in host:
            host = "[%s]" % host
        return "http://%s:%d" % (host, self.port)

    def pull_trigger(self):
        # waitress wakes the loop at the end of every request; skip it when
        # the loop would find nothing to do (see Channel).  Any other call
        # (a task flushing or waiting for room) finds a request running or
        # output pending, and wakes it.
        channel = getattr(_serving, "channel", None)
        if channel is not None and channel.loop_has_nothing_to_do():
            return
        super().pull_trigger()

    def maintenance(self, now):
        super().maintenance(now)
        cutoff = time.monotonic() - self.header_timeout
        for channel in list(self.active_channels.values()):
            started = channel.head_started
            if started is not None and started < cutoff:
                LOG.debug("%s: request head from %s not complete after "
                          "%.1f s, closing", self.name, channel.addr,
                          self.header_timeout)
                channel.will_close = True

    def shutdown(self, timeout=5.0):
        """Stop accepting, let running requests finish (up to ``timeout``
        seconds), close every connection and end the loop thread."""
        if self.thread is None:
            return
        self.task_dispatcher.shutdown(timeout=timeout)
        closed = threading.Event()

        def close_all():
            self.asyncore.close_all(self._map)
            closed.set()
        try:
            self.trigger.pull_trigger(close_all)
        except OSError as exc:
            # The wake-up pipe is already closed: poll() reported it
            # invalid and the loop closed it.  Emptying the map from here
            # ends the loop at its next turn (at most asyncore_loop_timeout).
            LOG.warning("%s: wake-up pipe unusable (%s), closing "
                        "connections from the caller", self.name, exc)
            close_all()
        self.thread.join(timeout)
        if self.thread.is_alive():
            LOG.warning("%s: event loop did not stop", self.name)
        self.thread = None

    def server_close(self):
        """Kept for callers of the standard-library servers' API."""
        self.shutdown()


def _adjustments(conf, host, port, sock=None):
    wsgi = conf.wsgi
    where = {"sockets": [sock]} if sock is not None else {"host": host,
                                                         "port": port}
    return adjustments.Adjustments(
        threads=wsgi.threads, **where,
        # waitress counts its listening socket and its wake-up pipe too
        connection_limit=wsgi.max_connections + 2,
        channel_timeout=int(max(1, wsgi.keepalive_timeout)),
        cleanup_interval=max(0.2, min(1.0, wsgi.header_timeout / 4)),
        asyncore_loop_timeout=1,
        max_request_body_size=wsgi.max_request_body_size,
        max_request_header_size=wsgi.max_request_header_size,
        ident="volattach", expose_tracebacks=False, asyncore_use_poll=True,
        # a connection stays polled for reading while its request runs, so
        # the end of a request need not wake the loop (Server.pull_trigger)
        channel_request_lookahead=1)


def _body_limit(conf):
    """``[oslo_middleware] max_request_body_size``: the limit a 413 names."""
    from volattach.wsgi import body as wsgi_body
    try:
        return conf.oslo_middleware.max_request_body_size
    except (cfg.NoSuchOptError, cfg.NoSuchGroupError):
        return wsgi_body.DEFAULT_MAX_BODY


def make_server(app, host, port, conf=None, name="wsgi", server_class=Server,
                sock=None):
    """A bound, listening server for ``app`` (port 0: any free port); run
    it with ``server.run()``.  ``sock``: a socket already bound and
    listening (``volattach.listen.bind``) to serve instead of binding
    ``host``:``port``."""
    if conf is None:
        conf = volattach_conf.CONF
    adj = _adjustments(conf, host, port, sock)
    if sock is not None:
        # what waitress's create_server does with adj.sockets
        server = server_class(
            app, map={}, _sock=sock, adj=adj, bind_socket=False,
            sockinfo=(sock.family, sock.type, sock.proto, sock.getsockname()))
    else:
        server = server_class(app, map={}, adj=adj, sockinfo=adj.listen[0])
    server.header_timeout = conf.wsgi.header_timeout
    server.body_limit = _body_limit(conf)
    server.name = name
    return server


def serve_in_thread(app, host, port, name="wsgi", conf=None,
                    server_class=Server, sock=None):
    """Serve ``app`` from a daemon thread of this process; returns the
    server (``server.thread``, ``server.port``, ``server.shutdown()``)."""
    server = make_server(app, host, port, conf=conf, name=name,
                         server_class=server_class, sock=sock)
    thread = threading.Thread(target=server.run, name=name, daemon=True)
    server.thread = thread
    thread.start()
    return server
