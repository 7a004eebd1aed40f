"""Virt drivers: what a compute asks of its hypervisor.

``load_driver`` builds the configured driver; ``logged(driver)`` is what
the compute manager calls: the same driver, each public call logged at
DEBUG (``driver <method> <instance uuid>``) with the request id of the
thread's context, whichever driver it is (the libvirt driver logs its
libvirt calls too: ``libvirt.host``).
"""
import functools
import logging

LOG = logging.getLogger(__name__)


def load_driver(name, host):
    if name == "fake":
        from volattach.compute.virt import fake
        return fake.FakeDriver(host)
    if name == "libvirt":
        from volattach.compute.virt.libvirt import driver as libvirt_driver
        return libvirt_driver.LibvirtDriver(host)
    raise ValueError("unknown virt driver %r" % name)


def _instance_of(args):
    """The uuid of the first argument that has one (the instance)."""
    for arg in args[:2]:
        uuid = getattr(arg, "uuid", None)
        if isinstance(uuid, str):
            return uuid
    return "-"


class _LoggedDriver:
    """A driver whose public calls are logged at DEBUG (module doc); its
    attributes are the driver's own, read at each use (a test may replace
    a method of the driver)."""

    def __init__(self, driver):
        object.__setattr__(self, "_driver", driver)

    def __getattr__(self, name):
        attr = getattr(self._driver, name)
        if name.startswith("_") or not callable(attr):
            return attr

        @functools.wraps(attr)
        def call(*args, **kwargs):
            if LOG.isEnabledFor(logging.DEBUG):
                LOG.debug("driver %s %s", name, _instance_of(args))
            return attr(*args, **kwargs)
        return call

    def __setattr__(self, name, value):
        setattr(self._driver, name, value)


def logged(driver):
    """``driver`` with its calls logged at DEBUG (module doc)."""
    return _LoggedDriver(driver)
