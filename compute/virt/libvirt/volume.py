"""Volume drivers of the libvirt driver, keyed by ``driver_volume_type``.

Each turns a volume's connection_info into the ``<disk>`` QEMU opens itself
(QEMU's own network block clients, as Nova's network volume driver does for
RBD), and checks on connect that the host can reach the volume.  ``nbd`` is
here; ``rbd`` and ``iscsi`` (QEMU's libiscsi) fit the same shape.
"""
import socket
from xml.sax import saxutils

from volattach import exception


def connection_data(connection_info):
    """The driver data of connection_info, nested (``data``) or flat."""
    info = connection_info or {}
    return info.get("data") if isinstance(info.get("data"), dict) else info


def _q(value):
    return saxutils.quoteattr(str(value))


class VolumeDriver:
    """A volume QEMU opens over the network: nothing to do on the host."""

    def connect_volume(self, connection_info):
        pass

    def disconnect_volume(self, connection_info):
        pass

    def source_xml(self, data):
        raise NotImplementedError()

    def disk_xml(self, connection_info, target_dev, serial, readonly):
        data = connection_data(connection_info)
        return (
            "<disk type='network' device='disk'>"
            "<driver name='qemu' type='raw'/>%s"
            "<target dev=%s bus='virtio'/>"
            "<serial>%s</serial>%s<alias name=%s/></disk>"
            % (self.source_xml(data), _q(target_dev),
               saxutils.escape(serial), "<readonly/>" if readonly else "",
               _q(disk_alias(serial))))


def disk_alias(serial):
    # user-defined aliases must start with "ua-"
    return "ua-" + serial


class NBDVolumeDriver(VolumeDriver):
    """An NBD export; QEMU reconnects for ``reconnect_delay`` seconds when
    the server goes away (a storage daemon restart)."""

    reconnect_delay = 10

    def connect_volume(self, connection_info):
        data = connection_data(connection_info)
        try:
            socket.create_connection((data["host"], int(data["port"])),
                                     timeout=5).close()
        except (OSError, KeyError, ValueError) as e:
            raise exception.VirtDriverError(
                operation="connect",
                reason="NBD server %s:%s unreachable: %s"
                % (data.get("host"), data.get("port"), e))

    def source_xml(self, data):
        return ("<source protocol='nbd' name=%s><host name=%s port=%s/>"
                "<reconnect delay=%s/></source>"
                % (_q(data["name"]), _q(data["host"]), _q(data["port"]),
                   _q(self.reconnect_delay)))


VOLUME_DRIVERS = {
    "nbd": NBDVolumeDriver,
}


def volume_driver(connection_info):
    kind = (connection_info or {}).get("driver_volume_type")
    cls = VOLUME_DRIVERS.get(kind)
    if cls is None:
        raise exception.VirtDriverError(
            operation="connect",
            reason="volume type %r is not supported by the libvirt driver"
            % kind)
    return cls()
