"""Indexes that serve the server lists' order (created_at DESC, id DESC)
under the admin's filters across projects: a status (vm_state), a host,
and the lists that include deleted servers (status DELETED,
changes-since/before).  Without them such a page read and sorted every
matching row to return a limit of them.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26
"""
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade():
    op.create_index("instances_vm_state_deleted_created_at_id_idx", "instances",
                    ["vm_state", "deleted", "created_at", "id"])
    op.create_index("instances_host_deleted_created_at_id_idx", "instances",
                    ["host", "deleted", "created_at", "id"])
    op.create_index("instances_created_at_id_idx", "instances", ["created_at", "id"])
