"""Choose a compute host for a new server: an enabled compute that is up,
with the fewest servers (ties broken by host name)."""
from volattach import objects
from volattach import exception
from volattach import servicegroup

BINARY = "volattach-compute"


def select_host(context, availability_zone=None, min_service_version=None,
                exclude=()):
    """``min_service_version``: only computes at least that new (a server
    with read-only volumes needs one that honours them); ``exclude``: hosts
    not to pick (the source of a live migration)."""
    services = objects.ServiceList.get_all(context, binary=BINARY)
    candidates = [s.host for s in services
                  if not s.disabled and servicegroup.is_up(s)
                  and s.host not in exclude
                  and (min_service_version is None
                       or s.version >= min_service_version)]
    if availability_zone and ":" in availability_zone:
        forced = availability_zone.split(":", 1)[1]
        candidates = [h for h in candidates if h == forced]
    if not candidates:
        raise exception.NoValidHost(reason="There are not enough hosts available.")
    from volattach.db import api as db_api
    counts = db_api.instance_count_by_host(candidates)
    return min(candidates, key=lambda h: (counts.get(h, 0), h))
