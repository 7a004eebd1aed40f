"""Listening sockets, bound before anything else starts.

``volattach-all`` binds the compute API's and the volume service's sockets
first, then migrates, registers and starts its roles; ``volattach-api`` and
``volattach-volume`` bind theirs and hand them to gunicorn (``fd://``).  A
port that is taken is then one line naming the address and the option that
chose it, and nothing has started::

    volattach-all: cannot listen on 127.0.0.1:8774 ([api] listen/port): Address already in use
"""
import errno
import os
import socket


class ListenError(Exception):
    """An address the service cannot listen on; ``str()`` is the line for
    the operator (without the program name)."""

    def __init__(self, host, port, option, reason):
        self.host, self.port, self.option, self.reason = host, port, option, reason
        super().__init__("cannot listen on %s ([%s] listen/port): %s"
                         % (address(host, port), option, reason))


def address(host, port):
    """``host:port``, an IPv6 literal in brackets."""
    if ":" in host and not host.startswith("["):
        host = "[%s]" % host
    return "%s:%s" % (host, port)


def bind(host, port, option, backlog=1024, v6only=True):
    """A TCP socket bound to ``host``:``port`` and listening (port 0: any
    free port); ``option`` names the configuration group that chose the
    address (``api``, ``volume``).  Raises ``ListenError``."""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ListenError(host, port, option, exc.strerror) from None
    family, socktype, proto, _name, sockaddr = infos[0]
    sock = socket.socket(family, socktype, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY,
                            1 if v6only else 0)
        sock.bind(sockaddr)
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        reason = exc.strerror or os.strerror(exc.errno or errno.EINVAL)
        raise ListenError(host, port, option, reason) from None
    return sock


def loopback_url(host, port, path=""):
    """``http://host:port<path>`` for a client on this machine: a wildcard
    listen address (``0.0.0.0``, ``::``, empty) becomes loopback."""
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return "http://%s%s" % (address(host, port), path)
