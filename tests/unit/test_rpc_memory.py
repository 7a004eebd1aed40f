"""The adaptive in-memory transport: delivers what arrives, times out when
nothing does, and sleeps (does not spin) while idle."""
import socket
import threading
import time

import pytest
from kombu import Connection, Exchange, Queue

from volattach.rpc import memory


@pytest.fixture
def connection():
    memory.install()
    with Connection("memory://") as conn:
        assert isinstance(conn.transport, memory.Transport)
        yield conn


def test_delivers_a_message_published_later(connection):
    queue = Queue("q-deliver", Exchange("x-deliver"), routing_key="k")
    got = []
    with connection.Consumer(queue, callbacks=[lambda body, msg: (got.append(body), msg.ack())]):
        producer = connection.Producer()
        threading.Timer(0.05, lambda: producer.publish(
            {"n": 1}, exchange=queue.exchange, routing_key="k", declare=[queue])).start()
        connection.drain_events(timeout=2)
    assert got == [{"n": 1}]


def test_times_out_when_nothing_arrives(connection):
    queue = Queue("q-empty", Exchange("x-empty"), routing_key="k")
    with connection.Consumer(queue, callbacks=[]):
        start = time.monotonic()
        with pytest.raises(socket.timeout):
            connection.drain_events(timeout=0.2)
        assert 0.2 <= time.monotonic() - start < 1.0


def test_idle_wait_sleeps_instead_of_spinning(connection):
    queue = Queue("q-idle", Exchange("x-idle"), routing_key="k")
    with connection.Consumer(queue, callbacks=[]):
        cpu = time.thread_time()
        with pytest.raises(socket.timeout):
            connection.drain_events(timeout=0.5)
        # a spinning poll would burn ~0.5 s of this thread's CPU
        assert time.thread_time() - cpu < 0.1
