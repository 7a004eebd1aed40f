"""The connection to libvirt and its event loop.

libvirt delivers domain events (device removed, removal failed) through
an event loop that must be registered before the connection is opened and
run by a thread; waiters block on a condition until their event comes or
their timeout passes.

``get_connection`` hands out the connection wrapped so that each libvirt
call made through it, and through the domains and secrets it returns, is
logged at DEBUG (``libvirt <call> (domain <name>)``): one hook for every
libvirt call of the driver.
"""
import logging
import threading

LOG = logging.getLogger(__name__)

# The first libvirt that passes an NBD disk's <reconnect delay> on to QEMU
# (``reconnect-delay``); an older one drops it, and a guest then does not
# survive a restart of the volume service's storage daemon.
NBD_RECONNECT_DELAY_VERSION = 9_002_000

_EVENT_LOOP = {"started": False}
_EVENT_LOCK = threading.Lock()


def _start_event_loop(libvirt):
    with _EVENT_LOCK:
        if _EVENT_LOOP["started"]:
            return
        libvirt.virEventRegisterDefaultImpl()

        def run():
            while True:
                libvirt.virEventRunDefaultImpl()

        threading.Thread(target=run, name="libvirt-events",
                         daemon=True).start()
        _EVENT_LOOP["started"] = True


class _Logged:
    """A libvirt connection or domain whose method calls are logged at
    DEBUG (module doc); the domains a call returns are wrapped too."""

    __slots__ = ("_target", "_libvirt", "_label")

    def __init__(self, target, libvirt, label="connection"):
        self._target = target
        self._libvirt = libvirt
        self._label = label

    def __getattr__(self, name):
        attr = getattr(self._target, name)
        if name.startswith("_") or not callable(attr):
            return attr
        label = self._label
        libvirt = self._libvirt

        def call(*args, **kwargs):
            if LOG.isEnabledFor(logging.DEBUG):
                LOG.debug("libvirt %s (%s)", name, label)
            result = attr(*args, **kwargs)
            if isinstance(result, libvirt.virDomain):
                try:
                    domain = "domain %s" % result.name()
                except libvirt.libvirtError:
                    domain = "domain"
                return _Logged(result, libvirt, domain)
            if isinstance(result, libvirt.virSecret):
                return _Logged(result, libvirt, "secret")
            return result
        return call


class Host:

    def __init__(self, uri):
        import libvirt
        self.libvirt = libvirt
        self.uri = uri
        _start_event_loop(libvirt)
        self._cond = threading.Condition()
        self._waiting = {}       # (domain uuid, alias) -> [results]
        self._conn = None
        self._lock = threading.Lock()

    def get_connection(self):
        with self._lock:
            if self._conn is None or not self._conn.isAlive():
                conn = self.libvirt.open(self.uri)
                if self._conn is None:
                    self._check_version(conn)
                lv = self.libvirt
                conn.domainEventRegisterAny(
                    None, lv.VIR_DOMAIN_EVENT_ID_DEVICE_REMOVED,
                    self._removed, None)
                conn.domainEventRegisterAny(
                    None, lv.VIR_DOMAIN_EVENT_ID_DEVICE_REMOVAL_FAILED,
                    self._removal_failed, None)
                self._conn = conn
            return _Logged(self._conn, self.libvirt)

    @staticmethod
    def _check_version(conn):
        """Warn when ``conn``'s libvirt drops NBD reconnect delays."""
        version = conn.getLibVersion()
        if version < NBD_RECONNECT_DELAY_VERSION:
            LOG.warning(
                "libvirt %d.%d.%d drops the <reconnect delay> of NBD disks "
                "(libvirt 9.2 and later keep it): a guest will not survive a "
                "restart of the volume service's qemu-storage-daemon",
                version // 1_000_000, version // 1000 % 1000, version % 1000)

    def _record(self, dom, alias, removed):
        with self._cond:
            results = self._waiting.get((dom.UUIDString(), alias))
            if results is not None:
                results.append(removed)
                self._cond.notify_all()

    def _removed(self, conn, dom, alias, opaque):
        self._record(dom, alias, True)

    def _removal_failed(self, conn, dom, alias, opaque):
        self._record(dom, alias, False)

    def expect_device_event(self, uuid, alias):
        """Start collecting device events of (domain, alias): call before
        asking for the removal, then wait_device_event, then forget."""
        with self._cond:
            self._waiting[(uuid, alias)] = []

    def wait_device_event(self, uuid, alias, timeout):
        """True when the device was removed, False when its removal
        failed, None on timeout."""
        key = (uuid, alias)
        with self._cond:
            if not self._cond.wait_for(lambda: self._waiting.get(key),
                                       timeout=timeout):
                return None
            return self._waiting[key].pop(0)

    def forget_device_event(self, uuid, alias):
        with self._cond:
            self._waiting.pop((uuid, alias), None)
