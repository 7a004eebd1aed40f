"""Server groups and host aggregates.

- ``instance_groups``: os-server-groups (a policy and its rules per group);
- ``instance_group_members``: the servers created into a group
  (``scheduler_hints: {"group": ...}``), which the scheduler spreads or
  packs by the group's policy;
- ``aggregates``, ``aggregate_hosts``, ``aggregate_metadata``: os-aggregates;
  an aggregate's ``availability_zone`` metadata puts its hosts in that zone.

New tables only: a database of the release before keeps every row and has
no group and no aggregate (every compute stays in the default zone).
(``services`` already holds ``disabled``, ``disabled_reason`` and
``forced_down``.)

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28
"""
import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "instance_groups",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("name", sa.String(255)),
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("policy", sa.String(255), nullable=False),
        sa.Column("rules", sa.Text),
        sa.Column("created_at", sa.DateTime),
        sa.Column("updated_at", sa.DateTime),
        sa.UniqueConstraint("uuid", name="uniq_instance_groups0uuid"))
    op.create_index("instance_groups_project_id_idx", "instance_groups",
                    ["project_id"])
    op.create_table(
        "instance_group_members",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("group_id", sa.Integer,
                  sa.ForeignKey("instance_groups.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("instance_uuid", sa.String(36), nullable=False),
        sa.Column("created_at", sa.DateTime),
        sa.UniqueConstraint("group_id", "instance_uuid",
                            name="uniq_instance_group_members0group0instance"))
    op.create_index("instance_group_members_instance_uuid_idx",
                    "instance_group_members", ["instance_uuid"])
    op.create_table(
        "aggregates",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime),
        sa.Column("updated_at", sa.DateTime),
        sa.UniqueConstraint("uuid", name="uniq_aggregates0uuid"),
        sa.UniqueConstraint("name", name="uniq_aggregates0name"))
    op.create_table(
        "aggregate_hosts",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("aggregate_id", sa.Integer,
                  sa.ForeignKey("aggregates.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime),
        sa.UniqueConstraint("host", "aggregate_id",
                            name="uniq_aggregate_hosts0host0aggregate_id"))
    op.create_table(
        "aggregate_metadata",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("aggregate_id", sa.Integer,
                  sa.ForeignKey("aggregates.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("value", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime),
        sa.UniqueConstraint("aggregate_id", "key",
                            name="uniq_aggregate_metadata0aggregate_id0key"))
    op.create_index("aggregate_metadata_key_idx", "aggregate_metadata", ["key"])
