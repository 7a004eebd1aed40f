"""Microversion negotiation shared by the two HTTP services.

A ``Negotiator`` is parameterized by what differs between the services: the
service type in ``OpenStack-API-Version: <service> X.Y``, the legacy header
name, the version range, the service's version class (its ``parse`` raises
the service's 400 exception) and the exception to raise for a version out of
range (406).  The rules are the same for both: the standard header wins over
the legacy one, no header means the minimum, ``latest`` the maximum.

Clients send a handful of distinct header values, and microversion_parse's
header folding costs more than the rest, so successful negotiations are
kept by header values (bounded; errors are not kept).
"""
import microversion_parse

HEADER = "OpenStack-API-Version"

_CACHE_MAX = 512


def environ_key(header):
    """The WSGI environ key of an HTTP header name."""
    return "HTTP_" + header.upper().replace("-", "_")


class Negotiator:
    """The microversion negotiation of one service.

    ``parse(text)`` turns ``X.Y`` into a version or raises the service's
    invalid-format exception; ``not_acceptable(version, min, max)`` builds
    the exception for an out-of-range version.  ``lenient_latest`` accepts
    ``latest`` in any case and with surrounding blanks.
    """

    def __init__(self, service_type, legacy_header, min_version, max_version,
                 parse, not_acceptable, lenient_latest=False):
        self.service_type = service_type
        self.legacy_header = legacy_header
        self.min_version = min_version
        self.max_version = max_version
        self._parse = parse
        self._not_acceptable = not_acceptable
        self._lenient_latest = lenient_latest
        self._environ_keys = (environ_key(HEADER), environ_key(legacy_header))
        self._cache = {}

    def negotiate(self, headers):
        """The version asked for by ``headers``, a dict of header names."""
        text = microversion_parse.get_version(
            headers, service_type=self.service_type,
            legacy_headers=[self.legacy_header])
        if text is None:
            return self.min_version
        if self._is_latest(text):
            return self.max_version
        version = self._parse(text)
        if not self.min_version <= version <= self.max_version:
            raise self._not_acceptable(version, self.min_version,
                                       self.max_version)
        return version

    def from_values(self, standard, legacy):
        """The version of a request whose standard and legacy headers have
        these values (None: absent); cached."""
        key = (standard, legacy)
        version = self._cache.get(key)
        if version is None:
            headers = {name: value for name, value
                       in ((HEADER, standard), (self.legacy_header, legacy))
                       if value is not None}
            version = self.negotiate(headers)
            if len(self._cache) < _CACHE_MAX:
                self._cache[key] = version
        return version

    def from_environ(self, environ):
        """The version of a WSGI request; cached like ``from_values``."""
        return self.from_values(*(environ.get(key)
                                  for key in self._environ_keys))

    def response_value(self, version):
        """The value of ``OpenStack-API-Version`` in responses."""
        return "%s %s" % (self.service_type, version)

    def _is_latest(self, text):
        if self._lenient_latest:
            return text.strip().lower() == "latest"
        return text == "latest"
