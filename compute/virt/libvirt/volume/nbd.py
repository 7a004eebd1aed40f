"""``nbd`` volumes (the volume service's file backend): QEMU's NBD client."""
import socket

from volattach.compute.virt.libvirt.volume import base
from volattach import exception


class NBDVolumeDriver(base.VolumeDriver):
    """An NBD export; QEMU reconnects for ``reconnect_delay`` seconds when
    the server goes away (a storage daemon restart)."""

    reconnect_delay = 10

    def connect_volume(self, connection_info):
        data = base.connection_data(connection_info)
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
                % (base.q(data["name"]), base.q(data["host"]),
                   base.q(data["port"]), base.q(self.reconnect_delay)))
