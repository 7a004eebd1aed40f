"""Microversions of the volume API: the known range, named feature versions,
and the parsing of ``OpenStack-API-Version: volume X.Y``.

The range (3.0 to 3.71) is that of Cinder 29.  The named versions below are
the ones this service's handlers and views gate on; every other microversion
in the range is accepted and behaves like the nearest lower one.
"""
import functools
import re

from volattach.wsgi import microversion as shared_microversion

SERVICE_TYPE = "volume"
HEADER = shared_microversion.HEADER
LEGACY_HEADER = "OpenStack-Volume-microversion"


_VERSION_RE = re.compile(r"\s*([1-9]\d*)\.(0|[1-9]\d*)\s*")


class Version(tuple):
    """A comparable (major, minor) pair that prints as ``X.Y``."""

    def __new__(cls, major, minor):
        return super().__new__(cls, (int(major), int(minor)))

    def __str__(self):
        return "%d.%d" % self

    @classmethod
    def parse(cls, text):
        match = _VERSION_RE.fullmatch(text or "")
        if not match:
            raise ValueError(text)
        return cls(match.group(1), match.group(2))


MIN_VERSION = Version(3, 0)
MAX_VERSION = Version(3, 71)

# Named versions the service gates on, in ascending order.
GROUP_VOLUME = Version(3, 13)               # volume view: group_id
VOLUME_DETAIL_PROVIDER_ID = Version(3, 21)  # volume view: provider_id (admin)
NEW_ATTACH = Version(3, 27)                 # /attachments
VOLUME_EXTEND_INUSE = Version(3, 42)        # os-extend of an in-use volume
ATTACHMENT_COMPLETE = Version(3, 44)        # os-complete action
# volume view: shared_targets, service_uuid
SHARED_TARGETS = Version(3, 48)
ATTACHMENT_MODE = Version(3, 54)            # attachment create: mode
VOLUME_CLUSTER_NAME = Version(3, 61)        # volume view: cluster_name (admin)
VOLUME_TYPE_ID_IN_VOLUME_DETAIL = Version(3, 63)  # volume view: volume_type_id
USE_QUOTA = Version(3, 65)                  # volume view: consumes_quota


class InvalidVersionString(ValueError):
    """The header is not ``X.Y`` nor ``latest`` (HTTP 400)."""


class VersionNotAcceptable(ValueError):
    """The header names a version outside MIN_VERSION..MAX_VERSION (406)."""


def _parse(text):
    try:
        return Version.parse(text)
    except ValueError:
        raise InvalidVersionString(
            "API Version String %s is of invalid format. Must be of format "
            "MajorNum.MinorNum." % text)


def _not_acceptable(version, min_version, max_version):
    return VersionNotAcceptable(
        "Version %s is not supported by the API. Minimum is %s and "
        "maximum is %s." % (version, min_version, max_version))


NEGOTIATOR = shared_microversion.Negotiator(
    SERVICE_TYPE, LEGACY_HEADER, MIN_VERSION, MAX_VERSION, parse=_parse,
    not_acceptable=_not_acceptable, lenient_latest=True)


def negotiate(headers):
    """The request's microversion from its headers (a dict-like).

    Missing header: MIN_VERSION.  ``latest``: MAX_VERSION.
    """
    folded = {name.lower(): value for name, value in headers.items()}
    return negotiate_header_values(folded.get(HEADER.lower()),
                                   folded.get(LEGACY_HEADER.lower()))


def negotiate_header_values(standard, legacy):
    """The microversion of a request whose ``OpenStack-API-Version`` and
    legacy headers have these values (None: absent); cached."""
    return NEGOTIATOR.from_values(standard, legacy)


@functools.lru_cache(maxsize=None)
def response_header_value(version):
    return NEGOTIATOR.response_value(version)
