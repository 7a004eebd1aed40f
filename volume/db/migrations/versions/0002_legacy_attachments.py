"""Attachments made by Cinder's attach actions from before 3.27.

Revision ID: 0002_legacy_attachments
Revises: 0001_initial
Create Date: 2026-11-23

``volumes.readonly_set``: the read-only flag was set by
``os-update_readonly_flag`` (Cinder then shows ``readonly`` in the
metadata, ``"True"`` or ``"False"``).  ``volume_attachments.legacy`` marks
an attachment made by ``os-reserve`` /
``os-attach`` (the old attach actions) rather than by ``POST
/attachments``: the two APIs must not reserve the same volume at once.
"""
from alembic import op
import sqlalchemy as sa

revision = "0002_legacy_attachments"
down_revision = "0001_initial"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("volumes") as batch:
        batch.add_column(sa.Column("readonly_set", sa.Boolean,
                                   nullable=False, server_default=sa.false()))
    with op.batch_alter_table("volume_attachments") as batch:
        batch.add_column(sa.Column("legacy", sa.Boolean, nullable=False,
                                   server_default=sa.false()))
