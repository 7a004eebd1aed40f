"""Availability zones, as Nova derives them: a compute host is in the zone
its aggregate names (the aggregate's ``availability_zone`` metadata), or
in the default zone (``nova``, Nova's ``default_availability_zone``) when
no aggregate of its gives one; the other services are in the internal
zone.  Shared by the API (server views, os-availability-zone, the zone of
a create) and the conductor's scheduler."""
DEFAULT_ZONE = "nova"
INTERNAL_ZONE = "internal"
COMPUTE_BINARIES = ("volattach-compute", "nova-compute")


def host_zones(hosts):
    """host -> its zone, for each of ``hosts``."""
    from volattach.db import api as db_api
    hosts = list(hosts)
    zoned = db_api.aggregate_host_zones(hosts) if hosts else {}
    return {h: zoned.get(h, DEFAULT_ZONE) for h in hosts}


def zoned_hosts():
    """host -> zone of every host in a zoned aggregate."""
    from volattach.db import api as db_api
    return db_api.aggregate_host_zones()


def host_zone(host):
    """The zone of one compute host (None: no host)."""
    if not host:
        return None
    return host_zones([host])[host]


def zone_exists(context, zone):
    """Whether ``zone`` is the zone of a compute service (the default one
    only while some compute is in no zoned aggregate)."""
    from volattach import objects
    computes = [s.host for s in objects.ServiceList.get_all(context)
                if s.binary in COMPUTE_BINARIES]
    return zone in set(host_zones(computes).values())


def service_zones(services):
    """service -> its zone (a compute's host zone; ``internal`` for the
    other services), as a list of (service, zone)."""
    computes = [s.host for s in services if s.binary in COMPUTE_BINARIES]
    zones = host_zones(computes)
    return [(s, zones[s.host] if s.binary in COMPUTE_BINARIES
             else INTERNAL_ZONE) for s in services]
