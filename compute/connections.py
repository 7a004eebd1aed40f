"""Host connections of a compute host, reference-counted per shared target.

Some backends export several volumes (or several attachments of one volume)
through ONE host connection: one iSCSI session to a target shared by every
volume of this host.  Disconnecting that session takes away every volume
behind it, so the host connection may only be closed by the *last*
attachment that uses it, and an attach racing with that last detach must
not find a session that is being logged out (the race of the Ocata
nova/cinder session recap).

``HostConnections`` is the compute's authority on this: for each target it
holds the set of attachments of this host that use it, and a lock per
target, so that connect/disconnect of one target run one at a time.  The
volume service's ``shared_connections_by_attachment`` is a snapshot taken
before the compute acts and cannot see races on the host; this count can.

Target keys (``target_key``): the connection_info's ``shared_target_id``
(our volume service); else the session it names (driver type, portal(s),
iqn: every LUN behind one iqn/portal shares the session); else the
attachment itself (a connection of its own).

Lock order: the per-instance lock (``compute.locks``) first, then at most
ONE target lock at a time.  Nothing takes an instance lock while holding a
target lock, so the two kinds cannot deadlock.

The counts live in memory: a restarted compute rebuilds them with
``rebuild`` from the block-device mappings of the instances on its host,
before it serves RPC (``compute.service.ComputeService``).
"""
import contextlib
import logging
import threading

LOG = logging.getLogger(__name__)


def _data(connection_info):
    info = connection_info or {}
    data = info.get("data")
    return data if isinstance(data, dict) else info


def user_key(connection_info, fallback=None):
    """Who uses the connection: the attachment (else the volume, else
    ``fallback``)."""
    data = _data(connection_info)
    return (data.get("attachment_id") or data.get("volume_id") or fallback
            or repr(sorted(data.items(), key=lambda kv: kv[0])))


def target_key(connection_info, fallback=None):
    """The host connection that ``connection_info`` rides on."""
    info = connection_info or {}
    data = _data(info)
    if data.get("shared_target_id"):
        return "shared:%s" % data["shared_target_id"]
    iqn = data.get("target_iqns") or data.get("target_iqn")
    portal = data.get("target_portals") or data.get("target_portal")
    if iqn and portal:
        if isinstance(iqn, list):
            iqn = ",".join(sorted(map(str, iqn)))
        if isinstance(portal, list):
            portal = ",".join(sorted(map(str, portal)))
        kind = info.get("driver_volume_type") or data.get("driver_volume_type")
        return "session:%s:%s:%s" % (kind or "", portal, iqn)
    return "own:%s" % user_key(info, fallback)


class HostConnections:
    """Attachments of one host per target, with a lock per target."""

    def __init__(self, host):
        self.host = host
        self._guard = threading.Lock()
        self._users = {}    # target key -> set of user keys
        self._locks = {}    # target key -> [lock, holders and waiters]

    # -- locking ------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self, key):
        """The lock of (this host, target ``key``); dropped when unused."""
        with self._guard:
            entry = self._locks.setdefault(key, [threading.Lock(), 0])
            entry[1] += 1
        try:
            with entry[0]:
                yield
        finally:
            with self._guard:
                entry[1] -= 1
                if entry[1] == 0 and self._locks.get(key) is entry:
                    del self._locks[key]

    # -- reference counts ---------------------------------------------------------
    def users(self, key):
        with self._guard:
            return set(self._users.get(key, ()))

    def targets(self):
        """{target key: number of attachments using it}."""
        with self._guard:
            return {k: len(v) for k, v in self._users.items()}

    def _add(self, key, user):
        with self._guard:
            self._users.setdefault(key, set()).add(user)

    def _remove(self, key, user):
        """Remove ``user``; return the users left on the target."""
        with self._guard:
            users = self._users.get(key)
            if users is None:
                return set()
            users.discard(user)
            if not users:
                del self._users[key]
                return set()
            return set(users)

    def rebuild(self, context):
        """Count the connections of the volumes of this host's instances
        (objects read through the conductor); return how many."""
        from volattach import objects
        instances = objects.InstanceList.get_by_filters(context,
                                                        {"host": self.host})
        uuids = [inst.uuid for inst in instances]
        count = 0
        if uuids:
            bdms = objects.BlockDeviceMappingList.get_by_instance_uuids(
                context, uuids)
            for bdm in bdms:
                if bdm.is_volume and bdm.connection_info:
                    self.adopt(bdm.get_connection_info(), bdm.uuid)
                    count += 1
        LOG.info("%s: %d volume connections in use on %d targets", self.host,
                 count, len(self.targets()))
        return count

    def adopt(self, connection_info, fallback=None):
        """Count an attachment that is already connected (service start)."""
        key = target_key(connection_info, fallback)
        self._add(key, user_key(connection_info, fallback))
        return key

    def connect(self, connection_info, connect, fallback=None):
        """Run ``connect()`` (the driver's connect_volume of this attachment)
        under the target's lock, then count the attachment as a user.  The
        driver connects the target itself when it is not connected yet; it
        is never being disconnected meanwhile."""
        key = target_key(connection_info, fallback)
        user = user_key(connection_info, fallback)
        with self.lock(key):
            connect()
            self._add(key, user)
        return key

    def disconnect(self, connection_info, disconnect, fallback=None,
                   shared_with=None):
        """Stop counting the attachment and run ``disconnect(last)`` under
        the target's lock; ``last`` is True when no other attachment of this
        host uses the target (the driver closes the host connection then).

        If ``disconnect`` raises, the attachment is counted again (it is
        still connected).  ``shared_with`` (the volume service's
        ``shared_connections_by_attachment``, when known) is only compared
        and logged: the local count is the authority.
        """
        key = target_key(connection_info, fallback)
        user = user_key(connection_info, fallback)
        with self.lock(key):
            with self._guard:
                known = user in self._users.get(key, ())
            others = self._remove(key, user)
            last = not others
            if not known:
                LOG.debug("%s: attachment %s was not counted on target %s",
                          self.host, user, key)
            if shared_with is not None and bool(shared_with) != bool(others):
                LOG.info("%s: volume service reports %s sharing the target "
                         "of %s, this host counts %s; going by the host's "
                         "count", self.host, sorted(shared_with), user,
                         sorted(others))
            try:
                disconnect(last)
            except Exception:
                if known:
                    self._add(key, user)
                raise
        return last
