"""Is a service up?  Its last heartbeat is younger than ``service_down_time``
and it is not forced down."""
from db.models import utcnow
from volattach.conf import CONF


def is_up(service):
    if service.forced_down:
        return False
    last = service.last_seen_up or service.updated_at or service.created_at
    if last is None:
        return False
    last = last.replace(tzinfo=None)
    return (utcnow() - last).total_seconds() <= CONF.service_down_time
