"""Microversions of the compute API: the one ordered list, and negotiation.

``VERSIONS`` holds every microversion from 2.1 to the newest this API
advertises, in order, each with a one-line note (the same notes, longer, are
in ``rest_api_version_history.rst``).  The newest is the last element: a new
microversion is one ``append`` here plus a section in the history file; the
guard test ``tests/unit/api/test_microversions.py`` checks they agree.

Negotiation follows Nova: ``OpenStack-API-Version: compute X.Y`` wins over
the legacy ``X-OpenStack-Nova-API-Version: X.Y``; no header means 2.1;
``latest`` means the newest; a malformed value is a 400; a value out of
range is a 406.  Handlers read the result from ``req.context.microversion``
(also ``req.context['microversion']``), a ``Version``::

    if req.context.microversion.matches("2.89"):   # 2.89 or newer
        ...
"""
import functools
import re

from volattach import exception
from volattach.wsgi import microversion as shared_microversion

SERVICE_TYPE = "compute"
HEADER = shared_microversion.HEADER
LEGACY_HEADER = "X-OpenStack-Nova-API-Version"
VARY = "%s, %s" % (HEADER, LEGACY_HEADER)

_NOTHING_HERE = "no change that this API serves"

# (version, note).  Ordered; the last element is the newest advertised.
VERSIONS = [
    ("2.1", "initial version (Nova's v2.0 API)"),
    ("2.2", "keypair type: " + _NOTHING_HERE),
    ("2.3", "servers: more OS-EXT-SRV-ATTR fields (admin), "
            "delete_on_termination in os-extended-volumes:volumes_attached"),
    ("2.4", "os-fixed-ips reserved: " + _NOTHING_HERE),
    ("2.5", "ip6 server filter for non-admins: " + _NOTHING_HERE),
    ("2.6", "remote consoles: " + _NOTHING_HERE),
    ("2.7", "flavor access check: " + _NOTHING_HERE),
    ("2.8", "mks console: " + _NOTHING_HERE),
    ("2.9", "servers: locked"),
    ("2.10", "keypairs of other users: " + _NOTHING_HERE),
    ("2.11", "os-services: forced_down"),
    ("2.12", "virtual interface net_id: " + _NOTHING_HERE),
    ("2.13", "os-server-groups: project_id and user_id"),
    ("2.14", "evacuate without onSharedStorage: " + _NOTHING_HERE),
    ("2.15", "os-server-groups: soft-affinity and soft-anti-affinity"),
    ("2.16", "servers: host_status (admin)"),
    ("2.17", "trigger_crash_dump: " + _NOTHING_HERE),
    ("2.18", "project_id optional in URLs (both forms are routed)"),
    ("2.19", "servers: description (create and views)"),
    ("2.20", "volume attach/detach allowed on shelved and shelved_offloaded "
             "servers (409 before)"),
    ("2.21", "os-instance-actions of deleted servers: " + _NOTHING_HERE),
    ("2.22", "force live migration complete: " + _NOTHING_HERE),
    ("2.23", "GET /servers/{id}/migrations (in-progress live migrations, "
             "admin); os-migrations: migration_type and links"),
    ("2.24", "abort live migration: " + _NOTHING_HERE),
    ("2.25", "block_migration auto: " + _NOTHING_HERE),
    ("2.26", "server tags: /servers/{id}/tags, tags in the views, "
            "tags/tags-any/not-tags/not-tags-any list filters"),
    ("2.27", "OpenStack-API-Version header (both headers are accepted at "
             "every version)"),
    ("2.28", "cpu_info object: " + _NOTHING_HERE),
    ("2.29", "evacuate force: " + _NOTHING_HERE),
    ("2.30", "live-migrate force: " + _NOTHING_HERE),
    ("2.31", "console auth tokens: " + _NOTHING_HERE),
    ("2.32", "block_device_mapping_v2 tag on server create (this version "
             "only, see 2.42)"),
    ("2.33", "block_device_mapping_v2 tag dropped again (hypervisor "
             "pagination otherwise)"),
    ("2.34", "async live-migration checks: " + _NOTHING_HERE),
    ("2.35", "keypairs pagination: " + _NOTHING_HERE),
    ("2.36", "proxy APIs deprecated; os-quota-sets and limits without "
            "the network quotas"),
    ("2.37", "server create: networks required, 'auto'/'none' or a list "
             "with uuid-formatted network ids"),
    ("2.38", "servers list: invalid status filter is a 400"),
    ("2.39", "image-metadata proxy deprecated; limits without "
             "maxImageMeta"),
    ("2.40", "os-simple-tenant-usage: limit, marker and next links"),
    ("2.41", "os-aggregates: uuid"),
    ("2.42", "block_device_mapping_v2 and networks tag on server create"),
    ("2.43", "os-hosts deprecated: " + _NOTHING_HERE),
    ("2.44", "network proxy actions deprecated: " + _NOTHING_HERE),
    ("2.45", "createImage body: " + _NOTHING_HERE),
    ("2.46", "X-OpenStack-Request-ID (sent at every version here)"),
    ("2.47", "servers: flavor embedded as a dict instead of a link"),
    ("2.48", "server diagnostics: " + _NOTHING_HERE),
    ("2.49", "tag on volume attach (POST os-volume_attachments)"),
    ("2.50", "quota class sets: " + _NOTHING_HERE),
    ("2.51", "instance action events shown to non-admins (without "
             "traceback); volume-extended external event"),
    ("2.52", "server tags on create"),
    ("2.53", "os-services: id is the service uuid; PUT and DELETE by uuid"),
    ("2.54", "rebuild: key_name"),
    ("2.55", "flavors: description"),
    ("2.56", "cold migrate to host: " + _NOTHING_HERE),
    ("2.57", "server create and rebuild: personality removed; rebuild: "
             "user_data (also in its reply); os-quota-sets and limits "
             "without the personality quotas"),
    ("2.58", "os-instance-actions: updated_at, limit/marker paging, "
             "changes-since"),
    ("2.59", "os-migrations: uuid, limit/marker paging, changes-since"),
    ("2.60", "multiattach volumes may be attached (400 before)"),
    ("2.61", "flavors: extra_specs"),
    ("2.62", "instance action events: host (admin) and hostId"),
    ("2.63", "servers: trusted_image_certificates (always null)"),
    ("2.64", "os-server-groups: policy and rules (max_server_per_host)"),
    ("2.65", "abort queued live migration: " + _NOTHING_HERE),
    ("2.66", "changes-before filter (instance actions, os-migrations)"),
    ("2.67", "block_device_mapping_v2 volume_type on server create"),
    ("2.68", "forced live migration/evacuate removed: " + _NOTHING_HERE),
    ("2.69", "minimal constructs for down cells: " + _NOTHING_HERE),
    ("2.70", "os-volume_attachments views: tag"),
    ("2.71", "server show: server_groups (the server's group)"),
    ("2.72", "ports with resource requests: " + _NOTHING_HERE),
    ("2.73", "lock with locked_reason; servers: locked_reason"),
    ("2.74", "server create host/hypervisor_hostname: accepted (admin), "
             "not used"),
    ("2.75", "unknown query parameters are a 400 on lists; flavor swap 0 "
             "instead of \"\""),
    ("2.76", "power-update external event (refused as Nova does for a "
             "server not on Ironic)"),
    ("2.77", "unshelve with availability_zone"),
    ("2.78", "server topology: " + _NOTHING_HERE),
    ("2.79", "delete_on_termination on volume attach and in attachment "
             "views"),
    ("2.80", "os-migrations: user_id and project_id (fields and filters)"),
    ("2.81", "image cache by aggregate: " + _NOTHING_HERE),
    ("2.82", "accelerator-request-bound external event: accepted and "
             "ignored (no Cyborg)"),
    ("2.83", "more server filters for non-admins: " + _NOTHING_HERE),
    ("2.84", "instance action events: details"),
    ("2.85", "PUT os-volume_attachments/{volume_id} may update "
             "delete_on_termination"),
    ("2.86", "extra spec validation: " + _NOTHING_HERE),
    ("2.87", "rescue boot-from-volume: " + _NOTHING_HERE),
    ("2.88", "hypervisor statistics removed: " + _NOTHING_HERE),
    ("2.89", "os-volume_attachments list/show: attachment_id and bdm_uuid, "
             "no id; attachments in progress are left out"),
    ("2.90", "server create hostname: accepted; OS-EXT-SRV-ATTR:hostname "
             "shown to every caller"),
    ("2.91", "unshelve to a host (admin)"),
    ("2.92", "keypair generation dropped: " + _NOTHING_HERE),
    ("2.93", "rebuild of a volume-backed server re-images its root volume "
             "(the volume service's os-reimage) and waits for its "
             "volume-reimaged external event"),
    ("2.94", "FQDN hostnames on create"),
    ("2.95", "evacuate stops the server: " + _NOTHING_HERE),
    ("2.96", "servers: pinned_availability_zone"),
    ("2.97", "server shares: " + _NOTHING_HERE),
    ("2.98", "servers: image properties (always {})"),
    ("2.99", "spice-direct console: " + _NOTHING_HERE),
    ("2.100", "servers: scheduler_hints (always {})"),
    ("2.101", "POST os-volume_attachments is asynchronous: 202, no body"),
    ("2.102", "unknown query parameters are a 400 everywhere; flavors lose "
              "rxtx_factor and OS-FLV-DISABLED:disabled"),
    ("2.103", "os-volumes_boot removed: " + _NOTHING_HERE),
    ("2.104", "PUT /servers/{id} unpins (null) or re-pins "
              "pinned_availability_zone"),
    ("2.105", "volattach's own extension, not a Nova microversion: attach_mode "
              "(ro/rw) on attach and in block_device_mapping_v2, shown in "
              "attachment list and show; multi-create of servers sharing one "
              "multiattach volume (the volume-multiattach-enhancements spec)"),
]

