"""volume.reimaged_event: after the os-reimage of a reserved volume, one
volume-reimaged event per server is posted to the compute API at 2.93 (as
Cinder does), and an answer that is not every event's 200 is logged."""
import logging
from unittest import mock

from keystoneauth1 import session as ks_session

from tests.functional.volume.volume_testlib import make_conf
from volattach.volume import reimaged_event


def _conf(tmp_path):
    return make_conf(tmp_path, auth_strategy="noauth",
                     compute_endpoint="http://compute:8774/v2.1/")


def _answer(status, events):
    return mock.Mock(status_code=status, text="...",
                     json=lambda: {"events": events})


def test_one_event_per_server_at_2_93(tmp_path):
    answer = _answer(200, [{"code": 200}, {"code": 200}])
    with mock.patch.object(ks_session.Session, "post",
                           return_value=answer) as post:
        assert reimaged_event.post(_conf(tmp_path), ["s1", "s2"], "vol")
    args, kwargs = post.call_args
    assert args[0] == "http://compute:8774/v2.1/os-server-external-events"
    assert kwargs["json"] == {"events": [
        {"name": "volume-reimaged", "server_uuid": "s1", "tag": "vol"},
        {"name": "volume-reimaged", "server_uuid": "s2", "tag": "vol"}]}
    assert kwargs["headers"] == {"OpenStack-API-Version": "compute 2.93"}


def test_failures_are_logged_not_raised(tmp_path, caplog):
    conf = _conf(tmp_path)
    with caplog.at_level(logging.WARNING, logger=reimaged_event.__name__):
        with mock.patch.object(ks_session.Session, "post",
                               return_value=_answer(207, [{"code": 404}])):
            assert not reimaged_event.post(conf, ["s1"], "vol")
        with mock.patch.object(ks_session.Session, "post",
                               return_value=_answer(403, [])):
            assert not reimaged_event.post(conf, ["s1"], "vol")
        with mock.patch.object(ks_session.Session, "post",
                               side_effect=ConnectionError("refused")):
            assert not reimaged_event.post(conf, ["s1"], "vol")
    messages = [r.getMessage() for r in caplog.records]
    assert any("code 404" in m for m in messages)
    assert any("refused volume-reimaged" in m and "403" in m
               for m in messages)


def test_nothing_to_tell_posts_nothing(tmp_path):
    with mock.patch.object(ks_session.Session, "post") as post:
        assert reimaged_event.post(_conf(tmp_path), [], "vol")
        assert reimaged_event.post_in_background(_conf(tmp_path), [],
                                                 "vol") is None
    post.assert_not_called()
