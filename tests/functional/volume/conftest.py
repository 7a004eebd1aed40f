"""Fixtures of the volume service's functional tests (helpers and their
documentation: volume_testlib.py)."""
import pytest

from tests.functional.volume.volume_testlib import (PgSchema, build_api,
                                                    make_conf, pg_url_or_skip)
from volattach.volume import service


@pytest.fixture
def pg_schema():
    schema = PgSchema(pg_url_or_skip())
    yield schema
    schema.drop()


@pytest.fixture(params=["sqlite"])
def db_url(request, tmp_path):
    """The volume database URL; tests parametrize it indirectly with
    ``volume_testlib.BOTH_DBS`` to run on SQLite and PostgreSQL."""
    if request.param == "sqlite":
        yield "sqlite:///%s" % (tmp_path / "volume.sqlite")
        return
    schema = PgSchema(pg_url_or_skip())
    yield schema.url
    schema.drop()


@pytest.fixture
def volume_conf(tmp_path, db_url):
    return make_conf(tmp_path, connection=db_url)


@pytest.fixture
def api(volume_conf):
    return build_api(volume_conf)


@pytest.fixture
def served(volume_conf):
    service.prepare(volume_conf)
    server, thread = service.serve_in_thread(volume_conf, host="127.0.0.1",
                                             port=0)
    yield server
    server.shutdown()
    thread.join(5)