_VERSION_RE = re.compile(r"^([1-9]\d*)\.([1-9]\d*|0)$")

class InvalidMicroversion(exception.Invalid):
    msg_fmt = ("API Version String %(version)s is of invalid format. Must be "
               "of format MajorNum.MinorNum.")


class MicroversionNotAcceptable(exception.VolattachException):
    msg_fmt = ("Version %(req_ver)s is not supported by the API. Minimum is "
               "%(min_ver)s and maximum is %(max_ver)s.")


@functools.total_ordering
class Version:
    """A microversion ``X.Y``; compares with Versions and ``"X.Y"`` strings."""

    __slots__ = ("major", "minor")

    def __init__(self, major, minor):
        self.major = int(major)
        self.minor = int(minor)

    @classmethod
    def parse(cls, text):
        match = _VERSION_RE.match(text or "")
        if not match:
            raise InvalidMicroversion(version=text)
        return cls(match.group(1), match.group(2))

    @staticmethod
    def _coerce(other):
        if isinstance(other, Version):
            return other
        if isinstance(other, str):
            # the handlers and views compare with a few literal strings
            # ("2.89"), many times per request: parse each once
            version = _PARSED.get(other)
            if version is None:
                version = Version.parse(other)
                if len(_PARSED) < _PARSED_MAX:
                    _PARSED[other] = version
            return version
        return NotImplemented

    def _key(self):
        return (self.major, self.minor)

    def __eq__(self, other):
        other = self._coerce(other)
        if other is NotImplemented:
            return NotImplemented
        return self._key() == other._key()

    def __lt__(self, other):
        other = self._coerce(other)
        if other is NotImplemented:
            return NotImplemented
        return self._key() < other._key()

    def __hash__(self):
        return hash(self._key())

    def matches(self, min_version, max_version=None):
        """True when ``min_version <= self`` (and ``self <= max_version``)."""
        if self < min_version:
            return False
        return max_version is None or self <= max_version

    def __str__(self):
        return "%d.%d" % (self.major, self.minor)

    def __repr__(self):
        return "Version(%s)" % self


_PARSED = {}
_PARSED_MAX = 512

MIN_VERSION = Version.parse(VERSIONS[0][0])
MAX_VERSION = Version.parse(VERSIONS[-1][0])
DEFAULT_VERSION = MIN_VERSION


def _not_acceptable(version, min_version, max_version):
    return MicroversionNotAcceptable(req_ver=str(version),
                                     min_ver=str(min_version),
                                     max_ver=str(max_version))


NEGOTIATOR = shared_microversion.Negotiator(
    SERVICE_TYPE, LEGACY_HEADER, MIN_VERSION, MAX_VERSION,
    parse=Version.parse, not_acceptable=_not_acceptable)


def negotiate(headers):
    """The Version a request asks for; ``headers`` is a dict or a WSGI environ.

    Raises InvalidMicroversion (400) or MicroversionNotAcceptable (406).
    """
    if "REQUEST_METHOD" in headers:
        return NEGOTIATOR.from_environ(headers)
    return NEGOTIATOR.negotiate(headers)


def response_headers(version):
    """The headers every versioned response carries."""
    return [(HEADER, NEGOTIATOR.response_value(version)),
            (LEGACY_HEADER, str(version)),
            ("Vary", VARY)]
