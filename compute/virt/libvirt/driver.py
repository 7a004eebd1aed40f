"""The libvirt virt driver: guests are libvirt domains (persistent, so a
stopped guest keeps its configuration), booted from images under
``[libvirt] image_dir`` (each a directory ``<image id>/`` with ``kernel``,
``initramfs`` and optionally ``cmdline``: direct kernel boot), with a serial
console on a unix socket logged to ``console.log`` in the instance directory.

Volumes are ``<disk>`` elements QEMU opens itself (``volume/``) with
``<serial>`` the volume id and ``<readonly/>`` for read-only attachments.
Attach and detach act on the running domain and its persistent
configuration (only the configuration when the guest is stopped); a live
detach waits for libvirt's device-removed event and asks again when it does
not come, as Nova does.  Live migration goes from one libvirt daemon to
another (``virDomainMigrateToURI3``, peer to peer), the destination's URI
and paths in the ``LiveMigrateData`` its compute returned.
"""
import logging
import os
import platform
import shutil
import sys
import threading
import time
import xml.etree.ElementTree as ET
from xml.sax import saxutils

from volattach.compute.virt import driver
from volattach.compute.virt.libvirt import boot as boot_mod
from volattach.compute.virt.libvirt import cache_manager
from volattach.compute.virt.libvirt import configdrive
from volattach.compute.virt.libvirt import host as host_mod
from volattach.compute.virt.libvirt import imagecache
from volattach.compute.virt.libvirt import images
from volattach.compute.virt.libvirt import volume as volume_mod
from volattach import exception
from volattach.conf import CONF
from volattach import device_naming
from volattach.image import glance

LOG = logging.getLogger(__name__)

DETACH_ATTEMPTS = 8
DETACH_TIMEOUT = 20.0      # seconds per attempt, as Nova's device_detach_timeout
# in a guest's directory on a live migration's destination until the guest
# runs there: a rollback removes only a directory that has it
MIGRATING_IN = ".migrating-in"
# open-iscsi's initiator name, the connector's ``initiator``
INITIATOR_FILE = "/etc/iscsi/initiatorname.iscsi"


def domain_name(instance):
    return "volattach-%s" % instance.uuid


