"""The HTTP under the volume client (``volume_client.cinder.VolumeAPI``): urllib3.

One ``Transport`` per client holds a ``urllib3.PoolManager`` (a
``ProxyManager`` per proxy when the environment's ``https_proxy`` /
``http_proxy`` apply to a host and ``no_proxy`` does not exclude it).
urllib3 tests a pooled connection for a close by the server before reusing
it; it never retries here (``retries=False``): the client decides, from
``Transport.request``'s exceptions, whether a request can be sent again:

- ``NotSent``: the connection could not be made (refused, unreachable,
  connect timeout, TLS handshake): nothing reached the server;
- ``MaybeSent``: the request was written, or may have been, and no answer
  came (reset, closed, read timeout): the server may have acted on it.

TLS and the timeout come from the keystoneauth options of ``[cinder]``
(``cafile``, ``certfile``, ``keyfile``, ``insecure``, ``timeout``,
``tls_ciphers``, ``tls_min_version``); without ``cafile`` the system's
trust store verifies the server.  Compressed answers are decoded.

The pools' connections (urllib3's, through ``ConnectionCls``) send a
request's head and its body in one ``send``: urllib3 sends them apart, which
costs a system call and, on the server, often a second wake-up to read the
body (``benchmarks/README.md``, 2026-11-25).

An origin (``http://host:port``) registered with ``serve_in_process`` is
not sent over a socket: its requests go to the WSGI application of this
process that listens there (``volume_client.in_process``, volattach-all).
"""
import json
import os
import socket
import ssl
import threading
import urllib.parse
import urllib.request
import weakref

import urllib3
from urllib3 import connection as u3_connection
from urllib3 import connectionpool as u3_connectionpool
from urllib3 import exceptions as u3_exc

