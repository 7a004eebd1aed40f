"""The HTTP under the volume client (``volume.cinder.VolumeAPI``).

keystoneauth1 -> requests -> urllib3 costs 0.5-0.6 ms of CPU per call.  For
an endpoint reached directly, ``LeanEndpoint`` writes the same bytes on a
kept-alive ``http.client`` connection from a small pool (0.19 ms), and
``connection_errors`` raises its failures as keystoneauth would, so the
client's retry policy is unchanged.  Everything else (proxies, netrc,
cookies, redirects, keystoneauth's debug logging) goes through
keystoneauth and requests, whose ``requests_session`` reads the
environment once per host (``EnvCachingSession``).
"""
import collections
import datetime
import http.client
import json
import logging as std_logging
import os
import re
import socket
import ssl
import threading
import urllib.parse
import uuid
import weakref
import zlib

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import session as ks_session
import requests
import urllib3


class EnvCachingSession(requests.Session):
    """A requests.Session that reads the environment once per host.

    With ``trust_env`` (the default, kept: ``HTTP_PROXY``, ``NO_PROXY``,
    ``REQUESTS_CA_BUNDLE``... are honoured), requests scans the whole of
    ``os.environ`` twice on every request to find proxies: 150-180 us of
    the client's 700 us per call on a 2-core machine with 35 environment
    variables (more variables, more time).  A daemon's environment does not
    change while it runs, and the result only depends on the URL's scheme
    and host, so it is computed once per (scheme, host, settings) and
    reused.
    """

    _MAX_CACHED = 64   # hosts: a handful in practice

    def __init__(self):
        super().__init__()
        self._env_settings = {}

    def merge_environment_settings(self, url, proxies, stream, verify, cert):
        if not self.trust_env or proxies:   # explicit proxies: no cache
            return super().merge_environment_settings(url, proxies, stream,
                                                      verify, cert)
        key = (urllib.parse.urlsplit(url)[:2], stream, verify, cert)
        try:
            settings = self._env_settings.get(key)
        except TypeError:   # an unhashable setting
            return super().merge_environment_settings(url, proxies, stream,
                                                      verify, cert)
        if settings is None:
            settings = super().merge_environment_settings(url, {}, stream,
                                                          verify, cert)
            if len(self._env_settings) >= self._MAX_CACHED:
                self._env_settings.clear()
            self._env_settings[key] = settings
        # Copies: requests may add to the proxies of one request.
        return dict(settings, proxies=dict(settings["proxies"]))


def requests_session(conf, group="cinder"):
    """The requests.Session under the keystoneauth1 Session: what
    keystoneauth builds itself (TCP keep-alive adapter, TLS options of
    ``[cinder]``), with the environment read once per host."""
    session = EnvCachingSession()
    adapter = ks_session.TCPKeepAliveAdapter(
        tls_ciphers=conf[group].tls_ciphers,
        tls_min_version=conf[group].tls_min_version)
    for scheme in list(session.adapters):
        session.mount(scheme, adapter)
    return session


# -- the lean transport ----------------------------------------------------------
#
# keystoneauth1 -> requests -> urllib3 costs 0.5-0.6 ms of CPU per call
# (request preparation, hooks, cookie jar, adapters, pool, two response
# objects).  For an endpoint reached directly (no proxy, no netrc, no
# cookies) the same bytes are written on a kept-alive http.client
# connection taken from a small pool; the keystoneauth Session still supplies
# the auth plugin's headers, the TLS settings, the timeout and the
# User-Agent, and still carries everything else (proxies, debug logging of
# keystoneauth, timing collection, redirects).

REDIRECTS = (301, 302, 303, 305, 307, 308)
# A request that fails this way on a kept-alive connection, before any byte
# of answer, met a connection the server had closed while idle (urllib3
# avoids it by testing the socket before reuse): it is sent once more on a
# fresh connection.  Any other failure, or this one on a fresh connection,
# is reported as keystoneauth reported it, and the retry policy of
# _send_once decides.
_STALE_CONNECTION = (http.client.RemoteDisconnected, BrokenPipeError,
                     ConnectionResetError, ConnectionAbortedError)