def iscsi_initiator(path=INITIATOR_FILE):
    """The ``InitiatorName=`` of open-iscsi's file, or None without one."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        line = line.strip()
        if line.startswith("InitiatorName="):
            return line.split("=", 1)[1].strip() or None
    return None


def volume_connector(host, initiator_file=INITIATOR_FILE):
    """This host's volume connector, with os-brick's keys as Nova's
    libvirt driver sends it: ``ip`` is ``[DEFAULT] my_ip``; ``initiator``
    only when open-iscsi names one (as os-brick)."""
    connector = {
        "host": host,
        "ip": CONF.my_ip,
        "platform": platform.machine(),
        "os_type": sys.platform,
        "multipath": False,
        "do_local_attach": False,
    }
    initiator = iscsi_initiator(initiator_file)
    if initiator:
        connector["initiator"] = initiator
    return connector


def _kernel_xml(boot):
    """<kernel>, <initrd> and <cmdline> of a direct kernel boot; nothing
    for an image that boots from its disk."""
    if not boot.kernel:
        return "<boot dev='hd'/>"
    e = saxutils.escape
    xml = "<kernel>%s</kernel>" % e(boot.kernel)
    if boot.initrd:
        xml += "<initrd>%s</initrd>" % e(boot.initrd)
    return xml + "<cmdline>%s</cmdline>" % e(boot.cmdline)


class LibvirtDriver(driver.ComputeDriver):
    # with [glance]: its client and this host's image cache
    _glance = None
    _image_cache = None

    def __init__(self, host):
        super().__init__(host)
        self._host = host_mod.Host(CONF.libvirt.connection_uri)
        self._host.get_connection()
        self._lock = threading.Lock()
        if glance.configured(CONF):
            self._glance = glance.GlanceClient(CONF)
            self._image_cache = imagecache.ImageCache(
                os.path.join(CONF.libvirt.instances_path,
                             CONF.image_cache.subdirectory_name),
                self._glance)
            cache_manager.start(self._image_cache)

    # -- helpers --------------------------------------------------------------
    @property
    def _conn(self):
        return self._host.get_connection()

    def _instance_dir(self, instance):
        path = os.path.join(CONF.libvirt.instances_path, instance.uuid)
        os.makedirs(path, exist_ok=True)
        return path

    def _domain(self, instance):
        lv = self._host.libvirt
        try:
            return self._conn.lookupByUUIDString(instance.uuid)
        except lv.libvirtError as e:
            if e.get_error_code() == lv.VIR_ERR_NO_DOMAIN:
                raise exception.VirtDriverError(
                    operation="find the guest",
                    reason="no domain for instance %s" % instance.uuid)
            raise

    def _domain_or_none(self, instance):
        try:
            return self._domain(instance)
        except exception.VirtDriverError:
            return None

    @staticmethod
    def _serial(connection_info):
        data = volume_mod.connection_data(connection_info)
        return data.get("volume_id") or data.get("serial") or ""

    def _disk_xml(self, connection_info, device_name, mode):
        return volume_mod.volume_driver(
            connection_info, self._host).disk_xml(
            connection_info, device_name.rsplit("/", 1)[-1],
            self._serial(connection_info), mode == "ro")

    def domain_xml(self, instance, block_device_info):
        idir = self._instance_dir(instance)
        boot = boot_mod.prepare(instance, idir, self._glance, self._image_cache)
        # a small local root disk takes vda, so that volumes get in the
        # guest the names the API gives them (vdb, vdc...)
        root = boot.root
        disks = ["<disk type='file' device='disk'><driver name='qemu' "
                 "type=%s/><source file=%s/><target dev='vda' "
                 "bus='virtio'/><serial>root</serial></disk>"
                 % (saxutils.quoteattr(boot.root_format),
                    saxutils.quoteattr(root))]
        # PCI slots follow the order of the XML: sorted by device name
        for d in sorted(block_device_info,
                        key=lambda d: (len(d["device_name"]),
                                       d["device_name"])):
            disks.append(self._disk_xml(d["connection_info"],
                                        d["device_name"],
                                        d.get("mode") or "rw"))
        config = os.path.join(idir, "disk.config")
        if os.path.exists(config):
            disks.append(
                "<disk type='file' device='disk'><driver name='qemu' "
                "type='raw'/><source file=%s/><target dev='vdz' "
                "bus='virtio'/><readonly/></disk>" % saxutils.quoteattr(config))
        memory = min(int(instance.flavor.memory_mb or 256),
                     CONF.libvirt.max_memory_mb)
        e = saxutils.escape
        q = saxutils.quoteattr
        return (
            "<domain type=%s><name>%s</name><uuid>%s</uuid>"
            "<memory unit='MiB'>%d</memory><vcpu>%d</vcpu>"
            "<os><type arch='x86_64' machine='pc'>hvm</type>%s</os>"
            "<features><acpi/></features>"
            "<on_poweroff>destroy</on_poweroff><on_reboot>restart</on_reboot>"
            "<on_crash>destroy</on_crash><devices>%s"
            "<serial type='unix'><source mode='bind' path=%s/>"
            "<log file=%s append='on'/><target port='0'/></serial>"
            "<memballoon model='none'/></devices></domain>"
            % (q(CONF.libvirt.virt_type), e(domain_name(instance)),
               e(instance.uuid), memory, max(1, int(instance.flavor.vcpus or 1)),
               _kernel_xml(boot),
               "".join(disks), q(os.path.join(idir, "console.sock")),
               q(os.path.join(idir, "console.log"))))

    # -- driver interface -------------------------------------------------------
    def get_volume_connector(self):
        return volume_connector(self.host)

    def list_images(self):
        if self._glance is not None:
            return None      # any image of Glance: the build decides
        return images.list_images()

    def get_device_name_for_instance(self, instance, used_device_names,
                                     requested):
        used = set(used_device_names) | {"/dev/vdz"}   # vdz: config drive
        if requested:
            if requested in used:
                raise exception.DevicePathInUse(path=requested)
            return requested
        index = 1                                      # vda: the root disk
        while "/dev/vd" + device_naming.device_suffix(index) in used:
            index += 1
        return "/dev/vd" + device_naming.device_suffix(index)

    def spawn(self, instance, block_device_info):
        idir = self._instance_dir(instance)
        if instance.config_drive:
            configdrive.make_config_drive(
                os.path.join(idir, "disk.config"), instance,
                instance.user_data_bytes)
        xml = self.domain_xml(instance, block_device_info)
        dom = self._conn.defineXML(xml)
        dom.create()

    def destroy(self, instance):
        lv = self._host.libvirt
        dom = self._domain_or_none(instance)
        if dom is not None:
            try:
                if dom.isActive():
                    dom.destroy()
            except lv.libvirtError:
                LOG.warning("destroy of %s failed", instance.uuid, exc_info=True)
            try:
                # a suspended guest has a managed save image: it goes too
                dom.undefineFlags(lv.VIR_DOMAIN_UNDEFINE_MANAGED_SAVE)
            except lv.libvirtError:
                LOG.warning("undefine of %s failed", instance.uuid, exc_info=True)
        shutil.rmtree(os.path.join(CONF.libvirt.instances_path, instance.uuid),
                      ignore_errors=True)

    def connect_volume(self, connection_info, instance):
        volume_mod.volume_driver(
            connection_info, self._host).connect_volume(connection_info)

    def disconnect_volume(self, connection_info, instance,
                          disconnect_target=True):
        """Best effort: the guest has already let the disk go, so a host
        connection that cannot be closed (an unknown volume type, a failed
        unmap) does not fail the detach; it is logged with its reason."""
        try:
            volume_mod.volume_driver(
                connection_info, self._host).disconnect_volume(connection_info)
        except exception.VirtDriverError as e:
            LOG.warning("disconnect of volume %s of instance %s failed: %s",
                        self._serial(connection_info),
                        getattr(instance, "uuid", instance), e)

    def _flags(self, dom):
        lv = self._host.libvirt
        flags = lv.VIR_DOMAIN_AFFECT_CONFIG
        if dom.isActive():
            flags |= lv.VIR_DOMAIN_AFFECT_LIVE
        return flags

    def attach_volume(self, instance, connection_info, device_name, mode="rw"):
        dom = self._domain(instance)
        xml = self._disk_xml(connection_info, device_name, mode)
        try:
            dom.attachDeviceFlags(xml, self._flags(dom))
        except self._host.libvirt.libvirtError as e:
            raise exception.VirtDriverError(
                operation="attach", reason=volume_mod.volume_driver(
                    connection_info, self._host).attach_failure(
                        connection_info, e))

    def volume_device_names(self, instance):
        """The target devices of the guest's volume disks: those with a
        serial, other than the local root disk's."""
        dom = self._domain_or_none(instance)
        if dom is None:
            return set()
        names = set()
        for disk in ET.fromstring(dom.XMLDesc(0)).findall("./devices/disk"):
            serial, target = disk.find("serial"), disk.find("target")
            if (serial is not None and serial.text and serial.text != "root"
                    and target is not None):
                names.add("/dev/" + target.get("dev"))
        return names

    def _find_disk(self, dom, alias, flags=0, target=None):
        """The <disk> XML with this alias (or, after a swap, at this
        target device), or None."""
        root = ET.fromstring(dom.XMLDesc(flags))
        by_target = None
        for disk in root.findall("./devices/disk"):
            a = disk.find("alias")
            if a is not None and a.get("name") == alias:
                return ET.tostring(disk, encoding="unicode")
            t = disk.find("target")
            if target and t is not None and t.get("dev") == target:
                by_target = ET.tostring(disk, encoding="unicode")
        return by_target

    def detach_volume(self, instance, connection_info, device_name):
        lv = self._host.libvirt
        dom = self._domain_or_none(instance)
        if dom is None:
            return
        alias = volume_mod.disk_alias(self._serial(connection_info))
        target = (device_name or "").rsplit("/", 1)[-1]
        persistent = self._find_disk(dom, alias, lv.VIR_DOMAIN_XML_INACTIVE,
                                     target)
        if persistent is not None:
            dom.detachDeviceFlags(persistent, lv.VIR_DOMAIN_AFFECT_CONFIG)
        if not dom.isActive():
            return
        for attempt in range(DETACH_ATTEMPTS):
            live = self._find_disk(dom, alias, 0, target)
            if live is None:
                return
            live_alias = ET.fromstring(live).find("alias")
            if live_alias is not None:
                alias = live_alias.get("name")
            self._host.expect_device_event(instance.uuid, alias)
            try:
                dom.detachDeviceFlags(live, lv.VIR_DOMAIN_AFFECT_LIVE)
                removed = self._host.wait_device_event(
                    instance.uuid, alias, CONF.libvirt.device_detach_timeout)
            except lv.libvirtError as e:
                if self._find_disk(dom, alias, 0, target) is None:
                    return
                LOG.warning("detach of %s from %s: %s", alias, instance.uuid, e)
                removed = None
            finally:
                self._host.forget_device_event(instance.uuid, alias)
            if removed:
                return
            LOG.warning("guest %s did not let %s go (attempt %d)",
                        instance.uuid, alias, attempt + 1)
        raise exception.VirtDriverError(
            operation="detach",
            reason="device %s still in the guest after %d attempts"
            % (device_name, DETACH_ATTEMPTS))

    def swap_volume(self, instance, old_connection_info, new_connection_info,
                    device_name):
        """Block-copy the disk onto the new volume, then pivot.  The disk is
        found by the old volume's alias or, when it was swapped before (a
        pivoted disk keeps the alias it was plugged with), at its device."""
        lv = self._host.libvirt
        dom = self._domain(instance)
        alias = volume_mod.disk_alias(self._serial(old_connection_info))
        old = self._find_disk(dom, alias,
                              target=(device_name or "").rsplit("/", 1)[-1])
        if old is None:
            raise exception.VirtDriverError(operation="swap",
                                            reason="disk not found")
        target = ET.fromstring(old).find("target").get("dev")
        readonly = ET.fromstring(old).find("readonly") is not None
        new_xml = volume_mod.volume_driver(
            new_connection_info, self._host).disk_xml(
            new_connection_info, target, self._serial(new_connection_info),
            readonly)
        dom.blockCopy(target, new_xml, flags=(
            lv.VIR_DOMAIN_BLOCK_COPY_REUSE_EXT
            | lv.VIR_DOMAIN_BLOCK_COPY_TRANSIENT_JOB))
        deadline = time.monotonic() + CONF.libvirt.swap_volume_timeout
        while True:
            info = dom.blockJobInfo(target, 0)
            if info and info.get("end") and info["cur"] == info["end"]:
                break
            if time.monotonic() > deadline:
                dom.blockJobAbort(target, 0)
                raise exception.VirtDriverError(operation="swap",
                                                reason="copy timed out")
            time.sleep(CONF.libvirt.swap_volume_poll_interval)
        dom.blockJobAbort(target, lv.VIR_DOMAIN_BLOCK_JOB_ABORT_PIVOT)

    def extend_volume(self, instance, connection_info, device_name,
                      new_size, mode="rw"):
        """virDomainBlockResize of the volume's disk to ``new_size`` bytes,
        as Nova's driver does once the volume grew: QEMU sets the size of
        its node (for rbd and iSCSI the image or LUN already has it) and
        tells the guest, which sees the new capacity at once.  A guest that
        is not running is left alone: its next boot opens the volume at its
        size.  QEMU refuses to resize a read-only node ("Image is
        read-only"), so a read-only attachment's disk does not grow
        (measured on QEMU 7.2, README)."""
        lv = self._host.libvirt
        dom = self._domain(instance)
        if not dom.isActive():
            LOG.debug("%s is not running: its disk %s grows at its next "
                      "boot", instance.uuid, device_name)
            return
        alias = volume_mod.disk_alias(self._serial(connection_info))
        disk = self._find_disk(dom, alias,
                               target=(device_name or "").rsplit("/", 1)[-1])
        if disk is None:
            raise exception.VirtDriverError(
                operation="extend",
                reason="no disk of volume %s in the guest"
                % self._serial(connection_info))
        element = ET.fromstring(disk)
        if element.find("readonly") is not None:
            raise exception.VirtDriverError(
                operation="extend",
                reason=driver.READ_ONLY_RESIZE_REFUSED % device_name)
        target = element.find("target").get("dev")
        try:
            dom.blockResize(target, new_size,
                            lv.VIR_DOMAIN_BLOCK_RESIZE_BYTES)
        except lv.libvirtError as e:
            raise exception.VirtDriverError(operation="extend",
                                            reason=str(e))

    # -- live migration ---------------------------------------------------------
    # The guest moves between libvirt daemons with virDomainMigrateToURI3
    # (peer to peer, as Nova does); its local disks (the root disk) are
    # copied by libvirt over NBD, its volumes are opened on the destination
    # with the connections of their new attachments.  The config drive is
    # read-only, which libvirt does not copy: the destination writes it
    # again from the same data.  [libvirt] instances_path must be the
    # host's own (shared instance storage is refused).

    def pre_live_migration(self, instance, block_device_info):
        """Destination: the guest's directory, its root disk file for
        libvirt to copy into and its config drive; the volumes' <disk>
        with the destination's connections."""
        idir = os.path.join(CONF.libvirt.instances_path, instance.uuid)
        try:
            os.makedirs(idir)
        except FileExistsError:
            raise exception.VirtDriverError(
                operation="pre_live_migration",
                reason="%s exists here: shared instance storage is not "
                       "supported" % idir)
        try:
            open(os.path.join(idir, MIGRATING_IN), "w").close()
            boot_mod.prepare(instance, idir, self._glance, self._image_cache)
            if instance.config_drive:
                configdrive.make_config_drive(
                    os.path.join(idir, "disk.config"), instance,
                    instance.user_data_bytes)
        except Exception:
            # no rollback comes for a failed pre_live_migration: a
            # directory left here would refuse the next migration
            shutil.rmtree(idir, ignore_errors=True)
            raise
        from volattach import objects
        return objects.LiveMigrateData(
            connect_uri=(CONF.libvirt.live_migration_inbound_uri
                         or CONF.libvirt.connection_uri),
            target_connect_addr=CONF.libvirt.live_migration_inbound_addr,
            instance_dir=idir,
            disks={d["device_name"].rsplit("/", 1)[-1]: self._disk_xml(
                       d["connection_info"], d["device_name"],
                       d.get("mode") or "rw")
                   for d in block_device_info})

    def _destination_xml(self, dom, instance, migrate_data):
        """The live domain as the destination must define it: paths under
        the guest's directory moved to the destination's, each volume's
        <source> that of its destination connection."""
        lv = self._host.libvirt
        root = ET.fromstring(dom.XMLDesc(lv.VIR_DOMAIN_XML_MIGRATABLE))
        self._check_volumes_unchanged(root, instance, migrate_data)
        here = os.path.join(CONF.libvirt.instances_path, instance.uuid)
        there = migrate_data.instance_dir
        for element in root.iter():
            for name, value in element.attrib.items():
                if value == here or value.startswith(here + "/"):
                    element.set(name, there + value[len(here):])
        for disk in root.findall("./devices/disk"):
            target = disk.find("target")
            new = migrate_data.disks.get(
                target.get("dev") if target is not None else None)
            if new is None:
                continue
            index = list(disk).index(disk.find("source"))
            disk.remove(disk.find("source"))
            disk.insert(index, ET.fromstring(new).find("source"))
        return ET.tostring(root, encoding="unicode")

    @staticmethod
    def _check_volumes_unchanged(root, instance, migrate_data):
        """The guest's volumes (device -> serial) must be those the
        destination was prepared with: a swap or an attach that reached
        this host in between (each passed the API's checks before the
        migration began) would otherwise put the guest back on the old
        volume there, or leave a volume without an attachment there."""
        live = {}
        for disk in root.findall("./devices/disk"):
            serial, target = disk.findtext("serial"), disk.find("target")
            if serial and serial != "root" and target is not None:
                live[target.get("dev")] = serial
        prepared = {dev: ET.fromstring(xml).findtext("serial")
                    for dev, xml in migrate_data.disks.items()}
        if live != prepared:
            raise exception.VirtDriverError(
                operation="live_migration",
                reason="the volumes of %s changed since the destination was "
                       "prepared (%s, now %s)" % (instance.uuid, prepared,
                                                  live))

    def live_migration(self, instance, dest, migrate_data=None):
        """Source: migrate the guest to ``migrate_data.connect_uri``; the
        domain is defined there and undefined here once it runs there.  A
        migration longer than [libvirt] live_migration_timeout is aborted
        (the guest keeps running here)."""
        lv = self._host.libvirt
        if migrate_data is None or not migrate_data.connect_uri:
            raise exception.VirtDriverError(
                operation="live_migration",
                reason="the destination %s sent no libvirt URI (a compute "
                       "older than RPC 1.8, or not a libvirt one)" % dest)
        dom = self._domain(instance)
        params = {
            lv.VIR_MIGRATE_PARAM_DEST_XML: self._destination_xml(
                dom, instance, migrate_data),
            # the local disks: the root disk (the config drive is
            # read-only: the destination wrote its own)
            lv.VIR_MIGRATE_PARAM_MIGRATE_DISKS: ["vda"],
        }
        if migrate_data.target_connect_addr:
            params[lv.VIR_MIGRATE_PARAM_URI] = (
                "tcp://%s" % migrate_data.target_connect_addr)
            params[lv.VIR_MIGRATE_PARAM_DISKS_URI] = (
                "tcp://%s" % migrate_data.target_connect_addr)
        flags = (lv.VIR_MIGRATE_LIVE | lv.VIR_MIGRATE_PEER2PEER
                 | lv.VIR_MIGRATE_PERSIST_DEST | lv.VIR_MIGRATE_UNDEFINE_SOURCE
                 | lv.VIR_MIGRATE_NON_SHARED_DISK)
        timer = threading.Timer(CONF.libvirt.live_migration_timeout,
                                self._abort_job, (dom, instance))
        timer.start()
        started = time.monotonic()
        try:
            dom.migrateToURI3(migrate_data.connect_uri, params, flags)
        except lv.libvirtError as e:
            raise exception.VirtDriverError(operation="live_migration",
                                            reason=str(e))
        finally:
            timer.cancel()
        LOG.info("%s migrated to %s (%s) in %.2f s", instance.uuid, dest,
                 migrate_data.connect_uri, time.monotonic() - started)

    def _abort_job(self, dom, instance):
        LOG.warning("live migration of %s took longer than %ss: aborting",
                    instance.uuid, CONF.libvirt.live_migration_timeout)
        try:
            dom.abortJob()
        except self._host.libvirt.libvirtError:
            LOG.warning("abort of the migration of %s failed", instance.uuid,
                        exc_info=True)

    def post_live_migration_at_destination(self, instance, block_device_info,
                                           power="running"):
        """Destination: the guest runs here; keep its power state."""
        lv = self._host.libvirt
        dom = self._domain(instance)
        state = dom.state()[0]
        if power == "paused" and state == lv.VIR_DOMAIN_RUNNING:
            dom.suspend()
        elif power != "paused" and state == lv.VIR_DOMAIN_PAUSED:
            dom.resume()
        try:
            os.unlink(os.path.join(CONF.libvirt.instances_path,
                                   instance.uuid, MIGRATING_IN))
        except FileNotFoundError:
            pass

    def post_live_migration(self, instance):
        """Source: the guest left (libvirt undefined it here); its files
        go."""
        if self._domain_or_none(instance) is not None:
            LOG.warning("%s is still defined here after its migration: "
                        "keeping its files", instance.uuid)
            return
        shutil.rmtree(os.path.join(CONF.libvirt.instances_path, instance.uuid),
                      ignore_errors=True)

    def rollback_live_migration_at_destination(self, instance):
        """Destination: drop what arrived of the guest, and its directory
        when this host's pre_live_migration made it."""
        idir = os.path.join(CONF.libvirt.instances_path, instance.uuid)
        if not os.path.exists(os.path.join(idir, MIGRATING_IN)):
            return
        dom = self._domain_or_none(instance)
        if dom is not None and dom.isPersistent():
            # not an incoming guest (that one is transient until it runs
            # here): the source's own when both hosts share one libvirt,
            # left alone; or the guest that arrived and runs from this
            # directory, kept with it
            if idir + "/" in dom.XMLDesc(0):
                LOG.warning("%s runs here: keeping it", instance.uuid)
                return
        elif dom is not None:
            try:
                dom.destroy()
            except self._host.libvirt.libvirtError:
                LOG.warning("destroy of the incoming %s failed",
                            instance.uuid, exc_info=True)
        shutil.rmtree(idir, ignore_errors=True)

    def power_off(self, instance):
        dom = self._domain(instance)
        if dom.isActive():
            dom.destroy()

    def suspend(self, instance):
        """Save the guest's memory to disk and stop it (libvirt's managed
        save, as Nova's suspend)."""
        dom = self._domain(instance)
        if dom.isActive():
            dom.managedSave(0)

    def resume(self, instance):
        """Start the guest from its managed save."""
        dom = self._domain(instance)
        if not dom.isActive():
            dom.create()

    def reboot(self, instance, reboot_type, block_device_info=None):
        """SOFT: ask the guest to shut down (ACPI) and start it again; a
        guest that has not stopped within [libvirt]
        wait_soft_reboot_seconds is rebooted hard.  HARD: stop it at once
        and start it again.  Either way the new boot takes the live
        definition (the disks as they are now, after any swap), not the
        one the domain was defined with.

        ``block_device_info`` (a HARD reboot, compute RPC 1.10): the
        plugged volumes with fresh connections; their <disk>s are written
        again from them (a Ceph monitor or an NBD export that moved since
        the attach is reached on the new boot) and the domain defined so."""
        dom = self._domain(instance)
        live = dom.XMLDesc(0) if dom.isActive() else None
        if reboot_type == "HARD" and block_device_info:
            live = self._with_disks(live or dom.XMLDesc(
                self._host.libvirt.VIR_DOMAIN_XML_INACTIVE),
                block_device_info)
        if live is not None and reboot_type == "SOFT":
            dom.shutdown()
            deadline = time.monotonic() + CONF.libvirt.wait_soft_reboot_seconds
            while dom.isActive() and time.monotonic() < deadline:
                time.sleep(0.2)
        if dom.isActive():
            dom.destroy()
        if live is not None:
            dom = self._conn.defineXML(live)
        dom.create()

    def _with_disks(self, xml, block_device_info):
        """``xml`` with the <disk> at each device of ``block_device_info``
        replaced by the one its connection makes (its PCI <address> kept,
        so the guest sees its disks where it had them); other disks as
        they are."""
        root = ET.fromstring(xml)
        devices = root.find("devices")
        fresh = {d["device_name"].rsplit("/", 1)[-1]: d
                 for d in block_device_info}
        for index, disk in enumerate(list(devices)):
            target = disk.find("target") if disk.tag == "disk" else None
            d = fresh.get(target.get("dev") if target is not None else None)
            if d is None:
                continue
            new = ET.fromstring(self._disk_xml(d["connection_info"],
                                               d["device_name"],
                                               d.get("mode") or "rw"))
            address = disk.find("address")
            if address is not None:
                new.append(address)
            devices.remove(disk)
            devices.insert(index, new)
        return ET.tostring(root, encoding="unicode")

    def power_on(self, instance, block_device_info=None):
        """``block_device_info`` (compute RPC 1.10): as reboot's, the
        stopped guest's definition gets those <disk>s first."""
        dom = self._domain(instance)
        if not dom.isActive():
            if block_device_info:
                dom = self._conn.defineXML(self._with_disks(
                    dom.XMLDesc(self._host.libvirt.VIR_DOMAIN_XML_INACTIVE),
                    block_device_info))
            dom.create()

    def pause(self, instance):
        self._domain(instance).suspend()

    def unpause(self, instance):
        self._domain(instance).resume()

    def get_console_output(self, instance):
        path = os.path.join(CONF.libvirt.instances_path, instance.uuid,
                            "console.log")
        try:
            with open(path, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - driver.MAX_CONSOLE_BYTES))
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def console_socket(self, instance):
        return os.path.join(CONF.libvirt.instances_path, instance.uuid,
                            "console.sock")
