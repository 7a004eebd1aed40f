"""Fixtures of the conformance suite (marker ``conformance``).

``real_cinder``: one real OpenStack Cinder 29.0.0 for the whole session,
installed from PyPI into its own virtualenv and run on a loopback port
(``tests/conformance/real_cinder.py``).  The first install takes 30-60 s;
after that it starts in a few seconds.  Unreachable package index: the tests
that need it skip, or fail under CI (``CI=true``).
"""
import pytest

from tests.conformance import real_cinder as real_cinder_mod


@pytest.fixture(scope="session")
def real_cinder(tmp_path_factory):
    """Root URL of a running real Cinder 29 (``<url>/v3/<PROJECT_ID>``)."""
    with real_cinder_mod.start_real_cinder(
            tmp_path_factory.mktemp("real-cinder")) as url:
        yield url
