"""The tempest-style scenarios (tests/tempest_style/scenarios.py) against
the in-process deployment: every role in this process over the in-memory
transport, the compute API and volume service over real HTTP.

tempest's ServersClient and response schemas drive 2.1 .. 2.100; plain HTTP
drives 2.101 .. 2.104.  Here the scenarios can also look inside the
compute's fake virt driver (which devices the guest has).
"""
import pytest

from volattach import objects
from tests.tempest_style import scenarios
from volattach import context


@pytest.fixture
def env(deployment):
    def guest_devices(server_id):
        host = objects.Instance.get_by_uuid(context.get_admin_context(),
                                            server_id).host
        guest = deployment.computes[host].driver.guests.get(server_id) or {}
        return dict(guest.get("devices", {}))

    env = scenarios.Env(deployment.api_url, deployment.volume_url,
                        guest_devices=guest_devices)
    yield env
    env.cleanup()


@pytest.mark.parametrize("scenario", scenarios.SCENARIOS,
                         ids=[s.__name__ for s in scenarios.SCENARIOS])
def test_scenario(env, scenario):
    scenario(env)
