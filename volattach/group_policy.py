"""Server group policies as the scheduler applies them (Nova's
ServerGroupAffinityFilter, ServerGroupAntiAffinityFilter and the soft
weighers), shared by the conductor's scheduler and the API's check of a
live migration's named destination.

``occupied`` is a ``collections.Counter``: host -> how many of the group's
servers are there (placed, or arriving by a live migration).

- affinity: only a host that already holds the group's servers (any host
  while none is placed);
- anti-affinity: only a host holding fewer than ``max_server_per_host``
  of them (1 unless the group's 2.64 rule says more);
- soft-affinity / soft-anti-affinity: every host, the ones holding the
  most (the fewest) preferred.
"""
from volattach.objects import instance_group as group_obj


def allowed(group, hosts, occupied):
    """The hosts of ``hosts`` a hard policy lets the group's next server
    go to (all of them for a soft policy or no group)."""
    if group is None:
        return list(hosts)
    if group.policy == group_obj.AFFINITY:
        used = {h for h, n in occupied.items() if n > 0}
        return [h for h in hosts if not used or h in used]
    if group.policy == group_obj.ANTI_AFFINITY:
        limit = group.max_server_per_host
        return [h for h in hosts if occupied.get(h, 0) < limit]
    return list(hosts)


def preference(group, occupied):
    """A sort key part for ``host`` (lower first) from the soft policies:
    0 for every host otherwise."""
    if group is not None and group.policy == group_obj.SOFT_AFFINITY:
        return lambda host: -occupied.get(host, 0)
    if group is not None and group.policy == group_obj.SOFT_ANTI_AFFINITY:
        return lambda host: occupied.get(host, 0)
    return lambda host: 0


def occupied_hosts(member_hosts, leaving=()):
    """A Counter of hosts from ``{key: host}`` where a key is a member's
    uuid or ``(uuid, "migration")``; the servers of ``leaving`` (the one
    moving, the ones being placed) are left out."""
    import collections
    counter = collections.Counter()
    for key, host in member_hosts.items():
        uuid = key[0] if isinstance(key, tuple) else key
        if uuid not in leaving and host:
            counter[host] += 1
    return counter
