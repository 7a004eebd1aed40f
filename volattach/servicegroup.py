"""Is a service up?  Its last heartbeat is younger than ``service_down_time``
and it is not forced down.

``UpCache`` spares the compute API a services-table query on every attach
and detach (the "is the server's compute up?" check).  It remembers, per
key (host and binary), the service row that last said *up*, for
``UP_CACHE_SECONDS``, and applies ``is_up`` to it again at each question,
with the current time:

- a compute whose heartbeats stop is seen down no later than without the
  cache: the remembered heartbeat is never newer than the database's;
- a row that says down is never remembered: a down (or missing) service is
  read from the database every time, so it is seen up again as soon as its
  heartbeat is;
- what the cache can delay, by at most ``UP_CACHE_SECONDS``, is a change
  that is not a heartbeat: a service forced down (``forced_down``) or
  deleted while it was heartbeating.  Nova's own service group drivers
  answer from a heartbeat written up to ``report_interval`` (10 s) earlier
  anyway; a few seconds is far below ``service_down_time`` (60 s), the
  delay after which a dead compute is seen down.
"""
import threading
import time

from volattach.db.models import utcnow
from volattach.conf import CONF

# Well below report_interval (10 s) and service_down_time (60 s) defaults.
UP_CACHE_SECONDS = 3.0


def is_up(service):
    if service.forced_down:
        return False
    last = service.last_seen_up or service.updated_at or service.created_at
    if last is None:
        return False
    last = last.replace(tzinfo=None)
    return (utcnow() - last).total_seconds() <= CONF.service_down_time


class RecentRows:
    """Service rows, per key, remembered for ``ttl`` seconds while
    ``keep(row)`` holds.

    ``get(key, load)`` answers from the row read at most ``ttl`` seconds ago
    if ``keep`` still holds for it (asked again at each question), else
    from ``load()`` (the current row, or None); a row for which ``keep``
    does not hold is never remembered and never returned.  ``UpCache`` and
    the conductor's connector cache are this with their own ``keep``.
    """

    def __init__(self, keep, ttl=UP_CACHE_SECONDS, clock=time.monotonic):
        self.keep = keep
        self.ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._rows = {}      # key -> (clock() when read, service row)

    def get(self, key, load):
        """The row of ``key`` for which ``keep`` holds, or None."""
        now = self._clock()
        entry = self._rows.get(key)
        if entry is not None and now - entry[0] < self.ttl and self.keep(entry[1]):
            return entry[1]
        row = load()
        kept = row is not None and self.keep(row)
        with self._lock:
            if kept:
                self._rows[key] = (now, row)
            else:
                self._rows.pop(key, None)
        return row if kept else None

    def clear(self):
        with self._lock:
            self._rows.clear()


class UpCache(RecentRows):
    """Answers "is it up?" from a service row read at most ``ttl`` seconds
    ago when that row said up; otherwise from ``load()`` (see the module
    docstring for what that changes)."""

    def __init__(self, ttl=UP_CACHE_SECONDS, clock=time.monotonic):
        super().__init__(is_up, ttl, clock)

    def is_up(self, key, load):
        """Whether the service of ``key`` is up; ``load()`` returns its
        current row (or None when there is none)."""
        return self.get(key, load) is not None
