"""Images without an image service: every directory ``<image id>/`` under
``[libvirt] image_dir`` holding ``kernel`` (and ``initramfs``, optionally
``cmdline``) is a bootable image; see tools/build-test-image.sh.  Imports
nothing of libvirt, so the API can check an imageRef with it."""
import os

from volattach.conf import CONF


def image_path(image_id, image_dir=None):
    """The directory of ``image_id``, or None when there is no such
    image."""
    base = image_dir or CONF.libvirt.image_dir
    if (not base or not image_id or "/" in image_id
            or image_id.startswith(".")):
        return None
    path = os.path.join(base, image_id)
    if os.path.isfile(os.path.join(path, "kernel")):
        return path
    return None
