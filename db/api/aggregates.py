"""Queries of the compute database's host aggregates (``aggregates``,
``aggregate_hosts``, ``aggregate_metadata``) and the availability zones
they give their hosts (the ``availability_zone`` metadata key)."""
import uuid as uuidlib

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy import exc as sa_exc

from volattach.db.api import _common as c
from volattach.db import models
from volattach import exception

AGGREGATES = models.Aggregate.__table__
AGG_HOSTS = models.AggregateHost.__table__
AGG_META = models.AggregateMetadata.__table__
AZ_KEY = "availability_zone"


def _complete(conn, rows):
    """Aggregate rows with their ``hosts`` (a list) and ``metadata``."""
    ids = [r["id"] for r in rows]
    hosts = {i: [] for i in ids}
    meta = {i: {} for i in ids}
    if ids:
        for agg_id, host in conn.execute(
                select(AGG_HOSTS.c.aggregate_id, AGG_HOSTS.c.host)
                .where(AGG_HOSTS.c.aggregate_id.in_(ids))
                .order_by(AGG_HOSTS.c.id)):
            hosts[agg_id].append(host)
        for agg_id, key, value in conn.execute(
                select(AGG_META.c.aggregate_id, AGG_META.c.key,
                       AGG_META.c.value)
                .where(AGG_META.c.aggregate_id.in_(ids))):
            meta[agg_id][key] = value
    return [dict(r, hosts=hosts[r["id"]], metadata=meta[r["id"]])
            for r in rows]


def _get(conn, aggregate_id):
    rows = c.dicts(conn.execute(select(AGGREGATES).where(
        AGGREGATES.c.id == aggregate_id)))
    if not rows:
        raise exception.AggregateNotFound(aggregate_id=aggregate_id)
    return _complete(conn, rows)[0]


def _name_taken(conn, name, but=None):
    q = select(AGGREGATES.c.id).where(AGGREGATES.c.name == name)
    if but is not None:
        q = q.where(AGGREGATES.c.id != but)
    return conn.execute(q).first() is not None


def _set_metadata(conn, aggregate_id, metadata):
    """Set (value) or delete (None) each key."""
    for key, value in metadata.items():
        conn.execute(delete(AGG_META).where(AGG_META.c.aggregate_id == aggregate_id,
                                            AGG_META.c.key == key))
        if value is not None:
            conn.execute(insert(AGG_META).values(
                aggregate_id=aggregate_id, key=key, value=value,
                created_at=c.now()))


def aggregate_create(name, metadata=None):
    """A new aggregate (AggregateNameExists: the name is taken)."""
    def create(conn):
        if _name_taken(conn, name):
            raise exception.AggregateNameExists(aggregate_name=name)
        try:
            with conn.begin_nested():
                agg_id = conn.execute(insert(AGGREGATES).values(
                    uuid=str(uuidlib.uuid4()), name=name,
                    created_at=c.now())).inserted_primary_key[0]
        except sa_exc.IntegrityError:
            raise exception.AggregateNameExists(aggregate_name=name)
        _set_metadata(conn, agg_id, metadata or {})
        return _get(conn, agg_id)
    return c.database().write(create)


def aggregate_get(aggregate_id):
    return c.database().read(lambda conn: _get(conn, aggregate_id))


def aggregate_get_all():
    return c.database().read(lambda conn: _complete(conn, c.dicts(
        conn.execute(select(AGGREGATES).order_by(AGGREGATES.c.id)))))


def aggregate_get_by_host(host):
    """The aggregates ``host`` is in."""
    return c.database().read(lambda conn: _complete(conn, c.dicts(
        conn.execute(select(AGGREGATES)
                     .join(AGG_HOSTS, AGG_HOSTS.c.aggregate_id == AGGREGATES.c.id)
                     .where(AGG_HOSTS.c.host == host)
                     .order_by(AGGREGATES.c.id)))))


def _other_zones(conn, aggregate, hosts):
    """The zones that the other aggregates of ``hosts`` give them."""
    if not hosts:
        return set()
    return {value for (value,) in conn.execute(
        select(AGG_META.c.value)
        .join(AGG_HOSTS, AGG_HOSTS.c.aggregate_id == AGG_META.c.aggregate_id)
        .where(AGG_HOSTS.c.host.in_(list(hosts)), AGG_META.c.key == AZ_KEY,
               AGG_META.c.aggregate_id != aggregate["id"]))}


def _servers_on(conn, hosts):
    if not hosts:
        return 0
    return conn.execute(
        select(func.count()).select_from(c.INSTANCES)
        .where(c.INSTANCES.c.host.in_(list(hosts)),
               c.INSTANCES.c.deleted == 0)).scalar()


def _check_zone(conn, aggregate, metadata, error):
    """Nova's ``is_safe_to_update_az`` for a new ``availability_zone`` in
    ``metadata``: not empty, not another zone than the one the hosts'
    other aggregates give them, and no zone change under servers."""
    if AZ_KEY not in metadata:
        return
    zone = metadata[AZ_KEY]
    if not zone:
        raise error(aggregate_id=aggregate["id"],
                    reason="Aggregate %s does not support empty named "
                           "availability zone" % aggregate["name"])
    conflicting = sorted(_other_zones(conn, aggregate, aggregate["hosts"])
                         - {zone})
    if conflicting:
        raise error(aggregate_id=aggregate["id"],
                    reason="One or more hosts already in availability "
                           "zone(s) %s" % conflicting)
    if (aggregate["metadata"].get(AZ_KEY) != zone
            and _servers_on(conn, aggregate["hosts"])):
        raise error(aggregate_id=aggregate["id"],
                    reason="One or more hosts contain instances in this zone")


