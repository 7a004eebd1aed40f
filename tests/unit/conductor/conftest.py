"""Workflow steps wait out a database or volume-service outage for up to
``transient.TRANSIENT_RETRY_SECONDS`` (30 s): here a test double that keeps
failing gives up within a fraction of a second instead."""
import pytest

from volattach import transient


@pytest.fixture(autouse=True)
def short_transient_retries(monkeypatch):
    monkeypatch.setattr(transient, "TRANSIENT_RETRY_SECONDS", 0.2)
    monkeypatch.setattr(transient, "TRANSIENT_WAIT_START", 0.001)
    monkeypatch.setattr(transient, "TRANSIENT_WAIT_MAX", 0.01)
