"""Virt drivers: what a compute asks of its hypervisor."""


def load_driver(name, host):
    if name == "fake":
        from volattach.compute.virt import fake
        return fake.FakeDriver(host)
    if name == "libvirt":
        from volattach.compute.virt.libvirt import driver as libvirt_driver
        return libvirt_driver.LibvirtDriver(host)
    raise ValueError("unknown virt driver %r" % name)
