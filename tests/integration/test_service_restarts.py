"""RabbitMQ and PostgreSQL restart under load (issue 13, "Faults").

A deployment of its own (see conftest.py: ``running_deployment``) on a
RabbitMQ node and a PostgreSQL cluster that this test starts, restarts and
tears down itself (``OwnRabbitNode``, ``OwnPostgresCluster``: other ports,
state under the test's tmp dir; the shared servers of the other tests are
never touched): the volume service, TWO conductor processes (their
periodic reconcile pass off, so that nothing but the workflows can repair),
two computes and the compute API.

``CLIENTS`` threads each own one server and two volumes and attach and
detach them in turn through the compute API, alternating the synchronous
form (a microversion of 2.37-2.100: 200 with the device) and the cast one
(2.101: 202), each time waiting until the volume settles.  While they run,
RabbitMQ is stopped and started again (its node's process ends), a
conductor is asked to stop shortly after and must exit within its
``[DEFAULT] graceful_shutdown_timeout``, then PostgreSQL is stopped and
started again.  Once the clients stop and the work in flight has settled
(bounded waits):

- no answer of the compute API was a 500 (a 503 while a service is down
  is fine, so is a 409 of a conflict): the counts per status are printed;
- every volume is ``available`` and not in its server's
  os-volume_attachments, or ``in-use`` and listed there; a volume that a
  request lost by the broker as it stopped left unsettled (no conductor
  ever began its workflow: oslo.messaging discards a request whose
  acknowledgement failed on the closing connection, and the queues are
  not durable) is repaired by one ``volattach-manage attachments
  reconcile --grace-seconds 0``, and only such volumes may need it;
- no workflow that a conductor began was left unfinished;
- no server has a task state;
- ``volattach-manage attachments reconcile --dry-run --grace-seconds 0``
  finds nothing to repair.

Needs root (the servers run as their own users), rabbitmq-server and
PostgreSQL's server binaries (the tools/start-*.sh scripts install them
when missing); skipped without them, except under CI.
"""
import collections
import os
import shutil
import tempfile
import threading
import time
import uuid

import pytest
import requests

from tests import utils
from tests.integration import conftest
from tests.integration.client import ComputeClient, VolumeClient
# "dry run (grace 0s): found N, repaired N, would repair N, ..."
from tests.integration.test_kill_reconcile import (
    _parse_counts as reconcile_counts)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]

CLIENTS = 4
SYNC_MICROVERSIONS = ("2.37", "2.79", "2.100")
ASYNC_MICROVERSION = "2.101"
ACTIONS_MICROVERSION = "2.84"   # os-instance-actions with events
LOAD_BEFORE = 5         # seconds of load before the first restart
DOWN_SECONDS = 5        # how long each server stays down (longer than the
                        # database layer's own 3 s wait for a connection)
SETTLE_SECONDS = 8      # load after each restart
OPERATION_WAIT = 60     # a client waits this long for one volume to settle
FAILURE_PAUSE = 0.5     # a client's pause after a refused request
FINAL_WAIT = 60         # after the clients stop, for everything to settle
GRACEFUL_SHUTDOWN_TIMEOUT = 10
STOP_MARGIN = 6         # interpreter exit, log flush, a loaded machine
CONDUCTORS = ("conductor", "conductor2")


def _have_postgresql():
    import glob
    return bool(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl")
                or shutil.which("pg_ctl"))


def _require_servers():
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    missing = [name for name in ("rabbitmq-server", "rabbitmqctl")
               if not shutil.which(name, path=path)]
    if not _have_postgresql():
        missing.append("PostgreSQL's server (pg_ctl)")
    reason = None
    if os.geteuid() != 0:
        reason = "starting a RabbitMQ node and a PostgreSQL cluster needs root"
    elif missing:
        reason = ("not installed: %s (tools/start-rabbitmq.sh and "
                  "tools/start-postgres.sh install them)" % ", ".join(missing))
    if reason is None:
        return
    if utils.in_ci():
        pytest.fail("CI: " + reason, pytrace=False)
    pytest.skip(reason)


