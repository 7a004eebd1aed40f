"""abandoned_reservations: the uuids of block-device records whose reserve
an attach gave up on without an answer (a broker restart lost the call);
a reserve of the compute that arrives after the rollback is refused
instead of leaving a record that no attachment will ever fill.  Empty on
upgrade: a database of the release before has none.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26
"""
import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "abandoned_reservations",
        sa.Column("bdm_uuid", sa.String(36), primary_key=True),
        sa.Column("instance_uuid", sa.String(36), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=True),
    )
    op.create_index("abandoned_reservations_instance_uuid_idx",
                    "abandoned_reservations", ["instance_uuid"])
