"""Version documents: ``GET /`` (300, all versions) and ``GET /v3/``."""
import falcon

from volattach.volume import microversion as mv

UPDATED = "2023-08-31T00:00:00Z"


def version_v3(prefix):
    return {
        "id": "v3.0",
        "status": "CURRENT",
        "version": str(mv.MAX_VERSION),
        "min_version": str(mv.MIN_VERSION),
        "updated": UPDATED,
        "links": [
            {"rel": "describedby", "type": "text/html",
             "href": "https://docs.openstack.org/"},
            {"rel": "self", "href": "%s/v3/" % prefix},
        ],
        "media-types": [
            {"base": "application/json",
             "type": "application/vnd.openstack.volume+json;version=3"},
        ],
    }


class Root:
    def on_get(self, req, resp):
        resp.status = falcon.HTTP_300
        resp.media = {"versions": [version_v3(req.prefix)]}


class V3:
    def on_get(self, req, resp):
        resp.media = {"versions": [version_v3(req.prefix)]}
