"""The virt-driver interface a compute manager calls.

Every method is host-local.  ``connect_volume``/``disconnect_volume`` are the
host side of a volume connection (os-brick's job on a real host); attach and
detach put the connected device into the guest and take it out.  The compute
manager calls connect/disconnect under the lock of the volume's target and
tells the driver whether the target's host connection may be closed.
"""
import abc

MAX_CONSOLE_BYTES = 100 * 1024


# Why a read-only disk does not grow: libvirt refuses virDomainBlockResize
# on it ("can't resize empty or readonly disk", libvirt 11) and QEMU's
# block_resize refuses a read-only node ("Image is read-only", QEMU 7.2),
# whatever the protocol.
READ_ONLY_RESIZE_REFUSED = ("the disk %s is attached read-only, and "
                            "libvirt and QEMU cannot resize a read-only "
                            "disk: detach and attach it again to see the "
                            "new size")

class ComputeDriver(abc.ABC):

    def __init__(self, host):
        self.host = host

    @abc.abstractmethod
    def get_volume_connector(self):
        """The host connector (os-brick's get_connector_properties shape)."""

    def list_images(self):
        """The ids of the images this host can boot (sorted), or None when
        the driver cannot tell.  The compute reports them in its services
        row when it registers and on every state report; the compute API
        refuses an imageRef no up compute reports (400), and accepts any
        while an up compute reports None."""
        return None

    @abc.abstractmethod
    def get_device_name_for_instance(self, instance, used_device_names, requested):
        """Pick (or check) the guest device name of a new volume."""

    @abc.abstractmethod
    def spawn(self, instance, block_device_info):
        """Create and start the guest with its connected volumes."""

    @abc.abstractmethod
    def destroy(self, instance):
        """Stop and remove the guest (idempotent)."""

    @abc.abstractmethod
    def volume_device_names(self, instance):
        """The device names (``/dev/vdb``...) of the volumes plugged into
        the guest now (a rebuild plugs exactly these into the new one)."""

    @abc.abstractmethod
    def connect_volume(self, connection_info, instance):
        """Make the volume's device appear on this host, connecting its
        target first when the host is not connected to it yet."""

    @abc.abstractmethod
    def disconnect_volume(self, connection_info, instance,
                          disconnect_target=True):
        """Remove the volume's host device (idempotent); close the host
        connection to its target only when ``disconnect_target`` (the
        compute passes False while other attachments of this host still
        use a shared target: see ``compute.connections``)."""

    @abc.abstractmethod
    def attach_volume(self, instance, connection_info, device_name, mode="rw"):
        """Plug a connected volume into the guest at ``device_name``,
        read-only when ``mode`` is ``ro``."""

    @abc.abstractmethod
    def detach_volume(self, instance, connection_info, device_name):
        """Unplug a volume from the guest (idempotent)."""

    @abc.abstractmethod
    def swap_volume(self, instance, old_connection_info, new_connection_info,
                    device_name):
        """Replace the volume behind ``device_name`` (both are connected)."""

    def extend_volume(self, instance, connection_info, device_name,
                      new_size, mode="rw"):
        """Grow the guest's disk of a volume to ``new_size`` bytes (the
        volume grew on its backend) so that the guest sees it."""
        raise NotImplementedError("this driver cannot extend a volume")

    def power_off(self, instance):
        pass

    def get_console_output(self, instance):
        """The tail of the guest's serial console (text, at most
        ``MAX_CONSOLE_BYTES``)."""
        return ""

    def power_on(self, instance):
        pass

    def pause(self, instance):
        pass

    def unpause(self, instance):
        pass

    # -- compute RPC 1.6: a driver without them fails the action (the
    # -- conductor puts the server back as it was)
    def suspend(self, instance):
        raise NotImplementedError()

    def resume(self, instance):
        raise NotImplementedError()

    def reboot(self, instance, reboot_type):
        raise NotImplementedError()

    # -- live migration (compute RPC 1.3): a driver without them cannot
    # -- live-migrate (the conductor rolls back)
    def pre_live_migration(self, instance, block_device_info):
        """Destination: the volumes are connected; make the guest's place
        and return what the source needs (``objects.LiveMigrateData``) or
        None."""
        raise NotImplementedError()

    def live_migration(self, instance, dest, migrate_data=None):
        """Source: move the running guest to host ``dest`` (the
        destination's ``pre_live_migration`` returned ``migrate_data``)."""
        raise NotImplementedError()

    def post_live_migration_at_destination(self, instance, block_device_info,
                                           power="running"):
        raise NotImplementedError()

    def post_live_migration(self, instance):
        raise NotImplementedError()

    def rollback_live_migration_at_destination(self, instance):
        pass
