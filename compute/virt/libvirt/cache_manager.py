"""The image cache manager: a daemon thread per cache directory that every
``[image_cache] manager_interval`` seconds removes the cached images no
guest of this host boots from (``boot.images_in_use``) once they were last
used ``remove_unused_original_minimum_age_seconds`` ago, as Nova's image
cache manager does."""
import logging
import os
import threading

from volattach.compute.virt.libvirt import boot
from volattach.conf import CONF

LOG = logging.getLogger(__name__)

_started = set()
_guard = threading.Lock()


def run_once(cache):
    """One pass; the ids removed."""
    if not CONF.image_cache.remove_unused_base_images:
        return []
    in_use = boot.images_in_use(os.path.dirname(cache.base_dir))
    return cache.remove_unused(
        in_use, CONF.image_cache.remove_unused_original_minimum_age_seconds)


def _loop(cache, stop):
    while not stop.wait(CONF.image_cache.manager_interval):
        try:
            run_once(cache)
        except Exception:
            LOG.exception("image cache pass over %s failed", cache.base_dir)


def start(cache, stop=None):
    """Start the manager of ``cache``'s directory unless one runs."""
    if CONF.image_cache.manager_interval <= 0:
        return
    with _guard:
        if cache.base_dir in _started:
            return
        _started.add(cache.base_dir)
    threading.Thread(target=_loop, args=(cache, stop or threading.Event()),
                     name="image-cache-manager", daemon=True).start()
