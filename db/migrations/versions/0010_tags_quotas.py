"""Server tags, quotas, quota classes and the per-project quota lock; the flavor's vcpus
and memory_mb on each instance (what the cores and ram quotas count),
filled from the flavor each row holds.  Metadata and locked_reason were
columns of ``instances`` already.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28
"""
import json

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "instance_tags",
        sa.Column("instance_uuid", sa.String(36), primary_key=True),
        sa.Column("tag", sa.String(60), primary_key=True),
    )
    op.create_index("instance_tags_tag_idx", "instance_tags", ["tag"])
    op.create_table(
        "quotas",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("resource", sa.String(255), nullable=False),
        sa.Column("hard_limit", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=True),
        sa.Column("updated_at", sa.DateTime, nullable=True),
        sa.UniqueConstraint("project_id", "user_id", "resource",
                            name="uniq_quotas0project_id0user_id0resource"),
    )
    op.create_table(
        "quota_classes",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("class_name", sa.String(255), nullable=False),
        sa.Column("resource", sa.String(255), nullable=False),
        sa.Column("hard_limit", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=True),
        sa.Column("updated_at", sa.DateTime, nullable=True),
        sa.UniqueConstraint("class_name", "resource",
                            name="uniq_quota_classes0class_name0resource"),
    )
    op.create_table(
        "quota_project_locks",
        sa.Column("project_id", sa.String(255), primary_key=True),
    )
    with op.batch_alter_table("instances") as batch:
        batch.add_column(sa.Column("vcpus", sa.Integer, nullable=True))
        batch.add_column(sa.Column("memory_mb", sa.Integer, nullable=True))
    instances = sa.table("instances", sa.column("id", sa.Integer),
                         sa.column("flavor", sa.Text),
                         sa.column("vcpus", sa.Integer),
                         sa.column("memory_mb", sa.Integer))
    conn = op.get_bind()
    for row in conn.execute(sa.select(instances.c.id, instances.c.flavor)).all():
        try:
            flavor = json.loads(row.flavor or "{}")
        except ValueError:
            flavor = {}
        conn.execute(instances.update().where(instances.c.id == row.id).values(
            vcpus=int(flavor.get("vcpus") or 0),
            memory_mb=int(flavor.get("memory_mb") or 0)))
