"""What every query module of the volume database shares: the tables, the
row-to-dict helpers and the clock."""
import json

import sqlalchemy as sa

from volattach.volume.db import models

services = models.Service.__table__
volume_types = models.VolumeType.__table__
extra_specs = models.VolumeTypeExtraSpec.__table__
volumes = models.Volume.__table__
attachments = models.VolumeAttachment.__table__
attachment_specs = models.AttachmentSpec.__table__

DEFAULT_TYPE_NAME = "__DEFAULT__"

utcnow = models.utcnow


def _dict(row):
    return dict(row._mapping) if row is not None else None


def _one_of(column, values):
    """``column IN (...)`` of constants, as plain bound values: an
    "expanding" IN (SQLAlchemy's default for a list) is rendered again at
    every execution."""
    return column.in_([sa.literal(value) for value in values])


def _json_object(text):
    """A JSON object column's value (``{}`` stored as such is common)."""
    if text is None or text == "{}" or text == "":
        return {}
    return json.loads(text)