_SAFE_TARGET = re.compile(r"[A-Za-z0-9\-._~/?=&]*")
# keystoneauth1.session logs as "keystoneauth.session" (its get_logger drops
# the 1): when that is at DEBUG, calls go through it for its request logs.
KEYSTONEAUTH_LOG = std_logging.getLogger("keystoneauth.session")


def _json_default(value):
    """What keystoneauth's JSON encoder adds to json's types."""
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError("%r is not JSON serializable" % (value,))


def encode_json(body):
    return json.dumps(body, default=_json_default).encode("ascii")


def request_target(url, params=None):
    """Path and query as requests writes them on the request line."""
    parts = urllib.parse.urlsplit(url)
    target = parts.path or "/"
    query = parts.query
    if params:
        encoded = requests.models.RequestEncodingMixin._encode_params(params)
        query = "%s&%s" % (query, encoded) if query else encoded
    if query:
        target += "?" + query
    if not _SAFE_TARGET.fullmatch(target):
        target = requests.utils.requote_uri(target)
    return target


class LeanResponse:
    """The parts of requests.Response that this module reads."""

    def __init__(self, url, status_code, reason, headers, content):
        self.url = url
        self.status_code = status_code
        self.reason = reason
        self.headers = headers      # http.client.HTTPMessage: case-insensitive
        self.content = content

    @property
    def text(self):
        encoding = requests.utils.get_encoding_from_headers(self.headers)
        return self.content.decode(encoding or "utf-8", errors="replace")

    def json(self):
        return json.loads(self.content)


def decode_content(headers, body):
    """Undo Content-Encoding gzip/deflate (requests asks for them)."""
    codings = [c.strip().lower() for c in
               headers.get("Content-Encoding", "").split(",") if c.strip()]
    for coding in reversed(codings):
        if coding in ("gzip", "x-gzip"):
            body = zlib.decompress(body, 16 + zlib.MAX_WBITS)
        elif coding == "deflate":
            try:
                body = zlib.decompress(body)
            except zlib.error:   # raw deflate, as some servers send it
                body = zlib.decompress(body, -zlib.MAX_WBITS)
        elif coding != "identity":
            break   # unknown: left as is, as urllib3 does
    return body


