"""migrations: the record of each live migration (os-migrations and
/servers/{id}/migrations), with its source, destination and status.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25
"""
import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "migrations",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=False, unique=True),
        sa.Column("instance_uuid", sa.String(36), nullable=False),
        sa.Column("source_compute", sa.String(255)),
        sa.Column("dest_compute", sa.String(255)),
        sa.Column("source_node", sa.String(255)),
        sa.Column("dest_node", sa.String(255)),
        sa.Column("dest_host", sa.String(255)),
        sa.Column("old_instance_type_id", sa.Integer),
        sa.Column("new_instance_type_id", sa.Integer),
        sa.Column("status", sa.String(255)),
        sa.Column("migration_type", sa.String(255)),
        sa.Column("hidden", sa.Boolean, nullable=False),
        sa.Column("user_id", sa.String(255)),
        sa.Column("project_id", sa.String(255)),
        sa.Column("deleted", sa.Boolean, nullable=False),
        sa.Column("created_at", sa.DateTime),
        sa.Column("updated_at", sa.DateTime))
    op.create_index("migrations_instance_uuid_status_idx", "migrations",
                    ["instance_uuid", "status"])
    op.create_index("migrations_source_compute_idx", "migrations",
                    ["source_compute"])
    op.create_index("migrations_dest_compute_idx", "migrations",
                    ["dest_compute"])
    op.create_index("migrations_created_at_id_idx", "migrations",
                    ["created_at", "id"])
