"""conductor.instance_events: a workflow's wait for an event posted to the
compute API (the 2.93 rebuild's volume-reimaged)."""
import threading

import pytest

from volattach import objects
from volattach.conductor import instance_events

objects.register_all()
SERVER = "6f1e4a0e-0000-4000-8000-000000000001"


def _event(status="completed", tag="vol", name="volume-reimaged"):
    return objects.InstanceExternalEvent(instance_uuid=SERVER, name=name,
                                         status=status, tag=tag, data={})


def test_an_event_delivered_before_the_wait_is_not_missed():
    events = instance_events.InstanceEvents()
    waiter = events.prepare(SERVER, "volume-reimaged", "vol")
    assert events.deliver(_event())
    assert waiter.wait(0).status == "completed"
    assert not events.deliver(_event())     # nobody waits any more


def test_another_tag_or_name_wakes_nothing():
    events = instance_events.InstanceEvents()
    waiter = events.prepare(SERVER, "volume-reimaged", "vol")
    assert not events.deliver(_event(tag="other"))
    assert not events.deliver(_event(name="volume-extended"))
    with pytest.raises(instance_events.EventWaitTimeout):
        waiter.wait(0)
    events.forget(waiter)
    assert not events.deliver(_event())


def test_a_failed_event_fails_the_wait():
    events = instance_events.InstanceEvents()
    waiter = events.prepare(SERVER, "volume-reimaged", "vol")
    events.deliver(_event(status="failed"))
    with pytest.raises(instance_events.EventFailed):
        waiter.wait(0)


def test_a_wait_is_woken_from_another_thread():
    events = instance_events.InstanceEvents()
    waiter = events.prepare(SERVER, "volume-reimaged", "vol")
    thread = threading.Thread(target=events.deliver, args=(_event(),))
    thread.start()
    assert waiter.wait(30).tag == "vol"
    thread.join()
