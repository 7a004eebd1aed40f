"""Choose a compute host for a new server: an enabled compute that is up,
that can boot the server's image, with the fewest servers (ties broken by
host name)."""
from volattach import objects
from volattach import exception
from volattach import servicegroup

BINARY = "volattach-compute"


def _can_boot(service, image_ref):
    """A compute that reports its images (service version 11) can boot
    those; one that reports none (older) may have any."""
    return (not image_ref or not service.reports_images
            or image_ref in service.images)


def select_host(context, availability_zone=None, min_service_version=None,
                exclude=(), image_ref=None):
    """``min_service_version``: only computes at least that new (a server
    with read-only volumes needs one that honours them); ``exclude``: hosts
    not to pick (the source of a live migration); ``image_ref``: not a
    compute that reports its images without this one."""
    services = objects.ServiceList.get_all(context, binary=BINARY)
    candidates = [s.host for s in services
                  if not s.disabled and servicegroup.is_up(s)
                  and s.host not in exclude
                  and (min_service_version is None
                       or s.version >= min_service_version)
                  and _can_boot(s, image_ref)]
    if availability_zone and ":" in availability_zone:
        forced = availability_zone.split(":", 1)[1]
        candidates = [h for h in candidates if h == forced]
    if not candidates:
        raise exception.NoValidHost(reason="There are not enough hosts available.")
    from volattach.db import api as db_api
    counts = db_api.instance_count_by_host(candidates)
    return min(candidates, key=lambda h: (counts.get(h, 0), h))
