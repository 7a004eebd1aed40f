"""/os-simple-tenant-usage: every project's usage (admin) and one
project's (its readers), between ``start`` and ``end`` (ISO 8601, naive
UTC; now by default, and an end in the future is now); from 2.40 paged
by ``limit`` and ``marker`` (a server id), with the next link."""
import datetime

from oslo_utils import timeutils

from volattach.api import common
from volattach.api import policy
from volattach.api import validation
from volattach.api.schemas import usage as schemas
from volattach import exception

RULE = "os_compute_api:os-simple-tenant-usage:%s"
_FORMATS = ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f",
            "%Y-%m-%d %H:%M:%S.%f")
COLLECTION = "os-simple-tenant-usage"


def _parse(text):
    if not text:
        return timeutils.utcnow().replace(tzinfo=None)
    for fmt in _FORMATS:
        try:
            return datetime.datetime.strptime(text, fmt)
        except ValueError:
            continue
    raise exception.InvalidInput(
        message="Invalid datetime string: Datetime is in invalid format")


def _period(query):
    start = _parse(common.last(query, "start"))
    stop = _parse(common.last(query, "end"))
    if not start < stop:
        raise exception.InvalidInput(
            message="Invalid start time. The start time cannot occur after "
                    "the end time.")
    return start, min(stop, timeutils.utcnow().replace(tzinfo=None))


def _time(value):
    return value.strftime("%Y-%m-%dT%H:%M:%S.%f") if value else None


def _shown(summary):
    summary = dict(summary, start=_time(summary["start"]),
                   stop=_time(summary["stop"]))
    if "server_usages" in summary:
        summary["server_usages"] = [_usage(u) for u in summary["server_usages"]]
    return summary


def _usage(info):
    return dict(info, started_at=_time(info["started_at"]),
                ended_at=_time(info["ended_at"]))


class Usage(common.Resource):

    def _page(self, req, mv, query):
        if mv.matches("2.40"):
            limit, marker = common.limit_and_marker(self.conf, query)
            return limit, marker
        return self.conf.api.max_limit, None

    def on_get(self, req, resp):
        if req.env.get("PATH_INFO", "").endswith("/"):
            # a show of an empty project id, not the list: 404, as Nova
            raise exception.NotFound(message="The resource could not be found.")
        ctx = req.context.ctx
        mv = req.context.microversion
        query = validation.validate_query(mv, schemas.INDEX_QUERY,
                                          common.query(req))
        policy.authorize(ctx, RULE % "list", {})
        start, stop = _period(query)
        limit, marker = self._page(req, mv, query)
        detailed = common.last(query, "detailed") == "1"
        usages, servers = self.compute.usage(ctx, start, stop, None, detailed,
                                             limit, marker)
        body = {"tenant_usages": [_shown(u) for u in usages]}
        if mv.matches("2.40"):
            links = common.collection_links(req, self.conf, servers,
                                            COLLECTION, "instance_id", query)
            if links:
                body["tenant_usages_links"] = links
        common.send(resp, body)

    def on_get_item(self, req, resp, tenant_id):
        ctx = req.context.ctx
        mv = req.context.microversion
        query = validation.validate_query(mv, schemas.SHOW_QUERY,
                                          common.query(req))
        policy.authorize(ctx, RULE % "show", {"project_id": tenant_id})
        start, stop = _period(query)
        limit, marker = self._page(req, mv, query)
        usages, servers = self.compute.usage(ctx, start, stop, tenant_id,
                                             True, limit, marker)
        body = {"tenant_usage": _shown(usages[0]) if usages else {}}
        if mv.matches("2.40"):
            links = common.collection_links(
                req, self.conf, servers, COLLECTION + "/" + tenant_id,
                "instance_id", query)
            if links:
                body["tenant_usage_links"] = links
        common.send(resp, body)
