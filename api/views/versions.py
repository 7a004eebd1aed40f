"""The version documents: ``GET /`` (all versions), ``GET /v2.1/`` and
``GET /v2/`` (Nova's legacy v2.0 entry: SUPPORTED, without
microversions; only its version document is served here)."""
from volattach.api import microversions

DOCS_URL = "http://docs.openstack.org/"
UPDATED = "2013-07-23T11:33:21Z"
UPDATED_V20 = "2011-01-21T11:33:21Z"


def _v21(base_url):
    return {
        "id": "v2.1",
        "status": "CURRENT",
        "version": str(microversions.MAX_VERSION),
        "min_version": str(microversions.MIN_VERSION),
        "updated": UPDATED,
    }


def _v20(base_url):
    return {"id": "v2.0", "status": "SUPPORTED", "version": "",
            "min_version": "", "updated": UPDATED_V20}


def versions(base_url):
    v20 = _v20(base_url)
    v20["links"] = [{"rel": "self", "href": base_url + "/v2/"}]
    version = _v21(base_url)
    version["links"] = [{"rel": "self", "href": base_url + "/v2.1/"}]
    return {"versions": [v20, version]}


def _document(body, href, media_version):
    body["links"] = [
        {"rel": "self", "href": href},
        {"rel": "describedby", "type": "text/html", "href": DOCS_URL},
    ]
    body["media-types"] = [{
        "base": "application/json",
        "type": "application/vnd.openstack.compute+json;version=%s"
                % media_version,
    }]
    return {"version": body}


def version(base_url):
    return _document(_v21(base_url), base_url + "/v2.1/", "2.1")


def version_v20(base_url):
    return _document(_v20(base_url), base_url + "/v2/", "2")
