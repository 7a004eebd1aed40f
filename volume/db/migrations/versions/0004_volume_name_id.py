"""The id the backend names a volume's data by (Cinder's name_id).

Revision ID: 0004_volume_name_id
Revises: 0003_volume_image_id
Create Date: 2026-11-25

``volumes.name_id``: set when a migration or retype of an attached volume
completes: the volume keeps its id, and its data is now the target's,
which the backend (the file backend's file and NBD export names) knows by
the target's id.
"""
from alembic import op
import sqlalchemy as sa

revision = "0004_volume_name_id"
down_revision = "0003_volume_image_id"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("volumes") as batch:
        batch.add_column(sa.Column("name_id", sa.String(36), nullable=True))
