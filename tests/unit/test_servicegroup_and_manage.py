"""Service liveness from heartbeats, and volattach-manage's service list."""
import datetime
import io
import types
import uuid

import pytest

import volattach  # noqa: F401
from volattach.db import api as db_api
from volattach.db.models import utcnow
from tests import db_fixtures
from volattach import servicegroup
from volattach.conf import CONF


def _svc(**kw):
    values = dict(forced_down=False, last_seen_up=utcnow(), updated_at=None, created_at=None)
    values.update(kw)
    return types.SimpleNamespace(**values)


@pytest.fixture(autouse=True)
def conf():
    CONF([], project="volattach", default_config_files=[])
    yield CONF
    CONF.clear_override("service_down_time")


def test_fresh_heartbeat_is_up():
    assert servicegroup.is_up(_svc())


def test_stale_heartbeat_is_down(conf):
    conf.set_override("service_down_time", 60)
    stale = utcnow() - datetime.timedelta(seconds=61)
    assert not servicegroup.is_up(_svc(last_seen_up=stale))
    assert servicegroup.is_up(_svc(last_seen_up=utcnow() - datetime.timedelta(seconds=59)))


def test_forced_down_and_never_seen_are_down():
    assert not servicegroup.is_up(_svc(forced_down=True))
    assert not servicegroup.is_up(_svc(last_seen_up=None))


def test_manage_service_list_prints_every_service(tmp_path):
    from volattach.cmd import manage
    with db_fixtures.compute_database("sqlite", tmp_path) as url:
        CONF.set_override("connection", url, group="database")
        try:
            db_api.service_create({"uuid": str(uuid.uuid4()), "host": "c1",
                                   "binary": "volattach-compute", "version": 2,
                                   "rpc_version": "1.1", "report_count": 0,
                                   "disabled": False, "forced_down": False,
                                   "last_seen_up": utcnow()})
            db_api.service_create({"uuid": str(uuid.uuid4()), "host": "c2",
                                   "binary": "volattach-compute", "version": 1,
                                   "rpc_version": "1.0", "report_count": 0,
                                   "disabled": False, "forced_down": False,
                                   "last_seen_up": utcnow() - datetime.timedelta(hours=1)})
            out = io.StringIO()
            manage.service_list(CONF, out=out)
        finally:
            CONF.clear_override("connection", group="database")
    lines = [line for line in out.getvalue().splitlines() if line.startswith("| ")]
    assert "Binary" in lines[0] and "State" in lines[0]
    rows = {cells[2]: cells for cells in
            ([c.strip() for c in line.strip("|").split("|")] for line in lines[1:])}
    assert rows["c1"][4] == "up" and rows["c1"][6] == "2" and rows["c1"][7] == "1.1"
    assert rows["c2"][4] == "down" and rows["c2"][6] == "1"
