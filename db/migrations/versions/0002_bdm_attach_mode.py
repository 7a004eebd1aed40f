"""attach_mode on block-device mappings (multiattach-enhancements spec).

Nullable and without a default: local disks have no attach mode, and the
BlockDeviceMapping object reads a volume mapping without one as "rw".

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21
"""
import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("block_device_mappings") as batch:
        batch.add_column(sa.Column("attach_mode", sa.String(2), nullable=True))
