"""Choose compute hosts: an enabled compute that is up, in the requested
availability zone, new enough, that can boot the server's image, with the
fewest servers (ties broken by host name).

A server created into a server group (``scheduler_hints: {"group": ...}``)
is placed under the group's lock (``db_api.instance_group_place``): its
hard policy (affinity, anti-affinity with ``max_server_per_host``) filters
the hosts, its soft one orders them (``volattach.group_policy``), and the
choice is written before another placement in the group can read where
the group's servers are.  Several servers of one request are placed
together: all of them or, when the hosts do not suffice, none (Nova's
"No valid host was found", every one of them in ERROR).
"""
from volattach import exception
from volattach import group_policy
from volattach import objects
from volattach import servicegroup

BINARY = "volattach-compute"
NOT_ENOUGH_HOSTS = "There are not enough hosts available."


def _can_boot(service, image_ref):
    """A compute that reports its images (service version 11) can boot
    those; one that reports none (older) may have any."""
    return (not image_ref or not service.reports_images
            or image_ref in service.images)


def candidates(context, availability_zone=None, min_service_version=None,
               exclude=(), image_ref=None):
    """The hosts a server may go to, whatever its group says."""
    from volattach import availability_zones
    services = objects.ServiceList.get_all(context, binary=BINARY)
    hosts = [s.host for s in services
             if not s.disabled and servicegroup.is_up(s)
             and s.host not in exclude
             and (min_service_version is None
                  or s.version >= min_service_version)
             and _can_boot(s, image_ref)]
    if availability_zone:
        zone, _, forced = availability_zone.partition(":")
        if forced:
            # a forced host ("zone:host", admins) goes past the zone, as
            # Nova's forced hosts go past its filters
            hosts = [h for h in hosts if h == forced]
        elif zone:
            zones = availability_zones.host_zones(hosts)
            hosts = [h for h in hosts if zones[h] == zone]
    return hosts


def _counts(hosts):
    from volattach.db import api as db_api
    return db_api.instance_count_by_host(hosts)


def select_host(context, availability_zone=None, min_service_version=None,
                exclude=(), image_ref=None):
    """``min_service_version``: only computes at least that new (a server
    with read-only volumes needs one that honours them); ``exclude``: hosts
    not to pick (the source of a live migration); ``image_ref``: not a
    compute that reports its images without this one."""
    hosts = candidates(context, availability_zone, min_service_version,
                       exclude, image_ref)
    if not hosts:
        raise exception.NoValidHost(reason=NOT_ENOUGH_HOSTS)
    counts = _counts(hosts)
    return min(hosts, key=lambda h: (counts.get(h, 0), h))


def _choose(group, hosts, counts, occupied, uuids):
    """``{uuid: host}`` for each of ``uuids`` in turn, each one counted
    where it went before the next; NoValidHost when one has no host."""
    counts = dict(counts)
    chosen = {}
    for uuid in uuids:
        allowed = group_policy.allowed(group, hosts, occupied)
        if not allowed:
            raise exception.NoValidHost(reason=NOT_ENOUGH_HOSTS)
        prefer = group_policy.preference(group, occupied)
        host = min(allowed, key=lambda h: (prefer(h), counts.get(h, 0), h))
        chosen[uuid] = host
        occupied[host] += 1
        counts[host] = counts.get(host, 0) + 1
    return chosen


def place_group_members(context, group, instances, availability_zone=None,
                        min_service_version=None, image_ref=None,
                        task_state="scheduling"):
    """Hosts for ``instances`` (servers of one request, members of
    ``group``, in ``task_state``), recorded in their rows:
    ``{uuid: host}`` (a server deleted or changed meanwhile is left out).
    NoValidHost when the hosts cannot take all of them: none is placed."""
    hosts = candidates(context, availability_zone, min_service_version,
                       image_ref=image_ref)
    counts = _counts(hosts)
    uuids = [i.uuid for i in instances]

    def choose(group_row, member_hosts):
        fresh = objects.InstanceGroup._from_row(context, group_row)
        occupied = group_policy.occupied_hosts(member_hosts, leaving=uuids)
        return _choose(fresh, hosts, counts, occupied, uuids)

    from volattach.db import api as db_api
    return db_api.instance_group_place(group.uuid, choose,
                                       task_state=task_state)


def select_destination_in_group(context, group, instance, host=None,
                                min_service_version=None, migration_id=None):
    """A live migration's destination for a member of ``group`` (``host``
    when named), chosen and recorded on migration ``migration_id`` under
    the group's lock; NoValidHost when the group's hard policy allows
    none."""
    hosts = candidates(context, ":%s" % host if host else None,
                       min_service_version, exclude=(instance.host,))
    counts = _counts(hosts)

    def choose(group_row, member_hosts):
        fresh = objects.InstanceGroup._from_row(context, group_row)
        occupied = group_policy.occupied_hosts(member_hosts,
                                               leaving=(instance.uuid,))
        return _choose(fresh, hosts, counts, occupied, [instance.uuid])

    from volattach.db import api as db_api
    return db_api.instance_group_place(group.uuid, choose, moving=True,
                                       migration_id=migration_id)[instance.uuid]
