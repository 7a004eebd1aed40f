"""volattach.service.stop_within: the bound [DEFAULT] graceful_shutdown_timeout
puts on stopping a daemon's services."""
import threading
import time

from volattach import service


class _Service:
    def __init__(self, name, block=None, fail=False):
        self.binary = name
        self.block = block
        self.fail = fail
        self.stopped = False

    def stop(self):
        if self.block is not None:
            self.block.wait(30)
        if self.fail:
            raise RuntimeError("broken stop")
        self.stopped = True


def test_services_that_stop_are_stopped_in_order_within_the_limit():
    order = []
    first, second = _Service("a"), _Service("b")
    first.stop = lambda: order.append("a")
    second.stop = lambda: order.append("b")
    assert service.stop_within([first, second], 5) is True
    assert order == ["a", "b"]


def test_a_failing_stop_does_not_keep_the_others_from_stopping():
    broken, fine = _Service("a", fail=True), _Service("b")
    assert service.stop_within([broken, fine], 5) is True
    assert fine.stopped


def test_a_stop_that_hangs_gives_up_at_the_limit():
    hang = threading.Event()
    stuck = _Service("stuck", block=hang)
    started = time.monotonic()
    try:
        assert service.stop_within([stuck], 0.5) is False
        assert 0.4 < time.monotonic() - started < 5
        assert not stuck.stopped
    finally:
        hang.set()


def test_giving_up_logs_where_the_stop_hangs(caplog):
    """The operator learns what the exit cuts short: the stack of the
    thread that is still stopping."""
    hang = threading.Event()
    try:
        with caplog.at_level("WARNING", logger="volattach.service"):
            assert service.stop_within([_Service("stuck", block=hang)],
                                       0.3) is False
    finally:
        hang.set()
    [record] = [r for r in caplog.records
                if "graceful_shutdown_timeout" in r.getMessage()]
    text = record.getMessage()
    assert "thread graceful-stop:" in text
    assert "in stop" in text and "self.block.wait(30)" in text


def test_a_second_signal_gives_up_at_once():
    hang, again = threading.Event(), threading.Event()
    again.set()
    started = time.monotonic()
    try:
        assert service.stop_within([_Service("s", block=hang)], 0, again) is False
        assert time.monotonic() - started < 2
    finally:
        hang.set()


def test_no_limit_waits_for_a_slow_stop():
    release = threading.Event()
    slow = _Service("slow", block=release)
    threading.Timer(0.3, release.set).start()
    assert service.stop_within([slow], 0) is True
    assert slow.stopped
