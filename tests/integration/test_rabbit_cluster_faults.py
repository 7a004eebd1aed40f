"""A three-node RabbitMQ cluster with quorum queues under faults (issue 31,
README "Faults").

The test starts a cluster of its own (tools/start-rabbitmq-cluster.sh on
free ports, its state in a tmp dir) and a deployment on it
(``rabbit_quorum_queue = true``, two conductors, their reconcile pass
off, PostgreSQL of ``VOLATTACH_TEST_PG_URL``).  ``CLIENTS`` threads each
own a server and a volume and attach and detach it at 2.101, waiting for
the volume to settle after each 202, while:

1. one node is SIGKILLed, then started again;
2. the three nodes are restarted one after another (rabbitmqctl stop).

(A conductor SIGKILLed in the middle of a workflow is not part of it: the
request it had taken is acknowledged as it arrived (oslo.messaging) and
is left to the reconcile pass; README "Faults".)

Then, with no reconcile pass: every 202 ended in the state it asked for,
or in a rollback recorded as a failed instance action; no volume is in a
transitional state; no answer was a 5xx other than 503; the compute API
and the volume service agree on every attachment.

Last, the whole cluster stops for ``OUTAGE`` seconds: an attach then is
answered 503 within seconds and leaves the volume available with no
attachment; once the cluster is back the API answers 202 again.  The
counts and times are printed.

Needs root and rabbitmq-server (skipped without them, except under CI).
"""
import collections
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid

import pytest
import requests

from tests import utils
from tests.integration import conftest
from tests.integration.client import ComputeClient, VolumeClient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

TOOL = os.path.join(os.path.dirname(__file__), "..", "..", "tools",
                    "start-rabbitmq-cluster.sh")
CLIENTS = 8
ASYNC = "2.101"
ACTIONS = "2.84"
SETTLE = 10             # seconds of load between two faults
OPERATION_WAIT = 90     # a client waits this long for its volume
OUTAGE = 20             # seconds the whole cluster stays down
TRANSITIONAL = ("attaching", "detaching", "reserved")


