"""GET /, GET /v2.1/ and GET /v2/: the version documents (no
authentication)."""
from volattach.api import common
from volattach.api.views import versions as view


class Root(common.Resource):

    def on_get(self, req, resp):
        common.send(resp, view.versions(req.context.base_url))


class V21(common.Resource):

    def on_get(self, req, resp):
        common.send(resp, view.version(req.context.base_url))


class V20(common.Resource):

    def on_get(self, req, resp):
        common.send(resp, view.version_v20(req.context.base_url))
