"""The libvirt driver's ``extend_volume`` (volume-extended): the disk of
the volume, found by its alias, is resized to the new size in bytes with
virDomainBlockResize; a read-only disk, a missing one, and libvirt's own
refusal fail with the reason; a guest that is not running is left alone
(a real guest grows in tests/guest/test_external_events.py)."""
import pytest

from volattach import exception
from volattach.compute.virt.libvirt import driver

VOLUME = "6a2c7d1e-9b0f-4d3e-8a51-2f4b6c8d0e11"
DISK = """<disk type='network' device='disk'>
  <source protocol='rbd' name='volumes/volume-%s'/>
  <target dev='vdb' bus='virtio'/>
  <serial>%s</serial>%s
  <alias name='ua-%s'/>
</disk>"""


class _LibvirtError(Exception):
    pass


class _Libvirt:
    libvirtError = _LibvirtError
    VIR_DOMAIN_BLOCK_RESIZE_BYTES = 4


class _Domain:
    def __init__(self, readonly=False, active=True, refuse=None):
        self.xml = "<domain><devices>%s</devices></domain>" % (
            DISK % (VOLUME, VOLUME, "<readonly/>" if readonly else "",
                    VOLUME))
        self.active, self.refuse, self.resized = active, refuse, []

    def isActive(self):
        return self.active

    def XMLDesc(self, flags):
        return self.xml

    def blockResize(self, disk, size, flags):
        if self.refuse:
            raise _LibvirtError(self.refuse)
        self.resized.append((disk, size, flags))


class _Host:
    libvirt = _Libvirt


class _Instance:
    uuid = "0b6d6f5e-1c4e-4f4b-9a51-6f0b7e1d2a10"


def _driver(domain):
    drv = object.__new__(driver.LibvirtDriver)
    drv._host = _Host()
    drv._domain = lambda instance: domain
    return drv


INFO = {"driver_volume_type": "rbd", "data": {"volume_id": VOLUME}}


def test_the_disk_is_resized_in_bytes():
    domain = _Domain()
    _driver(domain).extend_volume(_Instance(), INFO, "/dev/vdb", 2 * 1024 ** 3)
    assert domain.resized == [("vdb", 2 * 1024 ** 3, 4)]


def test_a_guest_not_running_is_left_alone():
    domain = _Domain(active=False)
    _driver(domain).extend_volume(_Instance(), INFO, "/dev/vdb", 2)
    assert domain.resized == []


@pytest.mark.parametrize("domain,reason", [
    (_Domain(readonly=True), "attached read-only"),
    (_Domain(refuse="Cannot grow NBD nodes"), "Cannot grow NBD nodes"),
])
def test_refusals_say_why(domain, reason):
    with pytest.raises(exception.VirtDriverError) as info:
        _driver(domain).extend_volume(_Instance(), INFO, "/dev/vdb", 2)
    assert reason in str(info.value)
    assert domain.resized == []


def test_a_disk_the_guest_does_not_have():
    other = dict(INFO, data={"volume_id": "another"})
    with pytest.raises(exception.VirtDriverError) as info:
        _driver(_Domain()).extend_volume(_Instance(), other, "/dev/vdc", 2)
    assert "no disk of volume another" in str(info.value)
