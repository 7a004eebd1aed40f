"""The image a volume was created from.

Revision ID: 0003_volume_image_id
Revises: 0002_legacy_attachments
Create Date: 2026-11-25

``volumes.image_id``: the ``imageRef`` of the create (one of ``[volume]
images``), shown as Cinder's ``volume_image_metadata``; Nova's rebuild of a
volume-backed server compares it with the image asked for.
"""
from alembic import op
import sqlalchemy as sa

revision = "0003_volume_image_id"
down_revision = "0002_legacy_attachments"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("volumes") as batch:
        batch.add_column(sa.Column("image_id", sa.String(36), nullable=True))
