"""key_pairs: the users' public keys (os-keypairs), named per user.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""
import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "key_pairs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("fingerprint", sa.String(255)),
        sa.Column("public_key", sa.Text),
        sa.Column("type", sa.String(10), nullable=False),
        sa.Column("created_at", sa.DateTime),
        sa.Column("updated_at", sa.DateTime),
        sa.UniqueConstraint("user_id", "name",
                            name="uniq_key_pairs0user_id0name"))
