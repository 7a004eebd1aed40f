"""Data access for the compute database: small functions, one transaction each.

One module per resource (``services``, ``flavors``, ``instances``,
``block_devices``, ``instance_actions``, ``keypairs``, ``migrations``,
``server_groups``, ``aggregates``, ``usage``, ``quotas``,
``server_tags_metadata``); this
package re-exports them all, so callers write
``db_api.instance_get_by_uuid``.  The objects layer (``objects/*.py``) is
the main caller; the conductor's reconcile pass
(``conductor/reconcile.py``: BDM reads and deletes, instance reads) and its
scheduler (``conductor/scheduler.py``: instance counts per host) call it
directly too.  A compute daemon never imports it.

Every function runs through the compute ``Database`` (``db.engine``):
writes are retried on lock contention, replayed once after a lost
connection, and ``exception.DatabaseUnavailable`` is raised while the
server cannot be reached.  Rows come back as plain dicts so that objects
never hold ORM state.  Conditional updates (``instance_update`` with
``expected_task_state``) are compare-and-swap UPDATEs, so two API workers
cannot both start an operation on one server.
"""
from volattach.db.api.aggregates import *  # noqa: F401,F403
from volattach.db.api.block_devices import *  # noqa: F401,F403
from volattach.db.api.flavors import *  # noqa: F401,F403
from volattach.db.api.instance_actions import *  # noqa: F401,F403
from volattach.db.api.instances import *  # noqa: F401,F403
from volattach.db.api.keypairs import *  # noqa: F401,F403
from volattach.db.api.migrations import *  # noqa: F401,F403
from volattach.db.api.quotas import *  # noqa: F401,F403
from volattach.db.api.server_groups import *  # noqa: F401,F403
from volattach.db.api.server_tags_metadata import *  # noqa: F401,F403
from volattach.db.api.services import *  # noqa: F401,F403
from volattach.db.api.usage import *  # noqa: F401,F403
from volattach.db.api import (aggregates, block_devices, flavors, instance_actions,
                              instances, keypairs, migrations, quotas,
                              server_groups, server_tags_metadata, services,
                              usage)

__all__ = [name for module in (aggregates, block_devices, flavors, instance_actions,
                               instances, keypairs, migrations, quotas,
                               server_groups, server_tags_metadata, services,
                               usage)
           for name in dir(module)
           if not name.startswith("_") and callable(getattr(module, name))
           and getattr(getattr(module, name), "__module__", None) == module.__name__]
