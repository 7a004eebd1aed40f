"""The base of the libvirt volume drivers: a volume's ``<disk>`` element.

A volume driver turns a connection_info into the ``<disk>`` QEMU opens
itself (QEMU's own network block clients, as Nova's network volume driver
does for RBD) and prepares the host on connect.  The disk is read-only
when the block-device record's attach mode OR the connection's
``access_mode`` says ``ro`` (real Cinder's RBD driver answers ``rw`` for a
read-only attachment: trusting access_mode alone would hand the guest a
writable disk), shareable for a multiattach volume (Nova's
``connection_info['multiattach']``), and passes discards on when the
connection asks for it (``discard``).
"""
from xml.sax import saxutils


def connection_data(connection_info):
    """The driver data of connection_info, nested (``data``) or flat."""
    info = connection_info or {}
    return info.get("data") if isinstance(info.get("data"), dict) else info


def q(value):
    """``value`` as a quoted XML attribute value."""
    return saxutils.quoteattr(str(value))


def disk_alias(serial):
    # user-defined aliases must start with "ua-"
    return "ua-" + serial


def is_readonly(connection_info, readonly=False):
    """Whether the disk must be read-only: asked by the caller (the
    record's attach mode) or by the connection's access_mode."""
    return bool(readonly) or (
        connection_data(connection_info).get("access_mode") == "ro")


def is_shareable(connection_info):
    info = connection_info or {}
    return bool(info.get("multiattach")
                or connection_data(info).get("multiattach"))


class VolumeDriver:
    """A volume QEMU opens over the network: nothing to do on the host.

    ``host`` is the driver's libvirt ``Host`` (drivers that keep state in
    libvirt, such as rbd's secrets, use it); ``cache`` the disk's cache
    mode (None: QEMU's default)."""

    cache = None

    def __init__(self, host=None):
        self.host = host

    def connect_volume(self, connection_info):
        pass

    def disconnect_volume(self, connection_info):
        pass

    def attach_failure(self, connection_info, error):
        """The reason of a failed attach of this disk (libvirt's error,
        which a volume type may complete with what it knows)."""
        return str(error)

    def source_xml(self, data):
        raise NotImplementedError()

    def driver_xml(self, data):
        attrs = "name='qemu' type='raw'"
        if self.cache:
            attrs += " cache=%s" % q(self.cache)
        if data.get("discard"):
            attrs += " discard='unmap'"
        return "<driver %s/>" % attrs

    def disk_xml(self, connection_info, target_dev, serial, readonly):
        data = connection_data(connection_info)
        return (
            "<disk type='network' device='disk'>%s%s"
            "<target dev=%s bus='virtio'/>"
            "<serial>%s</serial>%s%s<alias name=%s/></disk>"
            % (self.driver_xml(data), self.source_xml(data), q(target_dev),
               saxutils.escape(serial),
               "<readonly/>" if is_readonly(connection_info, readonly)
               else "",
               "<shareable/>" if is_shareable(connection_info) else "",
               q(disk_alias(serial))))