def aggregate_update(aggregate_id, name=None, metadata=None, error=None):
    """Rename and/or set ``metadata`` (a value None deletes its key; a new
    availability zone is checked: ``error`` is the exception of the
    action), in one write transaction, so that two changes that conflict
    never both pass."""
    def change(conn):
        agg = _get(conn, aggregate_id)
        if name is not None:
            if _name_taken(conn, name, but=aggregate_id):
                raise exception.AggregateNameExists(aggregate_name=name)
            conn.execute(update(AGGREGATES)
                         .where(AGGREGATES.c.id == aggregate_id)
                         .values(name=name, updated_at=c.now()))
        if metadata:
            _check_zone(conn, agg, metadata, error)
            _set_metadata(conn, aggregate_id, metadata)
            conn.execute(update(AGGREGATES)
                         .where(AGGREGATES.c.id == aggregate_id)
                         .values(updated_at=c.now()))
        return _get(conn, aggregate_id)
    return c.database().write(change)


def aggregate_destroy(aggregate_id):
    """Delete an aggregate that has no host (400 otherwise, as Nova)."""
    def destroy(conn):
        agg = _get(conn, aggregate_id)
        if agg["hosts"]:
            raise exception.InvalidAggregateActionDelete(
                aggregate_id=aggregate_id,
                reason="Host aggregate is not empty")
        conn.execute(delete(AGG_META).where(AGG_META.c.aggregate_id == aggregate_id))
        conn.execute(delete(AGGREGATES).where(AGGREGATES.c.id == aggregate_id))
    c.database().write(destroy)


_MOVE_REASON = (
    "The host cannot be %s the aggregate as the availability zone of the "
    "host would change from '%s' to '%s' but the host already has %d "
    "instance(s). Changing the AZ of an existing instance is not supported "
    "by this action. Move the instances away from this host then try again. "
    "If you need to move the instances between AZs then you can use "
    "shelve_offload and unshelve to achieve this.")


def aggregate_host_add(aggregate_id, host):
    """Add ``host``: AggregateHostExists; 409 when its other aggregates give
    it another zone, or its zone would change under its servers."""
    def add(conn):
        agg = _get(conn, aggregate_id)
        if host in agg["hosts"]:
            raise exception.AggregateHostExists(aggregate_id=aggregate_id,
                                                host=host)
        zone = agg["metadata"].get(AZ_KEY)
        if zone is not None:
            others = _other_zones(conn, agg, [host])
            if others - {zone}:
                raise exception.InvalidAggregateActionAdd(
                    aggregate_id=aggregate_id,
                    reason="One or more hosts already in availability "
                           "zone(s) %s" % sorted(others - {zone}))
            servers = _servers_on(conn, [host])
            old = sorted(others)[0] if others else None
            if servers and old != zone:
                raise exception.InvalidAggregateActionAdd(
                    aggregate_id=aggregate_id, reason=_MOVE_REASON % (
                        "added to", old, zone, servers))
        conn.execute(insert(AGG_HOSTS).values(
            aggregate_id=aggregate_id, host=host, created_at=c.now()))
        return _get(conn, aggregate_id)
    return c.database().write(add)


def aggregate_host_delete(aggregate_id, host):
    """Remove ``host``: AggregateHostNotFound; 409 when its zone would
    change under its servers."""
    def remove(conn):
        agg = _get(conn, aggregate_id)
        if host not in agg["hosts"]:
            raise exception.AggregateHostNotFound(aggregate_id=aggregate_id,
                                                  host=host)
        zone = agg["metadata"].get(AZ_KEY)
        servers = _servers_on(conn, [host]) if zone else 0
        if servers:
            others = sorted(_other_zones(conn, agg, [host]))
            new = others[0] if others else None
            if new != zone:
                raise exception.InvalidAggregateActionRemoveHost(
                    aggregate_id=aggregate_id, reason=_MOVE_REASON % (
                        "removed from", zone, new, servers))
        conn.execute(delete(AGG_HOSTS).where(
            AGG_HOSTS.c.aggregate_id == aggregate_id,
            AGG_HOSTS.c.host == host))
        return _get(conn, aggregate_id)
    return c.database().write(remove)


def aggregate_zones_of_hosts(conn, hosts):
    """host -> the set of zones its aggregates name (in the caller's
    transaction)."""
    zones = {}
    if not hosts:
        return zones
    for host, value in conn.execute(
            select(AGG_HOSTS.c.host, AGG_META.c.value)
            .join(AGG_META, AGG_META.c.aggregate_id == AGG_HOSTS.c.aggregate_id)
            .where(AGG_HOSTS.c.host.in_(list(hosts)), AGG_META.c.key == AZ_KEY)):
        zones.setdefault(host, set()).add(value)
    return zones


def aggregate_host_zones(hosts=None):
    """host -> its availability zone from an aggregate (hosts in no zoned
    aggregate are left out); every zoned host when ``hosts`` is None."""
    def read(conn):
        q = (select(AGG_HOSTS.c.host, AGG_META.c.value)
             .join(AGG_META, AGG_META.c.aggregate_id == AGG_HOSTS.c.aggregate_id)
             .where(AGG_META.c.key == AZ_KEY)
             .order_by(AGG_HOSTS.c.host, AGG_META.c.value))
        if hosts is not None:
            q = q.where(AGG_HOSTS.c.host.in_(list(hosts)))
        return {host: value for host, value in conn.execute(q)}
    return c.database().read(read)
