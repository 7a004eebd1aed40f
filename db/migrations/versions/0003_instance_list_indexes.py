"""Indexes that serve server lists in their order (newest first), per
project and for admins across projects: benchmark scenario C found the
all-tenants page reading every row of instances to return ten.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21
"""
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade():
    op.create_index("instances_project_id_deleted_created_at_id_idx", "instances",
                    ["project_id", "deleted", "created_at", "id"])
    op.create_index("instances_deleted_created_at_id_idx", "instances",
                    ["deleted", "created_at", "id"])
