"""How long an RPC client takes to move to a live RabbitMQ node when the
node it is connected to dies (benchmarks/README.md, "RabbitMQ failover").

Needs the cluster of tools/start-rabbitmq-cluster.sh (root: it SIGKILLs and
restarts a node).  A server and a client of one topic (quorum queues), on
volattach's rpc module and the cluster's URL; the client calls every
``--interval`` seconds.  Node 1, 2, 3 (where round-robin failover
puts the clients in turn) is SIGKILLed (``--rounds`` times) and started
again; per round it prints when the first answer came after the kill,
the gap since the last answer before it, and the calls that failed
meanwhile (a 503 at the API's edge).

    .venv/bin/python -m benchmarks.rabbit_failover --rounds 3
"""
import argparse
import os
import signal
import subprocess
import sys
import threading
import time

import oslo_messaging as messaging

CLUSTER_DIR = "/var/lib/volattach-rabbitmq-cluster"
TOOLS = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "tools")


class Echo:
    target = messaging.Target(version="1.0")

    def ping(self, ctxt, n):
        return n


def _start_cluster():
    out = subprocess.run([os.path.join(TOOLS, "start-rabbitmq-cluster.sh")],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--interval", type=float, default=0.05)
    parser.add_argument("--heartbeat", type=int, default=None,
                        help="[oslo_messaging_rabbit] heartbeat_timeout_threshold")
    args = parser.parse_args(argv)

    from volattach import conf as volattach_conf
    from volattach import context
    from volattach import rpc
    url = _start_cluster()
    conf = volattach_conf.CONF
    conf([], project="volattach")
    rpc._rabbit_defaults(conf)
    conf.set_override("rabbit_quorum_queue", True, "oslo_messaging_rabbit")
    if args.heartbeat is not None:
        conf.set_override("heartbeat_timeout_threshold", args.heartbeat,
                          "oslo_messaging_rabbit")
    rpc.init(conf, url=url)
    target = messaging.Target(topic="failover_bench", server="s1")
    server = rpc.get_server(target, [Echo()])
    server.start()
    client = rpc.get_client(messaging.Target(topic="failover_bench"),
                            timeout=5)
    ctxt = context.get_admin_context()
    answers, failures = [], []
    stop = threading.Event()

    def loop():
        n = 0
        while not stop.is_set():
            n += 1
            try:
                client.call(ctxt, "ping", n=n)
                answers.append(time.monotonic())
            except Exception as error:     # noqa: BLE001 - counted
                failures.append((time.monotonic(), type(error).__name__))
            time.sleep(args.interval)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    time.sleep(3)
    ports = [int(p) for p in os.environ.get(
        "VOLATTACH_RABBIT_CLUSTER_PORTS", "5681 5682 5683").split()]
    for round_no in range(args.rounds):
        # round-robin failover: the clients sit on the first node, then,
        # once it died, on the next one
        index = round_no % 3
        port = ports[index]
        pid_file = os.path.join(CLUSTER_DIR, "vacluster%d" % (index + 1),
                                "rabbit.pid")
        with open(pid_file) as f:
            pid = int(f.read())
        before = len(failures)
        killed = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        while not answers or answers[-1] < killed:
            time.sleep(0.01)
            if time.monotonic() - killed > 120:
                print("no answer within 120 s", file=sys.stderr)
                break
        last_before = max([a for a in answers if a < killed], default=killed)
        first_after = min(a for a in answers if a >= killed)
        print("round %d: killed the node on port %s: first answer %.2f s "
              "after the kill (gap %.2f s), %d call(s) failed meanwhile %s"
              % (round_no + 1, port, first_after - killed,
                 first_after - last_before, len(failures) - before,
                 sorted({f[1] for f in failures[before:]})), flush=True)
        _start_cluster()
        time.sleep(3)
    stop.set()
    thread.join(10)
    server.stop()
    server.wait()
    rpc.cleanup()


if __name__ == "__main__":
    sys.exit(main())
