"""Running a daemon: register in the services table, heartbeat, serve RPC.

``Service`` is used by the conductor and compute daemons and, several at a
time, by volattach-all.  Registration writes the integer SERVICE_VERSION and
the RPC version (and, for a compute, its host connector and the images its
driver can boot) into the service's row; the heartbeat thread bumps
``last_seen_up`` every ``report_interval`` and, when they changed (an
image put in the directory later), writes the images again.  A compute does
all of this through the conductor (``indirection_api``).
"""
import contextlib
import logging
import os
import sys
import threading
import time
import traceback
import uuid as uuidlib

import oslo_messaging as messaging

from volattach import objects
from volattach import rpc
from volattach.objects import base as objects_base
from volattach.objects import service as service_obj
from volattach import context as volattach_context
from volattach.conf import CONF

LOG = logging.getLogger(__name__)


class _IndirectionEndpoint:
    """Runs every call of a wrapped endpoint with thread-local indirection."""

    def __init__(self, endpoint, api):
        self._endpoint = endpoint
        self._api = api
        self.target = endpoint.target

    def __getattr__(self, name):
        attr = getattr(self._endpoint, name)
        if not callable(attr) or name.startswith("_"):
            return attr
        api = self._api

        def call(*args, **kwargs):
            with objects_base.indirection(api):
                return attr(*args, **kwargs)
        return call

    def __dir__(self):
        return dir(self._endpoint)


class Service:

    def __init__(self, binary, host, topic, endpoints, rpc_version,
                 connector=None, indirection_api=None, server_name=None,
                 list_images=None):
        self.binary = binary
        self.host = host
        self.topic = topic
        self.endpoints = endpoints
        self.rpc_version = rpc_version
        self.connector = connector
        # a compute: its driver's list_images (the row's ``images``), and
        # the list its row was last written with
        self.list_images = list_images
        self._reported_images = None
        self.indirection_api = indirection_api
        self.server_name = server_name or host
        self.servers = []
        self.record = None
        self._stop = threading.Event()
        self._heartbeat_thread = None

    def _scope(self):
        if self.indirection_api is not None:
            return objects_base.indirection(self.indirection_api)
        return contextlib.nullcontext()

    def register(self):
        ctxt = volattach_context.get_admin_context()
        with self._scope():
            # through the conductor (a compute): wait until one answers
            indirection_api = objects_base.VolattachObject.indirection_api
            if hasattr(indirection_api, "wait_until_ready"):
                indirection_api.wait_until_ready(ctxt)
            record = objects.Service.get_by_host_and_binary(ctxt, self.host, self.binary)
            if record is None:
                record = objects.Service(ctxt, uuid=str(uuidlib.uuid4()), host=self.host,
                                         binary=self.binary, topic=self.topic,
                                         version=service_obj.SERVICE_VERSION,
                                         rpc_version=self.rpc_version,
                                         connector=self.connector,
                                         images=self._images(),
                                         last_seen_up=None)
                try:
                    record.create()
                except Exception:
                    # another process of this service (a gunicorn worker)
                    # registered the same host and binary first
                    record = objects.Service.get_by_host_and_binary(
                        ctxt, self.host, self.binary)
                    if record is None:
                        raise
            record.version = service_obj.SERVICE_VERSION
            record.rpc_version = self.rpc_version
            record.topic = self.topic
            record.connector = self.connector
            if self.list_images is not None:
                record.images = self._images()
            record.save()
            record.heartbeat()
        self.record = record
        self._reported_images = record.images
        return record

    def _images(self):
        """What the driver lists now, or None when it cannot tell (the API
        then accepts any imageRef for this host: the build decides)."""
        if self.list_images is None:
            return None
        try:
            return self.list_images()
        except Exception as error:
            LOG.warning("%s on %s could not list its images: %s", self.binary,
                        self.host, error)
            return None

    def report_images(self):
        """Write the images again when the driver lists others than the
        row holds (one listdir; a save only on a change)."""
        if self.list_images is None or self.record is None:
            return
        images = self._images()
        if images is None or images == self._reported_images:
            return
        with self._scope():
            self.record.images = images
            self.record.save()
        self._reported_images = images
        LOG.info("%s on %s reports %d image(s)", self.binary, self.host,
                 len(images))

    def start(self, tolerate_registration_failure=False):
        """Register, serve RPC, heartbeat.  With ``tolerate_registration_failure``
        (the API workers) a database that is not there yet is logged and the
        heartbeat thread keeps trying to register."""
        try:
            self.register()
        except Exception as error:
            if not tolerate_registration_failure:
                raise
            LOG.warning("%s could not register yet (%s); retrying", self.binary, error)
        endpoints = self.endpoints
        if self.indirection_api is not None:
            endpoints = [_IndirectionEndpoint(e, self.indirection_api) for e in endpoints]
        if self.topic:
            target = messaging.Target(topic=self.topic, server=self.server_name)
            server = rpc.get_server(target, endpoints)
            server.start()
            self.servers.append(server)
        self._heartbeat_thread = threading.Thread(
            target=self._heartbeat_loop, name="heartbeat-%s" % self.binary, daemon=True)
        self._heartbeat_thread.start()
        LOG.info("%s on %s started (service version %s, rpc %s)", self.binary,
                 self.host, service_obj.SERVICE_VERSION, self.rpc_version)

    def add_server(self, topic, endpoints):
        """Serve another topic from this service (the conductor's task topic)."""
        target = messaging.Target(topic=topic, server=self.server_name)
        server = rpc.get_server(target, endpoints)
        server.start()
        self.servers.append(server)

    def _heartbeat_loop(self):
        while not self._stop.wait(CONF.report_interval):
            try:
                if self.record is None:
                    self.register()
                    continue
                with self._scope():
                    self.record.heartbeat()
            except Exception as error:  # keep beating: the DB or broker may come back
                LOG.warning("heartbeat of %s failed: %s", self.binary, error)
                continue
            try:
                self.report_images()
            except Exception as error:
                LOG.warning("%s could not report its images: %s", self.binary, error)

    def stop(self):
        self._stop.set()
        for server in self.servers:
            try:
                server.stop()
            except Exception:
                LOG.exception("stopping RPC server")
        for server in self.servers:
            try:
                server.wait()
            except Exception:
                LOG.exception("waiting for RPC server")
        self.servers = []


