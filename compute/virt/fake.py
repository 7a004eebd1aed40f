"""An in-memory virt driver for tests, benchmarks and the embedded default.

Latency per operation and injected failures come from ``[fake_driver]``.  The
fake host keeps which devices each guest has and which volume connections
the host holds, and counts connects and disconnects, so tests can check that
nothing is left connected.

It also models the *physical* host connections to targets (one iSCSI
session per target, shared by every volume behind it: ``[volume]
shared_targets``): ``connect_volume`` logs in to the target only when the
host is not connected to it yet, ``disconnect_volume(...,
disconnect_target=True)`` logs out.  Logging out of a target that another
attachment of this host still uses loses that attachment's connection: it is
recorded in ``lost_connections`` (tests assert that list stays empty), and a
target left connected with no user shows in ``stats()["targets"]``.  With
``[fake_driver] stats_file`` set, ``stats()`` is written to that JSON file on
every change (how tests read the counters of a compute daemon).

``connect_volume`` refuses a ``driver_volume_type`` the libvirt driver has
no volume driver for, with the libvirt driver's own check (its table in
``libvirt/volume``): a test of an unknown type fails as a real compute
would.
"""
import json
import os
import threading
import time

from volattach.compute import connections as host_connections
from volattach.compute.virt import driver
from volattach.compute.virt.libvirt import volume as libvirt_volume
from volattach import exception
from volattach.conf import CONF
from volattach.device_naming import device_suffix


