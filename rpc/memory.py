"""kombu's in-memory transport, polled with an adaptive back-off.

oslo.messaging sets the memory transport's polling interval to 0 (a test
kludge), so every listener thread of the all-in-one process spins on empty
queues: about 70% of a core while idle, measured.  This transport waits
between polls instead, doubling from 0.1 ms up to 5 ms while nothing
arrives and starting again at once when a message does, so a busy process
keeps sub-millisecond hops and an idle one sleeps.  ``install()`` points
kombu's ``memory`` alias at it (kombu's documented extension point).
"""
import socket
import time
from queue import Empty

from kombu import transport as kombu_transport
from kombu.transport import memory

MIN_WAIT = 0.0001
MAX_WAIT = 0.005


class Transport(memory.Transport):

    def drain_events(self, connection, timeout=None):
        start = time.monotonic()
        wait = 0.0
        while True:
            try:
                self.cycle.get(self._deliver, timeout=timeout)
                return
            except Empty:
                if timeout is not None and time.monotonic() - start >= timeout:
                    raise socket.timeout()
                wait = min(wait * 2 or MIN_WAIT, MAX_WAIT)
                time.sleep(wait)


def install():
    kombu_transport.TRANSPORT_ALIASES["memory"] = "volattach.rpc.memory:Transport"
