"""Where an attach's time goes: put this directory first on PYTHONPATH
and every Python process started from there (the benchmark and the
volattach-all it starts) appends one line per call of the functions in
TARGETS to $VOLATTACH_ATTACH_TRACE (default
/tmp/volattach-attach-trace.log): wall start, wall end, Class.method,
seconds.  Nothing is changed but the timing; ``analyze.py`` splits each
attach into the server's part (POST until the compute has plugged the
disk) and the guest's (until its console lists it).

    rm -f /tmp/volattach-attach-trace.log
    PYTHONPATH=benchmarks/attach_trace .venv/bin/python \
        -m benchmarks.guest_attach --backend rbd --skip-fake --cycles 10
    .venv/bin/python benchmarks/attach_trace/analyze.py \
        /tmp/volattach-attach-trace.log
"""
import functools
import importlib.abc
import os
import sys
import time

TARGETS = {
    "tests.integration.client": [("ComputeClient", "attach_volume")],
    "tests.guest.conftest": [("Guest", "wait_disk")],
    "volattach.volume_client.cinder": [
        ("VolumeAPI", m) for m in (
            "get", "attachment_create", "attachment_update",
            "attachment_complete")],
    "volattach.conductor.tasks.attach": [
        ("AttachVolumeTask", m) for m in (
            "_execute", "_reserve_block_device_name",
            "_server_to_attach_to", "_check_server_kept")],
    "volattach.conductor.manager": [("ComputeTaskManager", "attach_volume")],
    "volattach.compute.virt.libvirt.volume.rbd": [
        ("RBDVolumeDriver", "connect_volume"),
        ("RBDVolumeDriver", "check_monitors"),
        ("RBDVolumeDriver", "ensure_secret")],
    "volattach.compute.virt.libvirt.volume.nbd": [
        ("NBDVolumeDriver", "connect_volume")],
    "volattach.compute.virt.libvirt.driver": [
        ("LibvirtDriver", "attach_volume"),
        ("LibvirtDriver", "connect_volume")],
    "volattach.volume.backends.rbd": [
        ("RBDBackend", "initialize_connection"), ("RBDBackend", "monitors"),
        ("RBDBackend", "ensure_readonly_identity")],
    "volattach.compute.manager": [
        ("ComputeManager", "attach_volume"),
        ("ComputeManager", "reserve_block_device_name")],
}
OUT = os.environ.get("VOLATTACH_ATTACH_TRACE", "/tmp/volattach-attach-trace.log")


def wrap(cls, name):
    f = getattr(cls, name)

    @functools.wraps(f)
    def w(*a, **k):
        t = time.monotonic()
        t0 = time.time()
        try:
            return f(*a, **k)
        finally:
            with open(OUT, "a") as o:
                o.write("%.6f %.6f %s.%s %.4f\n" % (
                    t0, time.time(), cls.__name__, name,
                    time.monotonic() - t))
    setattr(cls, name, w)


class Loader(importlib.abc.Loader):
    def __init__(self, inner, name):
        self.inner, self.name = inner, name

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        for c, n in TARGETS[self.name]:
            if hasattr(module, c):
                wrap(getattr(module, c), n)


class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in TARGETS:
            return None
        for f in sys.meta_path:
            if f is self:
                continue
            spec = getattr(f, "find_spec", lambda *a: None)(name, path, target)
            if spec:
                spec.loader = Loader(spec.loader, name)
                return spec
        return None


sys.meta_path.insert(0, Finder())