class Cluster:
    """The test's own three nodes (tools/start-rabbitmq-cluster.sh)."""

    def __init__(self, state_dir):
        self.state_dir = state_dir
        self.prefix = "vat%s" % uuid.uuid4().hex[:6]
        ports = set()
        while len(ports) < 3:
            port = utils.free_port()
            if port + 20000 < 65536:
                ports.add(port)
        self.ports = sorted(ports)
        self.nodes = ["%s%d@localhost" % (self.prefix, i) for i in (1, 2, 3)]
        self.url = None

    def _env(self):
        env = dict(os.environ)
        env.update({"VOLATTACH_RABBIT_CLUSTER_PORTS":
                    " ".join(map(str, self.ports)),
                    "VOLATTACH_RABBIT_CLUSTER_NAME": self.prefix,
                    "VOLATTACH_RABBIT_CLUSTER_DIR": self.state_dir})
        return env

    def start(self):
        """Start (or repair) the cluster; returns its transport URL."""
        result = subprocess.run([TOOL], env=self._env(), capture_output=True,
                                text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
        self.url = result.stdout.strip().splitlines()[-1]
        return self.url

    def start_node(self, index):
        """Start one node again with tools/start-rabbitmq.sh (it rejoins
        the cluster by itself: its mnesia remembers it)."""
        env = dict(os.environ)
        name = self.nodes[index].split("@")[0]
        env.update({"VOLATTACH_RABBIT_NODE": self.nodes[index],
                    "VOLATTACH_RABBIT_PORT": str(self.ports[index]),
                    "VOLATTACH_RABBIT_DIST_PORT": str(self.ports[index] + 20000),
                    "VOLATTACH_RABBIT_STATE_DIR":
                        os.path.join(self.state_dir, name)})
        # a file, not a pipe: the node started keeps its stderr open
        log = os.path.join(self.state_dir, "%s.restart.log" % name)
        with open(log, "a") as err:
            code = subprocess.call([os.path.join(os.path.dirname(TOOL),
                                                 "start-rabbitmq.sh")],
                                   env=env, stdout=subprocess.DEVNULL,
                                   stderr=err, timeout=300)
        with open(log) as err:
            assert code == 0, err.read()[-3000:]

    def pid(self, index):
        path = os.path.join(self.state_dir, self.nodes[index].split("@")[0],
                            "rabbit.pid")
        with open(path) as f:
            return int(f.read().strip())

    def kill(self, index):
        pid = self.pid(index)
        os.kill(pid, signal.SIGKILL)
        while os.path.exists("/proc/%d" % pid):
            time.sleep(0.1)

    def stop(self, index):
        exe = shutil.which("rabbitmqctl") or "/usr/sbin/rabbitmqctl"
        pid_file = os.path.join(self.state_dir,
                                self.nodes[index].split("@")[0], "rabbit.pid")
        subprocess.run([exe, "-q", "-n", self.nodes[index], "stop", pid_file],
                       capture_output=True, timeout=120)

    def destroy(self):
        subprocess.run([TOOL, "--stop"], env=self._env(), capture_output=True,
                       timeout=300)
        for index in range(3):
            try:
                os.kill(self.pid(index), signal.SIGKILL)
            except (OSError, ValueError):
                pass


def _require_rabbit():
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    reason = None
    if os.geteuid() != 0:
        reason = "starting RabbitMQ nodes needs root"
    elif not shutil.which("rabbitmq-server", path=path):
        reason = "rabbitmq-server is not installed"
    if reason is None:
        return
    if utils.in_ci():
        pytest.fail("CI: " + reason, pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def cluster():
    _require_rabbit()
    state = tempfile.mkdtemp(prefix="volattach-cluster-")
    os.chmod(state, 0o711)
    cluster = Cluster(state)
    try:
        cluster.start()
        yield cluster
    finally:
        conftest._best_effort(cluster.destroy)
        shutil.rmtree(state, ignore_errors=True)


def _prepare(dep):
    with open(dep.conf_path, "a") as conf:
        conf.write("\n[oslo_messaging_rabbit]\nrabbit_quorum_queue = true\n"
                   "\n[conductor]\nreconcile_interval = 0\n")
    dep.add_daemon("conductor2", "volattach-conductor",
                   overrides={"conductor": {"host": "conductor2",
                                            "reconcile_interval": 0}})


class Load:
    """The clients' answers and the outcome of each 202."""

    def __init__(self):
        self.lock = threading.Lock()
        self.codes = collections.Counter()
        self.bad = []                   # 5xx other than 503
        self.accepted = 0
        self.done = 0
        self.rolled_back = 0
        self.lost = []                  # (op, server, volume, request id)
        self.stop = threading.Event()

    def answer(self, status, body):
        with self.lock:
            self.codes[status] += 1
            if isinstance(status, int) and status >= 500 and status != 503:
                self.bad.append((status, body))


def _failed_action(compute, server_id, request_id):
    code, body, _ = compute.request(
        "GET", "/servers/%s/os-instance-actions/%s" % (server_id, request_id),
        microversion=ACTIONS)
    if code != 200:
        return False
    return any(e["result"] == "Error"
               for e in body["instanceAction"].get("events", []))


def _volume_status(volume, volume_id):
    code, body, _ = volume.show_volume(volume_id)
    return body["volume"]["status"] if code == 200 else None


def _client(dep, load, server_id, volume_id):
    compute = ComputeClient(dep.api_url)
    volume = VolumeClient(dep.volume_url)
    attached = False
    while not load.stop.is_set():
        op, want = (("detach", "available") if attached
                    else ("attach", "in-use"))
        try:
            if attached:
                code, body, headers = compute.detach_volume(
                    server_id, volume_id, microversion=ASYNC)
            else:
                code, body, headers = compute.attach_volume(
                    server_id, volume_id, microversion=ASYNC)
        except requests.RequestException as error:
            load.answer(type(error).__name__, None)
            time.sleep(0.5)
            continue
        load.answer(code, body)
        if code != 202:
            time.sleep(0.5)
            if code in (400, 409):  # the volume is not where we thought
                status = _volume_status(volume, volume_id)
                attached = status == "in-use"
            continue
        request_id = headers.get("x-openstack-request-id")
        with load.lock:
            load.accepted += 1
        deadline = time.monotonic() + OPERATION_WAIT
        status = None
        while time.monotonic() < deadline:
            try:
                status = _volume_status(volume, volume_id)
            except requests.RequestException:
                status = None
            if status == want:
                break
            if status not in TRANSITIONAL + (None,) and \
                    _failed_action(compute, server_id, request_id):
                break
            time.sleep(0.3)
        with load.lock:
            if status == want:
                load.done += 1
                attached = not attached
            elif _failed_action(compute, server_id, request_id):
                load.rolled_back += 1
                attached = status == "in-use"
            else:
                load.lost.append((op, server_id, volume_id, request_id,
                                  status))
                return


def _time_to(fn, limit):
    start = time.monotonic()
    while time.monotonic() - start < limit:
        if fn():
            return time.monotonic() - start
        time.sleep(0.5)
    return None


def test_cluster_faults_lose_no_accepted_request(cluster, tmp_path):
    with conftest.running_deployment(
            tmp_path, rabbit_url=cluster.url, rabbit_node=cluster.nodes[0],
            prepare=_prepare) as dep:
        compute = ComputeClient(dep.api_url)
        volume = VolumeClient(dep.volume_url)
        pairs = [(compute.create_active_server(),
                  volume.create_available_volume()) for _ in range(CLIENTS)]
        load = Load()
        threads = [threading.Thread(target=_client,
                                    args=(dep, load, s, v), daemon=True)
                   for s, v in pairs]
        for thread in threads:
            thread.start()
        timeline = []
        t0 = time.monotonic()

        def mark(what):
            timeline.append("%6.1f s %s" % (time.monotonic() - t0, what))

        time.sleep(SETTLE)
        mark("SIGKILL %s" % cluster.nodes[1])
        cluster.kill(1)
        time.sleep(SETTLE)
        cluster.start_node(1)
        mark("%s back" % cluster.nodes[1])
        time.sleep(SETTLE)
        for index in range(3):
            cluster.stop(index)
            mark("stopped %s" % cluster.nodes[index])
            cluster.start_node(index)
            mark("%s back" % cluster.nodes[index])
            time.sleep(SETTLE / 2)
        time.sleep(SETTLE)
        load.stop.set()
        for thread in threads:
            thread.join(OPERATION_WAIT + 30)
        mark("clients stopped")

        # no reconcile pass: what the workflows left
        transitional, disagree = [], []
        for server_id, volume_id in pairs:
            status = _volume_status(volume, volume_id)
            if status in TRANSITIONAL:
                transitional.append((volume_id, status))
            code, body, _ = compute.list_volume_attachments(server_id)
            listed = [a["volumeId"] for a in body["volumeAttachments"]]
            rows = volume.list_attachments(volume_id=volume_id)[1]
            in_volume_service = bool(rows.get("attachments"))
            if (volume_id in listed) != (status == "in-use") or \
                    in_volume_service != (status == "in-use"):
                disagree.append((server_id, volume_id, status, listed))
        print("\ncluster faults: timeline\n  " + "\n  ".join(timeline))
        print("answers: %s; 202s: %d, done %d, rolled back %d, lost %d" % (
            dict(load.codes), load.accepted, load.done, load.rolled_back,
            len(load.lost)))
        assert not load.bad, load.bad
        assert not load.lost, load.lost
        assert not transitional, transitional
        assert not disagree, disagree
        assert load.accepted >= CLIENTS

        # the whole cluster down: 503 within seconds, nothing left behind
        server_id, volume_id = pairs[0]
        if _volume_status(volume, volume_id) == "in-use":
            compute.detach_volume(server_id, volume_id, microversion=ASYNC)
            volume.wait_for_volume_status(volume_id, "available")
        for index in range(3):
            cluster.kill(index)
        down = time.monotonic()
        started = time.monotonic()
        code, body, _ = compute.attach_volume(server_id, volume_id,
                                              microversion=ASYNC)
        answered = time.monotonic() - started
        assert code == 503, (code, body)
        time.sleep(max(0.0, OUTAGE - (time.monotonic() - down)))
        cluster.start()

        def accepted():
            code, body, _ = compute.attach_volume(server_id, volume_id,
                                                  microversion=ASYNC)
            assert code in (202, 503), (code, body)
            return code == 202
        again = _time_to(accepted, 120)
        print("whole cluster down: attach answered %d in %.1f s; 202 again "
              "%.1f s after the cluster was back" % (code, answered,
                                                     again or -1))
        assert again is not None
        volume.wait_for_volume_status(volume_id, "in-use", timeout=120)
