"""The tempest-style scenarios (tests/tempest_style/scenarios.py) against
the real daemons: gunicorn API, conductor, two computes and the volume
service as separate processes over RabbitMQ and PostgreSQL (conftest.py).

Every scenario runs here as in the functional suite: tempest's ServersClient
and response schemas drive 2.1 .. 2.100 (2.1, 2.19/2.20, 2.49, 2.51, 2.58,
2.59/2.60, 2.62, 2.70, 2.75, 2.78/2.79, 2.84/2.85, 2.88/2.89, 2.100); plain
HTTP drives 2.101 .. 2.104.  Failure injection and configuration changes are the
functional suite's (the daemons here run on the deployment's fixed
configuration: shelved_offload_time 0, no injected failures).
"""
import pytest

from tests.tempest_style import clients
from tests.tempest_style import scenarios

pytestmark = pytest.mark.integration


@pytest.fixture
def env(deployment):
    env = scenarios.Env(deployment.api_url, deployment.volume_url,
                        waiters=clients.Waiters(timeout=60, interval=0.25))
    yield env
    env.cleanup()


@pytest.mark.parametrize("scenario", scenarios.SCENARIOS,
                         ids=[s.__name__ for s in scenarios.SCENARIOS])
def test_scenario(env, scenario):
    scenario(env)
