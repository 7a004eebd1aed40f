"""The libvirt virt driver (QEMU/KVM through libvirt-python); needs the
``volattach[libvirt]`` extra."""
