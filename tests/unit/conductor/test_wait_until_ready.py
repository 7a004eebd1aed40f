"""ConductorAPI.wait_until_ready: a compute's first call through the
conductor asks with a short timeout, again, instead of waiting out
rpc_response_timeout for a message the broker dropped (published before the
conductor's queue existed)."""
import oslo_messaging as messaging

from volattach.conductor import rpcapi


class _FakeClient:
    """prepare(timeout=...).call(...): times out ``failures`` times."""

    def __init__(self, failures):
        self.failures = failures
        self.calls = []

    def prepare(self, **kwargs):
        self.prepared = kwargs
        return self

    def call(self, context, method, **kwargs):
        self.calls.append((self.prepared, method, kwargs))
        if len(self.calls) <= self.failures:
            raise messaging.MessagingTimeout("no reply")
        return 3


def _api(client):
    api = object.__new__(rpcapi.ConductorAPI)
    api.client = client
    return api


def test_returns_at_the_first_answer_after_timeouts():
    client = _FakeClient(failures=2)
    _api(client).wait_until_ready(context=None)
    assert len(client.calls) == 3
    for prepared, method, kwargs in client.calls:
        assert prepared == {"timeout": rpcapi.ConductorAPI.READY_TIMEOUT}
        # an existing conductor RPC (1.0): no version bump, an old
        # conductor answers it too
        assert method == "object_class_action_versions"
        assert (kwargs["objname"], kwargs["objmethod"]) == (
            "Service", "get_minimum_version")
        assert kwargs["object_versions"]["Service"] == "1.0"


def test_gives_up_after_the_attempts_and_lets_the_caller_go_on():
    client = _FakeClient(failures=10 ** 6)
    _api(client).wait_until_ready(context=None)
    assert len(client.calls) == rpcapi.ConductorAPI.READY_ATTEMPTS
