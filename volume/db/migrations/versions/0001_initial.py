"""Initial tables of the volume service and the __DEFAULT__ volume type.

Revision ID: 0001_initial
Revises:
Create Date: 2026-11-21
"""
import datetime
import uuid

from alembic import op
import sqlalchemy as sa

revision = "0001_initial"
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "services",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uuid", sa.String(36), nullable=False, unique=True),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("binary", sa.String(255), nullable=False),
        sa.Column("topic", sa.String(255)),
        sa.Column("availability_zone", sa.String(255), nullable=False),
        sa.Column("disabled", sa.Boolean, nullable=False),
        sa.Column("disabled_reason", sa.String(255)),
        sa.Column("report_count", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime),
        sa.UniqueConstraint("host", "binary",
                            name="uniq_services0host0binary"),
    )
    types = op.create_table(
        "volume_types",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(255), nullable=False, unique=True),
        sa.Column("description", sa.String(255)),
        sa.Column("is_public", sa.Boolean, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime),
    )
    op.create_table(
        "volume_type_extra_specs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("volume_type_id", sa.String(36),
                  sa.ForeignKey("volume_types.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("value", sa.String(255), nullable=False),
        sa.UniqueConstraint("volume_type_id", "key",
                            name="uniq_volume_type_extra_specs0type0key"),
    )
    op.create_table(
        "volumes",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("name", sa.String(255)),
        sa.Column("description", sa.String(255)),
        sa.Column("size", sa.Integer, nullable=False),
        sa.Column("status", sa.String(255), nullable=False),
        sa.Column("migration_status", sa.String(255)),
        sa.Column("availability_zone", sa.String(255), nullable=False),
        sa.Column("volume_type_id", sa.String(36),
                  sa.ForeignKey("volume_types.id"), nullable=False),
        sa.Column("multiattach", sa.Boolean, nullable=False),
        sa.Column("readonly", sa.Boolean, nullable=False),
        sa.Column("shared_targets", sa.Boolean, nullable=False),
        sa.Column("bootable", sa.Boolean, nullable=False),
        sa.Column("service_uuid", sa.String(36)),
        sa.Column("host", sa.String(255)),
        sa.Column("metadata", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime),
    )
    op.create_index("volumes_project_id_idx", "volumes", ["project_id"])
    op.create_table(
        "volume_attachments",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("volume_id", sa.String(36), sa.ForeignKey("volumes.id"),
                  nullable=False),
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("instance_uuid", sa.String(36)),
        sa.Column("attached_host", sa.String(255)),
        sa.Column("mountpoint", sa.String(255)),
        sa.Column("attach_status", sa.String(255), nullable=False),
        sa.Column("attach_mode", sa.String(2)),
        sa.Column("connection_info", sa.Text),
        sa.Column("attach_time", sa.DateTime),
        sa.Column("detach_time", sa.DateTime),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime),
    )
    op.create_index("volume_attachments_volume_id_idx",
                    "volume_attachments", ["volume_id"])
    op.create_index("volume_attachments_instance_uuid_idx",
                    "volume_attachments", ["instance_uuid"])
    op.create_index("volume_attachments_attached_host_idx",
                    "volume_attachments", ["attached_host"])
    op.create_table(
        "attachment_specs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("attachment_id", sa.String(36),
                  sa.ForeignKey("volume_attachments.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.UniqueConstraint("attachment_id", "key",
                            name="uniq_attachment_specs0attachment0key"),
    )
    op.bulk_insert(types, [{
        "id": str(uuid.uuid4()), "name": "__DEFAULT__",
        "description": "Default Volume Type", "is_public": True,
        "created_at": datetime.datetime.now(datetime.timezone.utc).replace(
            tzinfo=None),
    }])


def downgrade():
    for table in ("attachment_specs", "volume_attachments", "volumes",
                  "volume_type_extra_specs", "volume_types", "services"):
        op.drop_table(table)
