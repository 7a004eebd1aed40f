"""Usage (os-simple-tenant-usage): the servers that ran in a period and
for how long, per project, from their launch and termination times."""
import collections

from oslo_utils import timeutils

from volattach.api.compute import base
from volattach import objects


def _hours(launched, terminated, start, stop):
    """Hours the server ran between ``start`` and ``stop``."""
    if launched is None or (terminated and terminated < start) or (
            launched > stop):
        return 0
    end = min(stop, terminated) if terminated else stop
    return (end - max(launched, start)).total_seconds() / 3600.0


def _naive(value):
    return value.replace(tzinfo=None) if value is not None else None


class UsageAPI(base.FacadeBase):

    def usage(self, context, start, stop, project_id=None, detailed=True,
              limit=None, marker=None):
        """(per project summaries, every server's usage) between ``start``
        and ``stop`` (naive UTC), Nova's figures: hours in the period,
        flavor sizes times hours, uptime to now or the termination."""
        from volattach.db import api as db_api
        rows = db_api.instance_get_active_by_window(start, stop, project_id,
                                                    limit, marker)
        summaries = collections.OrderedDict()
        usages = []
        now = timeutils.utcnow()
        for row in rows:
            instance = objects.Instance._from_row(context, row)
            launched = _naive(instance.launched_at)
            terminated = _naive(instance.terminated_at)
            flavor = instance.flavor
            info = {
                "hours": _hours(launched, terminated, start, stop),
                "flavor": flavor.name, "instance_id": instance.uuid,
                "name": instance.display_name or "",
                "tenant_id": instance.project_id,
                "memory_mb": flavor.memory_mb,
                "local_gb": flavor.root_gb + flavor.ephemeral_gb,
                "vcpus": flavor.vcpus,
                "started_at": launched, "ended_at": terminated,
                "state": "terminated" if terminated else instance.vm_state,
            }
            info["uptime"] = int(((terminated or now) - launched)
                                 .total_seconds())
            summary = summaries.get(info["tenant_id"])
            if summary is None:
                summary = summaries[info["tenant_id"]] = {
                    "tenant_id": info["tenant_id"],
                    "total_local_gb_usage": 0, "total_vcpus_usage": 0,
                    "total_memory_mb_usage": 0, "total_hours": 0,
                    "start": start, "stop": stop}
                if detailed:
                    summary["server_usages"] = []
            hours = info["hours"]
            summary["total_local_gb_usage"] += info["local_gb"] * hours
            summary["total_vcpus_usage"] += info["vcpus"] * hours
            summary["total_memory_mb_usage"] += info["memory_mb"] * hours
            summary["total_hours"] += hours
            usages.append(info)
            if detailed:
                summary["server_usages"].append(info)
        return list(summaries.values()), usages
