"""volattach.wsgi.microversion: the negotiation both services share."""
import pytest

from volattach.wsgi import microversion


class Invalid(ValueError):
    pass


class NotAcceptable(ValueError):
    pass


def _parse(text):
    try:
        major, minor = text.split(".")
        return (int(major), int(minor))
    except ValueError:
        raise Invalid(text)


def _negotiator(**kwargs):
    return microversion.Negotiator(
        "thing", "X-Thing-Version", (1, 0), (1, 5), parse=_parse,
        not_acceptable=lambda v, lo, hi: NotAcceptable(v, lo, hi), **kwargs)


def test_standard_header_wins_over_legacy_and_absence_is_the_minimum():
    neg = _negotiator()
    assert neg.negotiate({}) == (1, 0)
    assert neg.negotiate({"X-Thing-Version": "1.2"}) == (1, 2)
    assert neg.negotiate({"OpenStack-API-Version": "other 9.9, thing 1.3",
                          "X-Thing-Version": "1.2"}) == (1, 3)
    assert neg.negotiate({"OpenStack-API-Version": "other 9.9"}) == (1, 0)
    assert neg.negotiate({"OpenStack-API-Version": "thing latest"}) == (1, 5)


def test_errors_come_from_the_service():
    neg = _negotiator()
    with pytest.raises(Invalid):
        neg.negotiate({"OpenStack-API-Version": "thing 1.x"})
    with pytest.raises(NotAcceptable) as err:
        neg.negotiate({"OpenStack-API-Version": "thing 1.6"})
    assert err.value.args == ((1, 6), (1, 0), (1, 5))


def test_latest_strict_or_lenient():
    with pytest.raises(Invalid):
        _negotiator().negotiate({"X-Thing-Version": "LATEST"})
    assert _negotiator(lenient_latest=True).negotiate(
        {"X-Thing-Version": " LATEST "}) == (1, 5)


def test_successes_are_cached_by_header_values_errors_are_not(monkeypatch):
    neg = _negotiator()
    assert neg.from_environ({"HTTP_X_THING_VERSION": "1.1"}) == (1, 1)
    assert neg.from_environ({"HTTP_OPENSTACK_API_VERSION": "thing 1.4",
                             "HTTP_X_THING_VERSION": "1.1"}) == (1, 4)
    assert neg.from_values(None, None) == (1, 0)
    with pytest.raises(NotAcceptable):
        neg.from_values("thing 2.0", None)
    assert neg._cache == {(None, "1.1"): (1, 1), ("thing 1.4", "1.1"): (1, 4),
                          (None, None): (1, 0)}
    monkeypatch.setattr(microversion, "_CACHE_MAX", 3)
    assert neg.from_values(None, "1.5") == (1, 5)
    assert len(neg._cache) == 3


def test_response_value_and_environ_keys():
    assert _negotiator().response_value("1.2") == "thing 1.2"
    assert microversion.environ_key("OpenStack-API-Version") == (
        "HTTP_OPENSTACK_API_VERSION")
