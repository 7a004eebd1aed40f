"""instances.user_data: the server's user data (base64, as given at create
or rebuild), delivered to the guest through its config drive.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25
"""
import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("instances") as batch:
        batch.add_column(sa.Column("user_data", sa.Text, nullable=True))