class FakeDriver(driver.ComputeDriver):

    def __init__(self, host):
        super().__init__(host)
        self._lock = threading.Lock()
        self.guests = {}          # instance uuid -> {"power", "devices": {dev: conn},
        #                                  "modes": {dev: "ro"|"rw"}}
        self.connections = {}     # connection key -> connection_info
        self.connects = 0
        self.disconnects = 0
        # the physical model: target key -> connection keys using it
        self.targets = {}
        self.target_connects = 0      # logins to a target
        self.target_disconnects = 0   # logouts of a target
        self.target_reuses = 0        # connects that found the target connected
        self.max_target_users = 0
        self.lost_connections = []    # {"target", "attachments"} per bad logout
        self.reboots = []             # each reboot's arguments (tests)
        self.power_ons = []           # each power_on's arguments (tests)

    # -- helpers --------------------------------------------------------------
    def _step(self, operation):
        latency = getattr(CONF.fake_driver, "%s_latency" % operation, 0.0) \
            if operation in ("reserve", "attach", "detach", "spawn", "swap") \
            else 0.0
        if latency:
            time.sleep(latency)
        if operation in CONF.fake_driver.fail_operations:
            raise exception.VirtDriverError(operation=operation,
                                            reason="injected failure")

    @staticmethod
    def _connection_key(connection_info):
        data = (connection_info or {}).get("data") or connection_info or {}
        return (data.get("attachment_id") or data.get("volume_id")
                or repr(sorted(data.items())))

    # -- driver interface -------------------------------------------------------
    def get_volume_connector(self):
        return {
            "host": self.host,
            "initiator": "iqn.2026-11.org.volattach:%s" % self.host,
            "ip": "127.0.0.1",
            "platform": "x86_64",
            "os_type": "linux",
            "multipath": False,
            "do_local_attach": False,
        }

    def list_images(self):
        """``[compute] fake_images``: the images a fake guest boots from."""
        return sorted(CONF.compute.fake_images)

    def get_device_name_for_instance(self, instance, used_device_names, requested):
        self._step("reserve")
        prefix = "/dev/" + CONF.fake_driver.device_prefix
        used = set(used_device_names)
        if requested:
            if requested in used:
                raise exception.DevicePathInUse(path=requested)
            return requested
        index = 0
        while True:
            candidate = prefix + device_suffix(index)
            if candidate not in used:
                return candidate
            index += 1

    def spawn(self, instance, block_device_info):
        self._step("spawn")
        with self._lock:
            self.guests[instance.uuid] = {
                "power": "running",
                "image": instance.image_ref,
                "devices": {d["device_name"]: d["connection_info"]
                            for d in block_device_info},
                "modes": {d["device_name"]: d.get("mode") or "rw"
                          for d in block_device_info},
            }

    def volume_device_names(self, instance):
        with self._lock:
            return set((self.guests.get(instance.uuid) or {})
                       .get("devices", {}))

    def destroy(self, instance):
        self._step("destroy")
        with self._lock:
            self.guests.pop(instance.uuid, None)

    def connect_volume(self, connection_info, instance):
        self._step("connect")
        if (connection_info or {}).get("driver_volume_type") is not None:
            # the types the libvirt driver plugs, refused as it refuses
            # them (an unknown type fails the attach with its name)
            libvirt_volume.volume_driver(connection_info)
        key = self._connection_key(connection_info)
        target = host_connections.target_key(connection_info, key)
        with self._lock:
            users = self.targets.get(target)
            if users is None:
                users = self.targets[target] = set()
                self.target_connects += 1
            else:
                self.target_reuses += 1
            users.add(key)
            self.max_target_users = max(self.max_target_users, len(users))
            self.connections[key] = connection_info
            self.connects += 1
            self._write_stats()

    def disconnect_volume(self, connection_info, instance,
                          disconnect_target=True):
        self._step("disconnect")
        key = self._connection_key(connection_info)
        target = host_connections.target_key(connection_info, key)
        with self._lock:
            if self.connections.pop(key, None) is not None:
                self.disconnects += 1
            users = self.targets.get(target)
            if users is not None:
                users.discard(key)
                if disconnect_target:
                    if users:
                        # the logout takes every other LUN of the session
                        self.lost_connections.append(
                            {"target": target, "attachments": sorted(users)})
                        for lost in users:
                            self.connections.pop(lost, None)
                    del self.targets[target]
                    self.target_disconnects += 1
            self._write_stats()

    def _write_stats(self):
        """Write the counters to ``[fake_driver] stats_file`` (under the
        driver lock, so the file always holds the latest state)."""
        path = CONF.fake_driver.stats_file
        if not path:
            return
        tmp = "%s.%d.tmp" % (path, os.getpid())
        with open(tmp, "w") as f:
            json.dump(self._stats(), f)
        os.replace(tmp, path)

    def attach_volume(self, instance, connection_info, device_name, mode="rw"):
        self._step("attach")
        with self._lock:
            guest = self._guest(instance)
            guest["devices"][device_name] = connection_info
            guest["modes"][device_name] = mode or "rw"

    def _guest(self, instance):
        guest = self.guests.setdefault(instance.uuid, {"power": "running"})
        guest.setdefault("devices", {})
        guest.setdefault("modes", {})
        return guest

    def get_console_output(self, instance):
        """A console as a booted guest's: what it booted from, its power
        state, then one line per device (as the test image's init prints
        them)."""
        with self._lock:
            guest = self.guests.get(instance.uuid)
            if guest is None:
                return ""
            lines = ["FAKE-CONSOLE %s" % instance.uuid,
                     "booted from %s" % (guest.get("image") or "a volume"),
                     "power %s" % guest["power"]]
            for dev in sorted(guest.get("devices", {})):
                lines.append("%s %s" % (dev, guest["modes"].get(dev, "rw")))
            return "\n".join(lines) + "\n"

    def detach_volume(self, instance, connection_info, device_name):
        self._step("detach")
        with self._lock:
            guest = self.guests.get(instance.uuid)
            if guest:
                guest["devices"].pop(device_name, None)
                guest.get("modes", {}).pop(device_name, None)

    def swap_volume(self, instance, old_connection_info, new_connection_info,
                    device_name):
        self._step("swap")
        with self._lock:
            self._guest(instance)["devices"][device_name] = new_connection_info

    def extend_volume(self, instance, connection_info, device_name,
                      new_size, mode="rw"):
        """The guest's disk at ``device_name`` now has ``new_size`` bytes
        (``guest["sizes"]``); as QEMU, a disk the guest does not have, or a
        read-only one, cannot grow."""
        self._step("extend")
        with self._lock:
            guest = self.guests.get(instance.uuid) or {}
            if device_name not in guest.get("devices", {}):
                raise exception.VirtDriverError(
                    operation="extend", reason="no disk %s in guest %s"
                    % (device_name, instance.uuid))
            if guest["modes"].get(device_name) == "ro":
                raise exception.VirtDriverError(
                    operation="extend",
                    reason=driver.READ_ONLY_RESIZE_REFUSED % device_name)
            guest.setdefault("sizes", {})[device_name] = new_size

    # -- live migration (compute RPC 1.3) ----------------------------------------
    def pre_live_migration(self, instance, block_device_info):
        """Destination: the volumes are connected; get ready for the guest."""
        self._step("pre_live_migration")

    def live_migration(self, instance, dest, migrate_data=None):
        """Source: copy the guest's memory to ``dest`` (the switch)."""
        self._step("live_migration")
        if instance.uuid not in self.guests:
            raise exception.VirtDriverError(operation="live_migration",
                                            reason="no guest %s" % instance.uuid)

    def post_live_migration_at_destination(self, instance, block_device_info,
                                           power="running"):
        """Destination: the guest now runs here."""
        with self._lock:
            self.guests[instance.uuid] = {
                "power": power,
                "devices": {d["device_name"]: d["connection_info"]
                            for d in block_device_info},
                "modes": {d["device_name"]: d.get("mode") or "rw"
                          for d in block_device_info},
            }
            self._write_stats()

    def post_live_migration(self, instance):
        """Source: the guest left; forget it."""
        self._step("post_live_migration")
        with self._lock:
            self.guests.pop(instance.uuid, None)
            self._write_stats()

    def rollback_live_migration_at_destination(self, instance):
        """Destination: drop whatever arrived of the guest (never fails)."""
        with self._lock:
            self.guests.pop(instance.uuid, None)
            self._write_stats()

    def pause(self, instance):
        self._set_power(instance, "paused")

    def unpause(self, instance):
        self._set_power(instance, "running")

    def suspend(self, instance):
        self._step("suspend")
        self._set_power(instance, "suspended")

    def resume(self, instance):
        self._step("resume")
        self._set_power(instance, "running")

    def reboot(self, instance, reboot_type, block_device_info=None):
        """``block_device_info`` (a HARD reboot of compute RPC 1.10): the
        plugged volumes with fresh connections; the guest's devices take
        them, and ``reboots`` records each call as it came."""
        self._step("reboot")
        with self._lock:
            self.reboots.append({"instance": instance.uuid,
                                 "reboot_type": reboot_type,
                                 "block_device_info": block_device_info})
            guest = self.guests.get(instance.uuid)
            if guest is not None:
                guest["power"] = "running"
                for d in block_device_info or ():
                    guest["devices"][d["device_name"]] = d["connection_info"]
                    guest["modes"][d["device_name"]] = d.get("mode") or "rw"

    def _set_power(self, instance, power):
        with self._lock:
            if instance.uuid in self.guests:
                self.guests[instance.uuid]["power"] = power

    def power_off(self, instance):
        with self._lock:
            if instance.uuid in self.guests:
                self.guests[instance.uuid]["power"] = "shutdown"

    def power_on(self, instance, block_device_info=None):
        """``block_device_info``: as reboot's (``power_ons`` records)."""
        with self._lock:
            self.power_ons.append({"instance": instance.uuid,
                                   "block_device_info": block_device_info})
            guest = self.guests.get(instance.uuid)
            if guest is not None:
                guest["power"] = "running"
                for d in block_device_info or ():
                    guest["devices"][d["device_name"]] = d["connection_info"]
                    guest["modes"][d["device_name"]] = d.get("mode") or "rw"

    def stats(self):
        with self._lock:
            return self._stats()

    def _stats(self):
        return {"host": self.host,
                "connects": self.connects, "disconnects": self.disconnects,
                "connections": len(self.connections),
                "connected": sorted(self.connections),
                "guests": len(self.guests),
                "targets": len(self.targets),
                "target_users": {k: len(v) for k, v in self.targets.items()},
                "target_connects": self.target_connects,
                "target_disconnects": self.target_disconnects,
                "target_reuses": self.target_reuses,
                "max_target_users": self.max_target_users,
                "lost_connections": list(self.lost_connections)}
