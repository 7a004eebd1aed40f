"""Volume and attachment states, and the rules that move between them.

Pure functions, no database: the manager and ``volume.db.api`` use them
inside their transactions, the unit tests check them directly.

The attach state table (cinder-attachments-api.md)::

    call                      volume status               attachment
    POST /attachments         available -> reserved       reserved
    PUT  /attachments/{id}    -> attaching                attaching
    os-complete               -> in-use                   attached
    DELETE /attachments/{id}  available once none remain  gone

As in Cinder, a new reservation moves the volume to reserved and a connect
to attaching even when other attachments are attached (a client polling
for in-use then waits for this attachment too); complete and delete derive
the status from the attachments that remain: attached > attaching >
detaching > reserved; none left: available.
"""

# Cinder's public status strings and the status a set of attachments
# implies are shared with the service's callers (volattach.volume_states).
from volattach.volume_states import (  # noqa: F401 (part of this module)
    ATT_ATTACHED, ATT_ATTACHING, ATT_DETACHING, ATT_RESERVED, ATTACHING,
    AVAILABLE, CREATING, DETACHING, DOWNLOADING, ERROR, IN_USE, RESERVED,
    status_from_attachments)

# Statuses from which a new reservation may be made.  A multiattach volume
# accepts one while other attachments are reserved or attaching: Cinder bug
# 1747985 (real Cinder 29 refuses with 400), fixed here as the
# multiattach-enhancements spec requires for multi-create.
RESERVABLE = (AVAILABLE, DOWNLOADING)
MULTIATTACH_RESERVABLE = (AVAILABLE, RESERVED, ATTACHING, IN_USE, DOWNLOADING)
# Statuses a new reservation moves to reserved (as real Cinder does).
RESERVE_TRANSITIONS = (AVAILABLE, DOWNLOADING, IN_USE)
# A non-multiattach volume may be reserved again for the instance that
# already holds an attachment on it (migrations do this).
SAME_INSTANCE_RESERVABLE = (RESERVED, ATTACHING, IN_USE)

# Statuses a volume can be deleted from (Cinder's list).
DELETABLE = (AVAILABLE, ERROR, "error_restoring", "error_extending",
             "error_managing")
DELETE_REFUSED = (
    "Volume status must be available or error or error_restoring or "
    "error_extending or error_managing and must not be migrating, attached, "
    "belong to a group, have snapshots, awaiting a transfer, or be "
    "disassociated from snapshots after volume transfer.")

# Statuses that are a function of the attachments; others (error,
# maintenance... set by os-reset_status) are left alone by attachment calls.
ATTACH_DERIVED = (AVAILABLE, RESERVED, ATTACHING, IN_USE, DETACHING)

# Attachment statuses an update (PUT with a connector) or complete accepts.
CONNECTABLE = (ATT_RESERVED, ATT_ATTACHING, ATT_ATTACHED)
COMPLETABLE = (ATT_RESERVED, ATT_ATTACHING, ATT_ATTACHED)
CONNECTED = (ATT_ATTACHING, ATT_ATTACHED)

# Statuses os-reset_status accepts (Cinder's volume statuses).
RESETTABLE = (CREATING, AVAILABLE, RESERVED, ATTACHING, IN_USE, DETACHING,
              DOWNLOADING, ERROR, "deleting", "error_deleting",
              "error_restoring", "error_extending", "maintenance",
              "backing-up", "restoring-backup", "uploading", "retyping",
              "extending")


def reserve_refused(volume_id, status, multiattach):
    """Reason of the 400 for a reservation the volume's status refuses."""
    allowed = MULTIATTACH_RESERVABLE if multiattach else RESERVABLE
    return ("Volume %s status must be %s to reserve, but the current status "
            "is %s." % (volume_id, " or ".join(allowed), status))


def is_multiattach_spec(value):
    """True for a type's ``multiattach`` extra spec of ``<is> True``."""
    return isinstance(value, str) and value.strip().lower() == "<is> true"


def attach_mode_for(volume_readonly, requested_mode, connector_mode):
    """``ro``/``rw`` of an attachment being connected.

    A read-only volume always attaches ``ro``; else the mode given at
    creation (3.54 ``mode``), else the connector's ``mode``, else ``rw``.
    """
    if volume_readonly:
        return "ro"
    if requested_mode in ("ro", "rw"):
        return requested_mode
    if connector_mode in ("ro", "rw"):
        return connector_mode
    return "rw"
