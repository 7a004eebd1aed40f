"""The host connectors of computes, as the conductor reads them
(``HostConnectors``, a collaborator the conductor's tasks get injected).

A compute writes its volume connector (initiator, IP, host...) into its
services row when it starts; every attach, build, unshelve, swap and live
migration needs it to connect a volume to that host.  ``ConnectorCache``
spares the conductor a services-table read per attach by remembering, per
host, the connector read at most ``ttl`` seconds ago (the same 3 s window
as ``volattach.servicegroup.UpCache``, which the compute API uses for its
"is the compute up?" check: both are ``servicegroup.RecentRows``).

What the cache can delay, by at most ``ttl``, is a connector that changes
under a running deployment: a compute restarted with another initiator, or
a compute service deleted.  A connector is written only when a compute
starts, and the attach that follows goes through that compute anyway (its
RPC fails if it is gone).  A host without a service row or without a
connector is never remembered: it is read again at every question, so a
compute that registers is seen at once.
"""
import time

from volattach.compute import rpcapi as compute_rpcapi
from volattach import exception
from volattach import objects
from volattach.objects import block_device as block_device_obj
from volattach import servicegroup


def _has_connector(service):
    return bool(service.connector)


class ConnectorCache(servicegroup.RecentRows):
    """``get(host, load)``: the connector of ``host``'s compute, from a read
    younger than ``ttl`` seconds or from ``load()`` (which returns the
    service row, or None)."""

    def __init__(self, ttl=servicegroup.UP_CACHE_SECONDS, clock=time.monotonic):
        super().__init__(_has_connector, ttl, clock)

    def get(self, host, load):
        """A copy of the connector (callers add mountpoint and mode to it),
        or None when the host has no service row or no connector."""
        service = super().get(host, load)
        return dict(service.connector) if service is not None else None


class HostConnectors:
    """The connectors the conductor's workflows connect volumes with: one
    per conductor (its ``ConnectorCache`` shared by every workflow run)."""

    def __init__(self, cache=None):
        self.cache = cache if cache is not None else ConnectorCache()

    def get(self, context, host, device_name=None, attach_mode=None):
        """The host connector of ``host``'s compute, with the mountpoint
        and the attach mode (the way the multiattach-enhancements spec
        passes the mode to Cinder) of one volume; ComputeHostNotFound when
        the host has no compute service or no connector."""
        connector = self.cache.get(
            host, lambda: objects.Service.get_by_host_and_binary(
                context.elevated(), host, compute_rpcapi.BINARY))
        if connector is None:
            raise exception.ComputeHostNotFound(host=host)
        if device_name:
            connector["mountpoint"] = device_name
        connector["mode"] = attach_mode or block_device_obj.DEFAULT_ATTACH_MODE
        return connector
