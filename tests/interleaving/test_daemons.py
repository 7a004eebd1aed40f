"""Seeded interleavings over the real daemons (volattach-api under
gunicorn, conductor, two computes, volume service) on RabbitMQ and
PostgreSQL: the same batches and invariants as the all-in-one tier
(``engine.py``), with ``volattach-manage attachments reconcile --dry-run``
run as its own process after every batch; and the race of issue 22 item 8
(a live migration, a detach and a 2.101 attach sent together) round after
round, as ``test_known_races`` sends it in one process."""
import pytest

from tests.integration import conftest as integration
from tests.interleaving import conftest as tier
from tests.interleaving import engine
from tests.interleaving import test_all_in_one
from tests.interleaving import test_known_races

pytestmark = pytest.mark.integration

SEEDS = tier.seeds([1311])
STEPS = tier.steps(8)


@pytest.fixture(scope="module")
def daemons(tmp_path_factory):
    with integration.running_deployment(
            tmp_path_factory.mktemp("interleaving")) as dep:
        yield dep


def _dry_run(dep):
    def dry_run():
        result = dep.manage("attachments", "reconcile", "--dry-run",
                            "--grace-seconds", "0", "--no-unplug",
                            timeout=120)
        if result.returncode != 0:
            return ["exit status %s: %s%s" % (result.returncode,
                                              result.stdout, result.stderr)]
        return test_all_in_one.parse_manage_output(result.stdout)
    return dry_run


@pytest.mark.timeout(420)
@pytest.mark.parametrize("seed", SEEDS)
def test_interleavings_keep_the_invariants_on_the_daemons(daemons, seed):
    run = engine.Run(daemons.api_url, daemons.volume_url, seed,
                     _dry_run(daemons), servers=3, volumes=5, width=4,
                     settle_timeout=60)
    run.run(steps=STEPS)
    print("interleaving (daemons) seed %s: %s\n  %s" % (
        seed, run.counts.line(), run.counts.operations_line()))
    assert run.counts.operations >= 2 * min(STEPS, run.step_no)
    assert not run.violations, run.describe_violations()


@pytest.mark.timeout(420)
def test_attach_and_detach_racing_live_migration_on_the_daemons(daemons):
    """Computes in processes of their own (a per-instance lock each), the
    workflows over RabbitMQ: every round ends with the attachments on the
    server's host (``engine.Run.check``)."""
    rounds = 6
    run = engine.Run(daemons.api_url, daemons.volume_url, 1324,
                     _dry_run(daemons), servers=0, volumes=0,
                     settle_timeout=60)
    run.race(test_known_races._migrate_detach_and_attach, rounds)
    print("race (daemons) seed 1324: %s\n  %s" % (
        run.counts.line(), run.counts.operations_line()))
    assert run.counts.interleavings == rounds or run.violations
    assert not run.violations, run.describe_violations()