class Statuses:
    """The answers of one HTTP service, counted per status code."""

    def __init__(self):
        self.lock = threading.Lock()
        self.codes = collections.Counter()
        self.bad = []               # (method, path, status, body) of 5xx != 503
        self.messages = collections.Counter()   # (status, message) of errors

    def add(self, method, path, status, body):
        with self.lock:
            self.codes[status] += 1
            if not isinstance(status, int) or status >= 400:
                self.messages[(status, _message(body))] += 1
            if isinstance(status, int) and status >= 500 and status != 503:
                self.bad.append((method, path, status, body))

    def classes(self):
        counts = collections.Counter()
        for status, count in self.codes.items():
            key = ("%dxx" % (status // 100) if isinstance(status, int)
                   else status)
            counts[key] += count
        return dict(sorted(counts.items()))

    def total(self):
        return sum(self.codes.values())


def _message(body):
    """The message of a fault body, without the ids in it."""
    if isinstance(body, dict) and len(body) == 1:
        fault = next(iter(body.values()))
        if isinstance(fault, dict):
            body = fault.get("message", fault)
    text = str(body)[:160]
    return " ".join("<id>" if len(word.strip(".,:;'\"")) == 36
                    and word.count("-") == 4 else word
                    for word in text.split())


def _counting(client_class):
    class Counting(client_class):
        def __init__(self, *args, statuses, **kwargs):
            super().__init__(*args, **kwargs)
            self.statuses = statuses

        def request(self, method, path, *args, **kwargs):
            try:
                status, body, headers = super().request(
                    method, path, *args, **kwargs)
            except requests.RequestException as exc:
                self.statuses.add(method, path, type(exc).__name__, None)
                raise
            self.statuses.add(method, path, status, body)
            return status, body, headers
    return Counting


CountingCompute = _counting(ComputeClient)
CountingVolume = _counting(VolumeClient)


@pytest.fixture(scope="module")
def servers_dir():
    """The test's state: a tmp dir the servers' own users (postgres,
    rabbitmq) can reach (pytest's tmp dirs are root's alone); removed at
    the end, its logs kept when the test failed."""
    path = tempfile.mkdtemp(prefix="volattach-restarts-")
    os.chmod(path, 0o711)
    yield path
    for data in ("rabbit/mnesia", "postgres/data", "deployment/state"):
        shutil.rmtree(os.path.join(path, data), ignore_errors=True)
    if not conftest._FAILED_TESTS and os.environ.get(
            "VOLATTACH_TEST_KEEP") != "1":
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def services(servers_dir):
    """(rabbit, postgres): the test's own RabbitMQ node and PostgreSQL
    cluster, running; torn down whatever happens."""
    _require_servers()
    rabbit = conftest.OwnRabbitNode(os.path.join(servers_dir, "rabbit"))
    postgres = conftest.OwnPostgresCluster(
        os.path.join(servers_dir, "postgres"))
    try:
        rabbit.start()
        postgres.start()
        yield rabbit, postgres
    finally:
        conftest._best_effort(rabbit.destroy)
        conftest._best_effort(postgres.destroy)


def _prepare(dep):
    overrides = {"DEFAULT": {"graceful_shutdown_timeout":
                             GRACEFUL_SHUTDOWN_TIMEOUT},
                 # only the workflows may repair: the test checks that
                 # they leave nothing behind
                 "conductor": {"reconcile_interval": 0}}
    for number, name in enumerate(CONDUCTORS, 1):
        # Two processes that share the conductors' queues, each with its
        # own services row.
        conf = {"DEFAULT": overrides["DEFAULT"],
                "conductor": dict(overrides["conductor"],
                                  host="restarts-conductor%d" % number)}
        dep.add_daemon(name, "volattach-conductor", overrides=conf)


@pytest.fixture(scope="module")
def restarts_deployment(services, servers_dir):
    rabbit, postgres = services
    workdir = os.path.join(servers_dir, "deployment")
    os.makedirs(workdir)
    with conftest.running_deployment(
            workdir, rabbit_url=rabbit.url, pg_url=postgres.url,
            rabbit_node=rabbit.node, prepare=_prepare) as dep:
        yield dep, rabbit, postgres
        if conftest._FAILED_TESTS:
            conftest._LOG_REPORT.append(
                "----- the test's RabbitMQ node %s\n%s\n"
                "----- the test's PostgreSQL cluster\n%s" % (
                    rabbit.node, rabbit.log_tail(), postgres.log_tail()))


class Client(threading.Thread):
    """Attaches and detaches its volumes to its server until stopped."""

    def __init__(self, index, dep, server_id, volume_ids, stop,
                 api_statuses, volume_statuses):
        super().__init__(name="client-%d" % index, daemon=True)
        self.index = index
        self.server_id = server_id
        self.volume_ids = volume_ids
        self.stop = stop
        self.compute = CountingCompute(dep.api_url, statuses=api_statuses)
        self.volumes = CountingVolume(dep.volume_url, statuses=volume_statuses)
        self.operations = collections.Counter()
        self.unsettled = []
        self.unfinished = []
        self.errors = []

    def run(self):
        turn = 0
        try:
            while not self.stop.is_set():
                volume_id = self.volume_ids[turn % len(self.volume_ids)]
                if turn % 2:
                    microversion = ASYNC_MICROVERSION
                else:
                    microversion = SYNC_MICROVERSIONS[
                        (turn // 2) % len(SYNC_MICROVERSIONS)]
                turn += 1
                self._attach_detach(volume_id, microversion)
        except Exception as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(repr(exc))
        finally:
            self.compute.close()
            self.volumes.close()

    def _call(self, what, fn, *args, **kwargs):
        """(status, request id) of one request, counted per outcome."""
        try:
            status, _, headers = fn(*args, **kwargs)
            request_id = headers.get("x-openstack-request-id")
        except requests.RequestException as exc:
            status, request_id = type(exc).__name__, None
        self.operations["%s %s" % (what, status)] += 1
        if status not in (200, 202):
            time.sleep(FAILURE_PAUSE)
        return status, request_id

    def _attach_detach(self, volume_id, microversion):
        status, request_id = self._call(
            "attach@%s" % microversion, self.compute.attach_volume,
            self.server_id, volume_id, microversion=microversion)
        # a cast (202), or a call that got no answer in time (503), leaves
        # the workflow running: wait for its end before judging the volume
        self._wait_workflow(request_id, "compute_attach_volume")
        state = self._settle(volume_id)
        if state != ("in-use", True) or self.stop.is_set():
            return
        status, request_id = self._call(
            "detach", self.compute.detach_volume, self.server_id, volume_id,
            microversion=microversion)
        if status == 202:
            self._wait_workflow(request_id, "compute_detach_volume")
        self._settle(volume_id)

    def _wait_workflow(self, request_id, event_name):
        """Until the conductor finished (or failed) the event of this
        request, bounded; False when it never did."""
        if request_id is None:
            return False
        deadline = time.monotonic() + OPERATION_WAIT
        while time.monotonic() < deadline:
            try:
                code, body, _ = self.compute.request(
                    "GET", "/servers/%s/os-instance-actions/%s"
                    % (self.server_id, request_id),
                    microversion=ACTIONS_MICROVERSION)
            except requests.RequestException:
                code = body = None
            if code == 404:
                return False            # the API refused before recording
            started = False
            if code == 200:
                events = body["instanceAction"].get("events") or []
                if any(e["event"] == event_name and e.get("finish_time")
                       for e in events):
                    return True
                started = any(e["event"] == event_name for e in events)
            time.sleep(0.3)
        # started: a conductor began the workflow (its event exists); not
        # started: no conductor ever took the request
        self.unfinished.append((request_id, event_name, started))
        return False

    def _state(self, volume_id):
        """(volume status, listed in the server's attachments), or None
        while either cannot be read."""
        try:
            code, body, _ = self.volumes.show_volume(volume_id)
            if code != 200:
                return None
            status = body["volume"]["status"]
            code, body, _ = self.compute.list_volume_attachments(
                self.server_id)
            if code != 200:
                return None
        except requests.RequestException:
            return None
        listed = any(a["volumeId"] == volume_id
                     for a in body["volumeAttachments"])
        return status, listed

    def _settle(self, volume_id):
        deadline = time.monotonic() + OPERATION_WAIT
        state = None
        while time.monotonic() < deadline:
            state = self._state(volume_id)
            if state in (("in-use", True), ("available", False)):
                return state
            time.sleep(0.3)
        self.unsettled.append((volume_id, state))
        return state


def _create_servers_and_volumes(dep, api_statuses, volume_statuses):
    compute = CountingCompute(dep.api_url, microversion="2.37",
                              statuses=api_statuses)
    volumes = CountingVolume(dep.volume_url, statuses=volume_statuses)
    try:
        servers = []
        for index in range(CLIENTS):
            code, body, _ = compute.create_server(
                name="restarts-%d-%s" % (index, uuid.uuid4().hex[:6]))
            assert code == 202, (code, body)
            servers.append(body["server"]["id"])
        pairs = []
        for index, server_id in enumerate(servers):
            vols = []
            for _ in range(2):
                code, body, _ = volumes.create_volume(size=1)
                assert code == 202, (code, body)
                vols.append(body["volume"]["id"])
            pairs.append((server_id, vols))
        for server_id, vols in pairs:
            compute.wait_for_server_status(server_id, "ACTIVE", timeout=60)
            for volume_id in vols:
                volumes.wait_for_volume_status(volume_id, "available")
        return pairs
    finally:
        compute.close()
        volumes.close()


def _wait_services_up(dep, since, timeout=60):
    """Until every conductor and compute has a heartbeat newer than
    ``since`` (they reach the database and the broker again)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            services = dep.services()
        except (requests.RequestException, ValueError) as exc:
            services, last = None, exc
        if services:
            last = services
            fresh = [s for s in services
                     if s.get("binary") in ("volattach-conductor",
                                            "volattach-compute")
                     and conftest._timestamp(s.get("updated_at")) >= since]
            if len(fresh) >= 1 + len(dep.compute_hosts):
                return
        time.sleep(0.5)
    raise AssertionError("services not up again within %ss: %s"
                         % (timeout, last))


def _restart_rabbit(dep, rabbit, timings):
    started = time.monotonic()
    rabbit.stop()
    time.sleep(DOWN_SECONDS)
    rabbit.start()
    timings["rabbitmq down"] = round(time.monotonic() - started, 1)
    since = time.time()
    # a conductor asked to stop shortly after the broker came back
    time.sleep(1)
    stopping = time.monotonic()
    returncode = dep.stop("conductor2",
                          timeout=GRACEFUL_SHUTDOWN_TIMEOUT + STOP_MARGIN)
    seconds = time.monotonic() - stopping
    timings["conductor2 stop after the broker restart"] = round(seconds, 1)
    timings["conductor2 exit status"] = returncode
    dep.start("conductor2")
    _wait_services_up(dep, since)
    return seconds, returncode


def _restart_postgres(dep, postgres, timings):
    started = time.monotonic()
    postgres.stop()
    time.sleep(DOWN_SECONDS)
    postgres.start()
    timings["postgresql down"] = round(time.monotonic() - started, 1)
    _wait_services_up(dep, time.time())


def _final_state(dep, pairs, volume_statuses):
    compute = ComputeClient(dep.api_url, microversion="2.37")
    volumes = CountingVolume(dep.volume_url, statuses=volume_statuses)
    try:
        state = {}
        for server_id, vols in pairs:
            code, body, _ = compute.show_server(server_id)
            assert code == 200, (code, body)
            server = body["server"]
            code, body, _ = compute.list_volume_attachments(server_id)
            assert code == 200, (code, body)
            listed = {a["volumeId"] for a in body["volumeAttachments"]}
            for volume_id in vols:
                code, body, _ = volumes.show_volume(volume_id)
                assert code == 200, (code, body)
                volume = body["volume"]
                state[(server_id, volume_id)] = (
                    volume["status"], volume_id in listed,
                    len(volume.get("attachments") or []),
                    server["status"], server.get("OS-EXT-STS:task_state"))
        return state
    finally:
        compute.close()
        volumes.close()


def _consistent(entry):
    status, listed, attachments, server_status, task_state = entry
    return (task_state is None and server_status == "ACTIVE"
            and ((status == "in-use" and listed and attachments == 1)
                 or (status == "available" and not listed
                     and attachments == 0)))


def test_rabbitmq_and_postgresql_restart_under_load(
        restarts_deployment, capsys):
    dep, rabbit, postgres = restarts_deployment
    began = time.monotonic()
    api_statuses, volume_statuses = Statuses(), Statuses()
    pairs = _create_servers_and_volumes(dep, api_statuses, volume_statuses)

    stop = threading.Event()
    clients = [Client(index, dep, server_id, vols, stop, api_statuses,
                      volume_statuses)
               for index, (server_id, vols) in enumerate(pairs)]
    timings = {}
    try:
        for client in clients:
            client.start()
        time.sleep(LOAD_BEFORE)
        stop_seconds, stop_status = _restart_rabbit(dep, rabbit, timings)
        time.sleep(SETTLE_SECONDS)
        _restart_postgres(dep, postgres, timings)
        time.sleep(SETTLE_SECONDS)
    finally:
        stop.set()
        load_end = time.monotonic()
        for client in clients:
            client.join(OPERATION_WAIT * 2 + 10)
    timings["clients joined after"] = round(time.monotonic() - load_end, 1)

    deadline = time.monotonic() + FINAL_WAIT
    while True:
        state = _final_state(dep, pairs, volume_statuses)
        wrong = {key: entry for key, entry in state.items()
                 if not _consistent(entry)}
        if not wrong or time.monotonic() >= deadline:
            break
        time.sleep(1)
    timings["settled after"] = round(time.monotonic() - load_end, 1)

    # A request the broker lost as it stopped (oslo.messaging discards a
    # request whose acknowledgement failed on the closing connection, and
    # the queues are not durable) never starts its workflow: the reconcile
    # pass finishes what it left (README, "Faults").  Only such requests
    # may leave a volume unsettled; the pass must repair each of them.
    unfinished = [u for c in clients for u in c.unfinished]
    lost = [u for u in unfinished if not u[2]]
    left_to_reconcile = dict(wrong)
    repair = None
    if wrong and len(wrong) <= len(lost):
        repair = dep.manage("attachments", "reconcile", "--grace-seconds", "0")
        state = _final_state(dep, pairs, volume_statuses)
        wrong = {key: entry for key, entry in state.items()
                 if not _consistent(entry)}

    dry = dep.manage("attachments", "reconcile", "--dry-run",
                     "--grace-seconds", "0")
    timings["total"] = round(time.monotonic() - began, 1)

    operations = collections.Counter()
    for client in clients:
        operations.update(client.operations)
    unsettled = [u for c in clients for u in c.unsettled]
    with capsys.disabled():
        print("\ncompute API: %d requests, by class %s, by status %s"
              % (api_statuses.total(), api_statuses.classes(),
                 dict(sorted(api_statuses.codes.items(), key=str))))
        print("volume service: %d requests, by class %s"
              % (volume_statuses.total(), volume_statuses.classes()))
        print("operations: %s" % dict(sorted(operations.items())))
        for (status, message), count in sorted(
                api_statuses.messages.items(), key=str):
            print("  compute API %s x%d: %s" % (status, count, message))
        print("timings (s): %s" % timings)
        print("workflows that never finished: %s; volumes a client saw "
              "unsettled: %s" % (unfinished, unsettled))
        print("volumes: %s" % collections.Counter(
            entry[0] for entry in state.values()))
        if repair is not None:
            print("left by requests the broker lost %s, repaired by the "
                  "reconcile pass: %s" % (left_to_reconcile,
                                          repair.stdout.strip()))
        print(dry.stdout.strip())

    assert not [c.name for c in clients if c.is_alive()], "clients hang"
    assert not [(c.name, c.errors) for c in clients if c.errors]
    assert api_statuses.bad == [], api_statuses.bad
    # it stopped by itself (0), or gave up at the limit (1, logged); a
    # SIGKILL of the harness after the margin is -9
    assert stop_seconds < GRACEFUL_SHUTDOWN_TIMEOUT + STOP_MARGIN \
        and stop_status in (0, 1), (stop_seconds, stop_status)
    # no workflow that began was left half done
    assert not [u for u in unfinished if u[2]], unfinished
    assert wrong == {}, (wrong, left_to_reconcile, lost)
    if repair is not None:
        assert repair.returncode == 0, repair.stdout + repair.stderr
        assert reconcile_counts(repair.stdout)["repaired"] == len(
            left_to_reconcile), repair.stdout
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert reconcile_counts(dry.stdout)["found"] == 0, dry.stdout
    # the load was real: attaches of both forms succeeded, and so did
    # detaches
    assert any(k.startswith("attach@2.101 202") for k in operations), operations
    assert any(k.startswith("attach@2.") and k.endswith(" 200")
               for k in operations), operations
    assert operations["detach 202"] > 0, operations
