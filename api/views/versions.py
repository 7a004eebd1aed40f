"""The version documents: ``GET /`` (all versions) and ``GET /v2.1/``."""
from volattach.api import microversions

DOCS_URL = "http://docs.openstack.org/"
UPDATED = "2013-07-23T11:33:21Z"


def _v21(base_url):
    return {
        "id": "v2.1",
        "status": "CURRENT",
        "version": str(microversions.MAX_VERSION),
        "min_version": str(microversions.MIN_VERSION),
        "updated": UPDATED,
    }


def versions(base_url):
    version = _v21(base_url)
    version["links"] = [{"rel": "self", "href": base_url + "/v2.1/"}]
    return {"versions": [version]}


def version(base_url):
    body = _v21(base_url)
    body["links"] = [
        {"rel": "self", "href": base_url + "/v2.1/"},
        {"rel": "describedby", "type": "text/html", "href": DOCS_URL},
    ]
    body["media-types"] = [{
        "base": "application/json",
        "type": "application/vnd.openstack.compute+json;version=2.1",
    }]
    return {"version": body}