_TLS_VERSIONS = {"1.0": ssl.TLSVersion.TLSv1, "1.1": ssl.TLSVersion.TLSv1_1,
                 "1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}


class NotSent(Exception):
    """No byte of the request reached the server."""


class MaybeSent(Exception):
    """The request may have reached the server; no answer came back."""


class Response:
    """What the client reads of an answer."""

    __slots__ = ("status_code", "reason", "headers", "content", "url")

    def __init__(self, url, status_code, reason, headers, content):
        self.url = url
        self.status_code = status_code
        self.reason = reason
        self.headers = headers
        self.content = content

    @property
    def text(self):
        return self.content.decode("utf-8", "replace")

    def json(self):
        return json.loads(self.content)


def _keepalive_socket_options():
    """keystoneauth's TCP keep-alive settings, on top of urllib3's."""
    options = list(urllib3.connection.HTTPConnection.default_socket_options)
    options.append((socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1))
    for name, value in (("TCP_KEEPIDLE", 60), ("TCP_KEEPCNT", 4),
                        ("TCP_KEEPINTVL", 15)):
        if hasattr(socket, name):
            options.append((socket.IPPROTO_TCP, getattr(socket, name), value))
    return options


def tls_context(group):
    """An SSLContext from the keystoneauth session options of ``group``."""
    context = urllib3.util.ssl_.create_urllib3_context()
    minimum = getattr(group, "tls_min_version", None)
    if minimum:
        context.minimum_version = _TLS_VERSIONS[
            str(minimum).lower().replace("tlsv", "")]
    ciphers = getattr(group, "tls_ciphers", None)
    if ciphers:
        context.set_ciphers(ciphers)
    if group.insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context.verify_mode = ssl.CERT_REQUIRED
        context.check_hostname = True
        if group.cafile:
            if os.path.isdir(group.cafile):
                context.load_verify_locations(capath=group.cafile)
            else:
                context.load_verify_locations(cafile=group.cafile)
        else:
            context.load_default_certs()
    if group.certfile:
        context.load_cert_chain(group.certfile, group.keyfile or None)
    return context


class _OneSendRequest:
    """A urllib3 connection that sends the head of a request with a bytes
    body together with that body (urllib3 sends the body as one chunk right
    after the head)."""

    _hold_head = False
    _held_head = None

    def request(self, method, url, body=None, headers=None, **kwargs):
        self._hold_head = body.__class__ is bytes and len(body) > 0
        try:
            super().request(method, url, body=body, headers=headers, **kwargs)
        except BaseException:
            self._held_head = None
            raise
        finally:
            self._hold_head = False
        if self._held_head is not None:    # no body was sent after all
            head, self._held_head = self._held_head, None
            super().send(head)

    def send(self, data):
        if self._hold_head:
            # http.client sends the whole head at once: keep it for the body
            self._hold_head = False
            self._held_head = data
            return
        if self._held_head is not None:
            data, self._held_head = self._held_head + data, None
        super().send(data)


class _HTTPConnection(_OneSendRequest, u3_connection.HTTPConnection):
    pass


class _HTTPSConnection(_OneSendRequest, u3_connection.HTTPSConnection):
    pass


class _HTTPConnectionPool(u3_connectionpool.HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSConnectionPool(u3_connectionpool.HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


_POOL_CLASSES = {"http": _HTTPConnectionPool, "https": _HTTPSConnectionPool}

# No retries, no redirects (``Transport.request``): one Retry for every
# call (urllib3 builds one per call from ``retries=False`` otherwise).
_NO_RETRIES = urllib3.Retry(total=False, redirect=False)

_TRANSPORTS = weakref.WeakSet()

# origin ("http://host:port") -> in_process.App serving it in this process
_IN_PROCESS = {}


def serve_in_process(origin, app):
    """Send the requests to ``origin`` to ``app`` (``in_process.App``)."""
    _IN_PROCESS[origin] = app


def stop_serving_in_process(origin):
    _IN_PROCESS.pop(origin, None)


class Transport:
    """Pooled keep-alive connections to the volume service."""

    def __init__(self, group, maxsize=10):
        timeout = group.timeout
        self.timeout = urllib3.Timeout(connect=timeout, read=timeout)
        self._pool_kw = {
            "maxsize": maxsize, "block": False, "retries": False,
            "timeout": self.timeout,
            "socket_options": _keepalive_socket_options(),
        }
        self._group = group
        self._tls = None
        self._managers = {}   # (proxy URL or None, scheme) -> manager
        self._by_origin = {}  # (scheme, host:port) -> (pool, direct)
        self._lock = threading.Lock()
        _TRANSPORTS.add(self)

    def _pool(self, url):
        """The connection pool of ``url``'s origin, and the request target
        to send it: the path for a direct connection, the URL for a
        proxy."""
        scheme, netloc = url.split("/", 3)[0:3:2]
        key = (scheme, netloc)
        try:
            pool, direct = self._by_origin[key]
        except KeyError:
            with self._lock:
                manager = self._new_manager(url)
                pool = manager.connection_from_url(url)
                # through a proxy, http goes in absolute form; https is
                # tunnelled (CONNECT) and sends the path
                direct = not (isinstance(manager, urllib3.ProxyManager)
                              and scheme == "http:")
                self._by_origin[key] = (pool, direct)
        if direct:
            return pool, url[len(scheme) + len(netloc) + 2:] or "/"
        return pool, url

    def _new_manager(self, url):
        # The environment is read once per origin: it does not change
        # while a daemon runs, and scanning it costs more than a request.
        parts = urllib.parse.urlsplit(url)
        proxy = None
        if not urllib.request.proxy_bypass_environment(parts.hostname or ""):
            proxy = urllib.request.getproxies_environment().get(parts.scheme)
        manager = self._managers.get((proxy, parts.scheme))
        if manager is None:
            kwargs = dict(self._pool_kw)
            if parts.scheme == "https":
                if self._tls is None:
                    self._tls = tls_context(self._group)
                kwargs["ssl_context"] = self._tls
            if proxy:
                manager = urllib3.ProxyManager(proxy, **kwargs)
            else:
                manager = urllib3.PoolManager(**kwargs)
            manager.pool_classes_by_scheme = _POOL_CLASSES
            self._managers[(proxy, parts.scheme)] = manager
        return manager

    def request(self, method, url, headers, body=None):
        """One exchange; a ``Response``, or ``NotSent`` / ``MaybeSent``."""
        if _IN_PROCESS:
            app = _IN_PROCESS.get(url[:url.find("/", 8)])
            if app is not None:
                return app.request(method, url, headers, body)
        pool, target = self._pool(url)
        try:
            raw = pool.urlopen(
                method, target, body=body, headers=headers, redirect=False,
                retries=_NO_RETRIES, assert_same_host=False,
                preload_content=True, decode_content=True)
        except (u3_exc.NewConnectionError, u3_exc.ConnectTimeoutError,
                u3_exc.NameResolutionError) as exc:
            raise NotSent("Unable to establish connection to %s: %s"
                          % (url, exc)) from exc
        except u3_exc.SSLError as exc:
            raise NotSent("SSL error for %s: %s" % (url, exc)) from exc
        except (u3_exc.ProtocolError, u3_exc.ReadTimeoutError,
                u3_exc.DecodeError, u3_exc.HTTPError, OSError) as exc:
            raise MaybeSent("No answer from %s: %s" % (url, exc)) from exc
        return Response(url, raw.status, raw.reason, raw.headers, raw.data)

    def clear(self):
        """Close every pooled connection (after a fork: the parent's)."""
        for manager in list(self._managers.values()):
            manager.clear()


os.register_at_fork(after_in_child=lambda: [
    transport.clear() for transport in list(_TRANSPORTS)])
