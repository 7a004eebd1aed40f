"""Waiting in a workflow for an event another service posts about a server
(Nova's compute ``InstanceEvents`` / ``wait_for_instance_event``, here in
the conductor, which runs the workflows): the rebuild of a volume-backed
server (compute API 2.93) waits for the volume service's
``volume-reimaged`` after its ``os-reimage``.

A workflow registers what it waits for *before* it asks for it
(``prepare``), so an event that comes back at once is not missed; the
compute API hands every conductor the events (conductor task API 1.9, a
fanout cast) and ``deliver`` wakes the waiter of this process, if any.  One
table per process: every conductor's task manager shares it.
"""
import threading

from volattach import exception


class EventWaitTimeout(exception.VolattachException):
    msg_fmt = ("Timed out after %(timeout)s seconds waiting for the event "
               "%(name)s of server %(instance_uuid)s.")


class EventFailed(exception.VolattachException):
    msg_fmt = ("The %(name)s event of server %(instance_uuid)s reported "
               "a failure (status %(status)s).")


class _Waiter:
    def __init__(self, key):
        self.key = key
        self.event = None
        self._done = threading.Event()

    def wait(self, timeout):
        if not self._done.wait(timeout):
            instance_uuid, name, tag = self.key
            raise EventWaitTimeout(timeout=timeout, name="%s-%s" % (name, tag),
                                   instance_uuid=instance_uuid)
        if self.event.status == "failed":
            raise EventFailed(name=self.event.key,
                              instance_uuid=self.event.instance_uuid,
                              status=self.event.status)
        return self.event


class InstanceEvents:
    def __init__(self):
        self._lock = threading.Lock()
        self._waiters = {}

    def prepare(self, instance_uuid, name, tag):
        """Register a wait for event ``name`` (``tag``) of the server; call
        ``wait(timeout)`` on the result, and ``forget`` it when done."""
        waiter = _Waiter((instance_uuid, name, tag))
        with self._lock:
            self._waiters[waiter.key] = waiter
        return waiter

    def forget(self, waiter):
        with self._lock:
            if self._waiters.get(waiter.key) is waiter:
                del self._waiters[waiter.key]

    def deliver(self, event):
        """Wake the waiter of ``event`` in this process; False when none
        waits for it here (another conductor's, or nobody's)."""
        key = (event.instance_uuid, event.name, event.tag)
        with self._lock:
            waiter = self._waiters.pop(key, None)
        if waiter is None:
            return False
        waiter.event = event
        waiter._done.set()
        return True


EVENTS = InstanceEvents()
