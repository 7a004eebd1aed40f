"""The encryption specs of volume types (Cinder's ``encryption`` table).

Revision ID: 0005_type_encryption
Revises: 0004_volume_name_id
Create Date: 2026-11-26

``encryption``: one row per volume type that has encryption specs
(``/types/{type_id}/encryption``).  A new table: no existing row changes.
"""
from alembic import op
import sqlalchemy as sa

revision = "0005_type_encryption"
down_revision = "0004_volume_name_id"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "encryption",
        sa.Column("encryption_id", sa.String(36), primary_key=True),
        sa.Column("volume_type_id", sa.String(36),
                  sa.ForeignKey("volume_types.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("cipher", sa.String(255)),
        sa.Column("key_size", sa.Integer),
        sa.Column("provider", sa.String(255), nullable=False),
        sa.Column("control_location", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime),
        sa.UniqueConstraint("volume_type_id",
                            name="uniq_encryption0volume_type_id"),
    )
