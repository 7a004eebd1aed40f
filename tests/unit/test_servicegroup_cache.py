"""servicegroup.UpCache: a service seen up a moment ago is not read again;
down, missing and stale services always are."""
import datetime
import types

import pytest

import volattach  # noqa: F401
from volattach.db.models import utcnow
from volattach import servicegroup
from volattach.conf import CONF

KEY = ("compute1", "volattach-compute")


class _Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class _Loader:
    """``load()`` for the cache: returns ``self.service``, counts reads."""

    def __init__(self, service):
        self.service = service
        self.reads = 0

    def __call__(self):
        self.reads += 1
        return self.service


def _svc(**kw):
    values = dict(forced_down=False, last_seen_up=utcnow(), updated_at=None,
                  created_at=None)
    values.update(kw)
    return types.SimpleNamespace(**values)


@pytest.fixture(autouse=True)
def conf():
    CONF([], project="volattach", default_config_files=[])
    CONF.set_override("service_down_time", 60)
    yield CONF
    CONF.clear_override("service_down_time")


@pytest.fixture
def clock():
    return _Clock()


@pytest.fixture
def cache(clock):
    return servicegroup.UpCache(ttl=3.0, clock=clock)


def test_ttl_is_well_below_the_heartbeat_and_down_times():
    # a few seconds: what the cache may delay (forced_down, deletion)
    assert servicegroup.UP_CACHE_SECONDS <= 5
    assert servicegroup.UP_CACHE_SECONDS < CONF.report_interval < CONF.service_down_time


def test_up_service_is_read_once_within_the_ttl(cache, clock):
    load = _Loader(_svc())
    assert cache.is_up(KEY, load)
    clock.now += 2.9
    assert cache.is_up(KEY, load)
    assert load.reads == 1
    clock.now += 0.2          # 3.1 s after the read: read again
    assert cache.is_up(KEY, load)
    assert load.reads == 2


def test_keys_are_separate(cache):
    first, second = _Loader(_svc()), _Loader(_svc(forced_down=True))
    assert cache.is_up(KEY, first)
    assert not cache.is_up(("compute2", "volattach-compute"), second)
    assert first.reads == 1 and second.reads == 1


@pytest.mark.parametrize("service", [
    None, _svc(forced_down=True), _svc(last_seen_up=None),
    _svc(last_seen_up=utcnow() - datetime.timedelta(seconds=61)),
], ids=["missing", "forced-down", "never-seen", "stale"])
def test_down_or_missing_service_is_read_every_time(cache, service):
    load = _Loader(service)
    assert not cache.is_up(KEY, load)
    assert not cache.is_up(KEY, load)
    assert load.reads == 2


def test_service_coming_back_is_up_at_once(cache):
    load = _Loader(_svc(forced_down=True))
    assert not cache.is_up(KEY, load)
    load.service = _svc()
    assert cache.is_up(KEY, load)


def test_cached_heartbeat_going_stale_is_down_without_waiting_for_the_ttl(
        cache, conf):
    """The cached row is judged again with the current time: a compute
    whose last heartbeat turns 61 s old is down at once, as without the
    cache (its row is then read, and says the same)."""
    almost_stale = utcnow() - datetime.timedelta(seconds=59.5)
    load = _Loader(_svc(last_seen_up=almost_stale))
    assert cache.is_up(KEY, load)
    conf.set_override("service_down_time", 59)   # as if a second went by
    assert not cache.is_up(KEY, load)
    assert load.reads == 2


def test_forced_down_is_seen_once_the_ttl_has_passed(cache, clock):
    """What the cache delays, by at most its TTL (documented)."""
    load = _Loader(_svc())
    assert cache.is_up(KEY, load)
    load.service = _svc(forced_down=True)
    assert cache.is_up(KEY, load)       # within the TTL: still the cached row
    clock.now += 3.0
    assert not cache.is_up(KEY, load)
    assert not cache.is_up(KEY, load)
    assert load.reads == 3


def test_clear_forgets_everything(cache):
    load = _Loader(_svc())
    cache.is_up(KEY, load)
    cache.clear()
    cache.is_up(KEY, load)
    assert load.reads == 2