def run_until_signalled(services, exit=None):
    """Block until SIGTERM/SIGINT, then stop every service within
    ``[DEFAULT] graceful_shutdown_timeout`` seconds; past it (or at a second
    signal) the process exits with status 1 (``exit``, for tests)."""
    import signal
    done = threading.Event()
    again = threading.Event()

    def _handler(signum, frame):
        if done.is_set():
            again.set()
        done.set()

    signal.signal(signal.SIGTERM, _handler)
    signal.signal(signal.SIGINT, _handler)
    LOG.info("running %s; SIGTERM or SIGINT stops within %s s",
             ", ".join(getattr(s, "binary", str(s)) for s in services),
             CONF.graceful_shutdown_timeout or "unlimited")
    while not done.wait(1):
        pass
    if not stop_within(services, CONF.graceful_shutdown_timeout, again):
        (exit or _exit_now)(1)


def stop_within(services, timeout, interrupted=None):
    """Stop ``services`` (in order) from a helper thread; True when they all
    stopped within ``timeout`` seconds (0: no limit) and before
    ``interrupted`` was set."""
    def _stop_all():
        for service in services:
            try:
                service.stop()
            except Exception:
                LOG.exception("stopping %s", getattr(service, "binary", service))
    stopper = threading.Thread(target=_stop_all, name="graceful-stop",
                               daemon=True)
    stopper.start()
    deadline = None if not timeout else time.monotonic() + timeout
    while stopper.is_alive():
        if interrupted is not None and interrupted.is_set():
            LOG.warning("second signal: exiting without waiting")
            return False
        if deadline is not None and time.monotonic() >= deadline:
            LOG.warning("services did not stop within [DEFAULT] "
                        "graceful_shutdown_timeout = %s s: exiting; what "
                        "is cut short:\n%s", timeout, _thread_stacks())
            return False
        stopper.join(0.1)
    return True


def _thread_stacks():
    """Where every other thread of this process is: the work a stop past
    its limit cuts short (a workflow waiting on a call, a listener
    reconnecting), for the operator, who may then run the reconcile pass."""
    names = {t.ident: t.name for t in threading.enumerate()}
    own = threading.get_ident()
    return "\n".join(
        "thread %s:\n%s" % (names.get(ident, ident),
                            "".join(traceback.format_stack(frame)).rstrip())
        for ident, frame in sys._current_frames().items() if ident != own)


def _exit_now(status):
    logging.shutdown()
    os._exit(status)
