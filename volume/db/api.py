"""Data access of the volume service: every query, as functions of a
connection (``Database.read``/``read_single``/``write``), gathered from
the per-resource modules (``services``, ``types``, ``volumes``,
``attachments``) so that callers import one name.

Rows come back as plain dicts keyed by column name, JSON columns decoded
(a volume's ``metadata``, an attachment's ``connection_info``).  Functions
that decide a state change do it in the database, never read-then-write:

* ``volume_reserve`` is a compare-and-swap UPDATE whose WHERE clause holds
  the allowed statuses (and the multiattach flag); the row it returns says
  that the reservation won.  On PostgreSQL the UPDATE also takes the row
  lock, so every other writer of that volume waits for this transaction.
* ``attachment_lock`` locks the attachment's volume row (SELECT ... FOR
  UPDATE) first in every other attachment change, so the status set at the
  end of a transaction always accounts for every committed attachment.
* ``volume_delete`` deletes only a deletable volume without attachments, in
  one statement.

On SQLite the write transaction itself is ``BEGIN IMMEDIATE`` (one writer at
a time), which gives the same guarantees.

The statements of the attach cycle and of the volume and attachment reads
are built once per shape by cached builders (``_stmt_*``), with bind
parameters: SQLAlchemy then finds their compiled form in its cache at once
instead of building and hashing a new statement per call.  Those reads are
single statements (joins), consistent without a transaction around them
(``Database.read_single``).
"""
# flake8: noqa: F401,F403
from volattach.volume.db.attachments import *
from volattach.volume.db.common import (DEFAULT_TYPE_NAME, attachment_specs,
                                        attachments, extra_specs, services,
                                        utcnow, volume_types, volumes)
from volattach.volume.db.services import *
from volattach.volume.db.types import *
from volattach.volume.db.volumes import *
