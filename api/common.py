"""What every handler and view shares: the request's caller, microversion,
body, query string, links and paging.

``Resource`` is the base of the handlers: it holds the compute facade
(``self.compute``) and the configuration.  ``RequestScope`` is the falcon
middleware that copies what the WSGI middleware found (caller, microversion)
into ``req.context`` and takes the optional ``{project_id}`` URL segment of
Nova's legacy URLs out of the route parameters.
"""
import json
import urllib.parse

import falcon
from oslo_utils import timeutils

from volattach.api import auth
from volattach.api import middleware
from volattach import exception

JSON_TYPES = ("application/json", "application/vnd.openstack.compute+json")


class RequestScope:
    """falcon middleware: fills ``req.context`` (see the module docstring).

    ``req.context.ctx``: the RequestContext (None on the version documents);
    ``req.context.microversion``: the negotiated ``Version``;
    ``req.context.base_url``: where links point (``[api] public_endpoint``
    or the request's own URL root);
    ``req.context.url_project_id``: the project id of a legacy URL, or None;
    ``req.context.compute``: the compute facade of the resource (the
    server views read the hosts' zones and a server's group through it).
    """

    def __init__(self, conf):
        self.conf = conf

    def process_request(self, req, resp):
        req.context.ctx = req.env.get(auth.ENV_CONTEXT)
        req.context.microversion = req.env.get(middleware.ENV_MICROVERSION)
        endpoint = self.conf.api.public_endpoint
        req.context.base_url = (endpoint or req.prefix).rstrip("/")
        req.context.url_project_id = None

    def process_resource(self, req, resp, resource, params):
        req.context.compute = getattr(resource, "compute", None)
        project_id = params.pop("project_id", None)
        if project_id is None:
            return
        ctx = req.context.ctx
        if ctx is not None and project_id != ctx.project_id:
            raise exception.InvalidRequest(
                message="Malformed request URL: URL's project_id '%s' doesn't "
                        "match Context's project_id '%s'"
                        % (project_id, ctx.project_id))
        req.context.url_project_id = project_id


class Resource:
    """Base of the handlers: the compute facade and the configuration."""

    def __init__(self, compute_api, conf):
        self.compute = compute_api
        self.conf = conf


# -- request -----------------------------------------------------------------------

def read_body(req):
    """The JSON body of a request (None when empty); 400/415 otherwise."""
    raw = req.bounded_stream.read()
    if not raw:
        return None
    content_type = (req.content_type or "").split(";")[0].strip().lower()
    if content_type and content_type not in JSON_TYPES:
        raise falcon.HTTPUnsupportedMediaType(
            description="Unsupported Content-Type")
    try:
        return json.loads(raw)
    except ValueError:
        raise exception.InvalidRequest(message="Malformed request body")


def query(req):
    """The query string as ``{name: [values]}`` (Nova's ``dict_of_lists``)."""
    result = {}
    for name, value in urllib.parse.parse_qsl(req.query_string,
                                              keep_blank_values=True):
        result.setdefault(name, []).append(value)
    return result


def last(query_dict, name, default=None):
    """The last value of a query parameter (what webob's ``GET[name]`` gives)."""
    values = query_dict.get(name)
    return values[-1] if values else default


def changes_range(query_dict):
    """``changes-since`` and ``changes-before`` of a list query (the schema
    has checked them as date-times) as datetimes, None when absent; 400 when
    the range is inverted, as Nova answers."""
    since, before = (last(query_dict, name)
                     for name in ("changes-since", "changes-before"))
    since = timeutils.parse_isotime(since) if since else None
    before = timeutils.parse_isotime(before) if before else None
    if since and before and before < since:
        raise exception.InvalidInput(
            message="The value of changes-since must be less than or "
                    "equal to changes-before.")
    return since, before


def limit_and_marker(conf, query_dict):
    """``limit`` (capped by ``[api] max_limit``) and ``marker`` of a list."""
    max_limit = conf.api.max_limit
    limit = last(query_dict, "limit")
    limit = min(max_limit, int(limit)) if limit not in (None, "") else max_limit
    return limit, last(query_dict, "marker")


def limited(conf, items, query_dict):
    """Nova's ``common.limited``: ``offset``/``limit`` slicing of a list."""
    offset = int(last(query_dict, "offset") or 0)
    limit = int(last(query_dict, "limit") or 0) or conf.api.max_limit
    limit = min(limit, conf.api.max_limit)
    return items[offset:offset + limit]


# -- links -------------------------------------------------------------------------

def _join(*parts):
    return "/".join(p.strip("/") for p in parts if p)


def href(req, *parts):
    """``<base>/v2.1[/<project>]/<parts>``: a link to this API's resource."""
    return _join(req.context.base_url, "v2.1", req.context.url_project_id,
                 *[str(p) for p in parts])


def bookmark(req, *parts):
    """``<base>[/<project>]/<parts>``: Nova's version-less bookmark link."""
    return _join(req.context.base_url, req.context.url_project_id,
                 *[str(p) for p in parts])


def links(req, collection, identifier):
    return [{"rel": "self", "href": href(req, collection, identifier)},
            {"rel": "bookmark", "href": bookmark(req, collection, identifier)}]


def collection_links(req, conf, items, collection, id_key="id",
                     query_dict=None):
    """The ``next`` link of a list that filled its page (Nova's rule)."""
    query_dict = query(req) if query_dict is None else query_dict
    try:
        max_items = min(int(last(query_dict, "limit") or conf.api.max_limit),
                        conf.api.max_limit)
    except ValueError:
        max_items = conf.api.max_limit
    if not max_items or max_items != len(items):
        return []
    params = sorted((k, v) for k, values in query_dict.items()
                    for v in values if k != "marker")
    params.append(("marker", items[-1][id_key]))
    url = href(req, collection) + "?" + urllib.parse.urlencode(params)
    return [{"rel": "next", "href": url}]


# -- response ----------------------------------------------------------------------

def send(resp, body, status=200):
    resp.status = status
    if body is None:
        resp.text = None
        return
    resp.content_type = falcon.MEDIA_JSON
    resp.text = json.dumps(body)
