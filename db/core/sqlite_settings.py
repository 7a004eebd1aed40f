"""SQLite settings shared by the two embedded databases (compute, volume).

One option, ``[database] sqlite_synchronous``, sets ``PRAGMA synchronous``
for both: under ``volattach-all`` they live side by side, and an operator
chooses the durability of the embedded deployment once.
"""

SYNCHRONOUS_VALUES = ("NORMAL", "FULL")


def synchronous(value=None):
    """The ``PRAGMA synchronous`` value for a SQLite database: ``value``,
    or ``[database] sqlite_synchronous`` when None (one option for both
    SQLite databases: an operator chooses the durability of the embedded
    deployment once)."""
    if value is None:
        from volattach import conf as volattach_conf
        value = volattach_conf.CONF.database.sqlite_synchronous
    value = value.upper()
    if value not in SYNCHRONOUS_VALUES:
        raise ValueError("sqlite_synchronous must be one of %s, not %r"
                         % (", ".join(SYNCHRONOUS_VALUES), value))
    return value
