"""services.images: the image ids a compute's virt driver can boot (JSON
list), reported by the compute when it registers and refreshed on its
periodic state report; the compute API checks an imageRef against the
union of what the up computes report (``api/compute/images.py``).  NULL
for every other service and for computes of a release before (service
version 11), which report nothing.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26
"""
import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("services") as batch:
        batch.add_column(sa.Column("images", sa.Text, nullable=True))
