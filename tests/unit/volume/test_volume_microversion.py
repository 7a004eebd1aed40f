"""volume.microversion: negotiation of OpenStack-API-Version: volume X.Y."""
import pytest

from volattach.volume import microversion as mv


@pytest.mark.parametrize("headers, expected", [
    ({}, (3, 0)),
    ({"OpenStack-API-Version": "volume 3.27"}, (3, 27)),
    ({"openstack-api-version": "volume latest"}, (3, 71)),
    ({"OpenStack-API-Version": "compute 2.1, volume 3.44"}, (3, 44)),
    ({"OpenStack-API-Version": "compute 2.1"}, (3, 0)),
    ({"OpenStack-Volume-microversion": "3.54"}, (3, 54)),
    ({"OpenStack-API-Version": "volume 3.50",
      "OpenStack-Volume-microversion": "3.54"}, (3, 50)),
])
def test_negotiate(headers, expected):
    assert mv.negotiate(headers) == expected


@pytest.mark.parametrize("value", ["3", "3.x", "x.1", "3.01", "3.1.1", ""])
def test_bad_format(value):
    with pytest.raises(mv.InvalidVersionString):
        mv.negotiate({"OpenStack-API-Version": "volume %s" % value}
                     if value else {"OpenStack-Volume-microversion": " "})


@pytest.mark.parametrize("value", ["2.0", "3.72", "4.0"])
def test_out_of_range(value):
    with pytest.raises(mv.VersionNotAcceptable) as err:
        mv.negotiate({"OpenStack-API-Version": "volume %s" % value})
    assert str(err.value) == (
        "Version %s is not supported by the API. Minimum is 3.0 and maximum "
        "is 3.71." % value)


def test_versions_compare_numerically():
    assert mv.Version(3, 9) < mv.Version(3, 27) < mv.Version(3, 100)
    assert str(mv.Version.parse("3.44")) == "3.44"
    assert mv.NEW_ATTACH < mv.ATTACHMENT_COMPLETE < mv.ATTACHMENT_MODE


def test_header_values_negotiation_is_cached_but_errors_are_not(
        monkeypatch):
    monkeypatch.setattr(mv.NEGOTIATOR, "_cache", {})
    assert mv.negotiate_header_values("volume 3.44", None) == (3, 44)
    assert mv.negotiate_header_values(None, "3.54") == (3, 54)
    assert mv.negotiate_header_values(None, None) == (3, 0)
    assert mv.negotiate_header_values("volume 3.44", None) == (3, 44)
    for _ in range(2):
        with pytest.raises(mv.VersionNotAcceptable):
            mv.negotiate_header_values("volume 3.99", None)
    assert mv.NEGOTIATOR._cache == {("volume 3.44", None): (3, 44),
                                    (None, "3.54"): (3, 54),
                                    (None, None): (3, 0)}


def test_latest_is_lenient_in_case_and_blanks():
    assert mv.negotiate({"OpenStack-Volume-microversion": " LATEST "}) == (
        3, 71)