def _keepalive_options(sock):
    """keystoneauth's TCPKeepAliveAdapter socket options."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPIDLE", 60), ("TCP_KEEPCNT", 4),
                        ("TCP_KEEPINTVL", 15)):
        if hasattr(socket, name):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)


class _HTTPConnection(http.client.HTTPConnection):
    def connect(self):
        super().connect()
        _keepalive_options(self.sock)


class _HTTPSConnection(http.client.HTTPSConnection):
    def connect(self):
        super().connect()
        _keepalive_options(self.sock)


def tls_context(verify, cert, tls_ciphers=None, tls_min_version=None):
    """The SSLContext urllib3 would use under keystoneauth's adapter.

    ``verify``: False (``[cinder] insecure``), True (certifi's bundle) or
    a CA file or directory (``cafile``, or REQUESTS_CA_BUNDLE as requests
    reads it); ``cert``: a client certificate file or (cert, key).
    """
    if tls_ciphers or tls_min_version:
        context = ssl.create_default_context()
        if tls_min_version:
            context.minimum_version = ks_session._TLS_VERSION_MAP[
                tls_min_version]
        if tls_ciphers:
            context.set_ciphers(tls_ciphers)
    else:
        context = urllib3.util.ssl_.create_urllib3_context()
    if verify is False:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context.verify_mode = ssl.CERT_REQUIRED
        context.check_hostname = True
        bundle = (verify if isinstance(verify, str)
                  else requests.utils.DEFAULT_CA_BUNDLE_PATH)
        if os.path.isdir(bundle):
            context.load_verify_locations(capath=bundle)
        else:
            context.load_verify_locations(cafile=bundle)
    if cert:
        if isinstance(cert, (tuple, list)):
            context.load_cert_chain(cert[0], cert[1])
        else:
            context.load_cert_chain(cert)
    return context


class LeanEndpoint:
    """Kept-alive connections to one (scheme, host, port).

    An http.client connection serves one request at a time, so a thread
    takes an idle one (or opens one) for its exchange and puts it back
    after reading the whole answer; at most ``MAX_IDLE`` wait, as in
    requests' pool (deque append and pop are atomic: no lock).
    """

    MAX_IDLE = 10

    def __init__(self, scheme, netloc, timeout, context=None):
        self.scheme = scheme
        self.netloc = netloc
        self.timeout = timeout
        self.context = context
        self._idle = collections.deque()

    def forget_connections(self):
        """After fork: the parent's sockets are not ours to use."""
        self._idle = collections.deque()

    def _take(self):
        try:
            return self._idle.pop()   # the most recently used: still open
        except IndexError:
            pass
        if self.scheme == "https":
            return _HTTPSConnection(self.netloc, timeout=self.timeout,
                                    context=self.context)
        return _HTTPConnection(self.netloc, timeout=self.timeout)

    def _give_back(self, conn):
        if conn.sock is not None and len(self._idle) < self.MAX_IDLE:
            self._idle.append(conn)
        else:
            conn.close()

    def exchange(self, method, target, headers, body):
        """The http.client response and body of one request.  A request
        that fails on a kept-alive connection before any byte of answer
        (the server closed it while idle: it never saw the request) is sent
        again, once, on a fresh connection."""
        conn = self._take()
        reused = conn.sock is not None
        try:
            result = self._exchange_once(conn, method, target, headers, body)
        except _STALE_CONNECTION:
            if not reused:
                raise
            result = self._exchange_once(conn, method, target, headers, body)
        self._give_back(conn)
        return result

    @staticmethod
    def _exchange_once(conn, method, target, headers, body):
        try:
            conn.putrequest(method, target, skip_accept_encoding=True)
            for name, value in headers:
                conn.putheader(name, value)
            conn.endheaders(body)
            response = conn.getresponse()
        except BaseException:
            conn.close()
            raise
        try:
            content = response.read()
        except Exception as exc:
            conn.close()
            raise _BodyError(exc)
        except BaseException:
            conn.close()
            raise
        return response, content


class _BodyError(Exception):
    """The connection broke while the response body was read."""

    def __init__(self, cause):
        super().__init__(str(cause))
        self.cause = cause


def connection_errors(url, call):
    """``call()``, its failures raised as keystoneauth's Session raises
    them through requests (so the retry policy above is unchanged):
    timeouts ConnectTimeout, refused/reset/closed connections
    ConnectFailure, TLS failures SSLError, a body cut short
    UnknownConnectionError (except a timeout there: ConnectFailure)."""
    try:
        return call()
    except _BodyError as exc:
        if isinstance(exc.cause, (socket.timeout, TimeoutError)):
            raise ks_exc.ConnectFailure(
                "Unable to establish connection to %s: %s" % (url, exc.cause))
        raise ks_exc.UnknownConnectionError(
            "Unexpected exception for %s: %s" % (url, exc.cause), exc.cause)
    except ssl.SSLError as exc:
        raise ks_exc.SSLError(
            "SSL exception connecting to %s: %s" % (url, exc))
    except (socket.timeout, TimeoutError):
        raise ks_exc.ConnectTimeout("Request to %s timed out" % url)
    except (OSError, http.client.HTTPException) as exc:
        raise ks_exc.ConnectFailure(
            "Unable to establish connection to %s: %s" % (url, exc))


ENDPOINTS = weakref.WeakSet()
os.register_at_fork(after_in_child=lambda: [
    endpoint.forget_connections() for endpoint in list(ENDPOINTS)])
