"""Fixtures of the API unit tests: the real WSGI stack over a fake facade.

``api`` is a small client over ``falcon.testing`` that speaks like a cloud
user: ``api.get(path, token=..., version=...)`` returns falcon's Result
(``.status_code``, ``.json``, ``.headers``, ``.text``).
"""
import json

import falcon.testing
import pytest
from oslo_config import cfg

from volattach.api import wsgi as api_wsgi
from tests.unit.api import fakes
from volattach import conf as volattach_conf

USER = "alice:p1"
OTHER = "bob:p2"
ADMIN = "root:admin-project:admin"
SERVICE = "cinder:service-project:service"


def make_conf(**api_overrides):
    conf = cfg.ConfigOpts()
    volattach_conf.register_opts(conf)
    volattach_conf.set_embedded_defaults(conf)  # noauth
    conf([], project="volattach", default_config_files=[])
    for name, value in api_overrides.items():
        conf.set_override(name, value, group="api")
    return conf


class Api:

    def __init__(self, app):
        self.client = falcon.testing.TestClient(app)

    def request(self, method, path, token=USER, version=None, body=None,
                headers=None, legacy=True, params=None):
        all_headers = {}
        if token is not None:
            all_headers["X-Auth-Token"] = token
        if version is not None:
            if legacy:
                all_headers["X-OpenStack-Nova-API-Version"] = version
            else:
                all_headers["OpenStack-API-Version"] = "compute %s" % version
        kwargs = {}
        if body is not None:
            all_headers["Content-Type"] = "application/json"
            kwargs["body"] = body if isinstance(body, (str, bytes)) \
                else json.dumps(body)
        all_headers.update(headers or {})
        if params:
            kwargs["query_string"] = params
        return self.client.simulate_request(method, path, headers=all_headers,
                                            **kwargs)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body=body, **kw)

    def put(self, path, body=None, **kw):
        return self.request("PUT", path, body=body, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)


@pytest.fixture
def conf():
    return make_conf()


@pytest.fixture
def facade():
    return fakes.FakeFacade()


@pytest.fixture
def api(conf, facade):
    return Api(api_wsgi.make_app(conf, compute_api=facade))
