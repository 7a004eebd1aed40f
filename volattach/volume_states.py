"""Cinder's public volume and attachment status strings, and the volume
status a set of attachments implies.

Shared by the volume service (``volattach.volume.states`` builds its attach
rules on them) and by the callers of a Cinder-compatible service (the
conductor's reconcile pass), so that a caller imports nothing of the
service's package.  Pure constants and one pure function.
"""

# Volume statuses.
CREATING = "creating"
AVAILABLE = "available"
RESERVED = "reserved"
ATTACHING = "attaching"
IN_USE = "in-use"
DETACHING = "detaching"
DOWNLOADING = "downloading"
ERROR = "error"

# Attachment statuses.
ATT_RESERVED = "reserved"
ATT_ATTACHING = "attaching"
ATT_ATTACHED = "attached"
ATT_DETACHING = "detaching"


def status_from_attachments(attach_statuses):
    """The volume status that a set of attachment statuses implies:
    attached > attaching > detaching > reserved; none left: available."""
    statuses = set(attach_statuses)
    if ATT_ATTACHED in statuses:
        return IN_USE
    if ATT_ATTACHING in statuses:
        return ATTACHING
    if ATT_DETACHING in statuses:
        return DETACHING
    if ATT_RESERVED in statuses:
        return RESERVED
    return AVAILABLE
