"""Initial compute schema: services, flavors, instances, block-device
mappings, instance actions and their events; seeds the default flavors.

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""


import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _timestamps():
    return [sa.Column("created_at", sa.DateTime, nullable=True),
            sa.Column("updated_at", sa.DateTime, nullable=True)]


def upgrade():
    op.create_table(
        "services",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=False, unique=True),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("binary", sa.String(255), nullable=False, index=True),
        sa.Column("topic", sa.String(255)),
        sa.Column("report_count", sa.Integer, nullable=False),
        sa.Column("disabled", sa.Boolean, nullable=False),
        sa.Column("disabled_reason", sa.String(255)),
        sa.Column("forced_down", sa.Boolean, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("rpc_version", sa.String(16)),
        sa.Column("connector", sa.Text),
        sa.Column("last_seen_up", sa.DateTime),
        *_timestamps(),
        sa.UniqueConstraint("host", "binary", name="uniq_services0host0binary"),
    )
    flavors = op.create_table(
        "flavors",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("flavorid", sa.String(255), nullable=False, unique=True),
        sa.Column("name", sa.String(255), nullable=False, unique=True),
        sa.Column("vcpus", sa.Integer, nullable=False),
        sa.Column("memory_mb", sa.Integer, nullable=False),
        sa.Column("root_gb", sa.Integer, nullable=False),
        sa.Column("ephemeral_gb", sa.Integer, nullable=False),
        sa.Column("swap", sa.Integer, nullable=False),
        sa.Column("rxtx_factor", sa.Integer, nullable=False),
        sa.Column("is_public", sa.Boolean, nullable=False),
        sa.Column("disabled", sa.Boolean, nullable=False),
        sa.Column("description", sa.Text),
    )
    op.create_table(
        "instances",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=False, unique=True),
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("display_name", sa.String(255)),
        sa.Column("display_description", sa.Text),
        sa.Column("hostname", sa.String(255)),
        sa.Column("host", sa.String(255)),
        sa.Column("node", sa.String(255)),
        sa.Column("vm_state", sa.String(255), nullable=False),
        sa.Column("task_state", sa.String(255)),
        sa.Column("power_state", sa.Integer, nullable=False),
        sa.Column("flavor", sa.Text, nullable=False),
        sa.Column("image_ref", sa.String(255)),
        sa.Column("key_name", sa.String(255)),
        sa.Column("locked", sa.Boolean, nullable=False),
        sa.Column("locked_by", sa.String(16)),
        sa.Column("locked_reason", sa.Text),
        sa.Column("availability_zone", sa.String(255)),
        sa.Column("reservation_id", sa.String(255)),
        sa.Column("launch_index", sa.Integer, nullable=False),
        sa.Column("access_ip_v4", sa.String(39)),
        sa.Column("access_ip_v6", sa.String(39)),
        sa.Column("config_drive", sa.String(255)),
        sa.Column("metadata", sa.Text),
        sa.Column("fault", sa.Text),
        sa.Column("shelved_at", sa.DateTime),
        sa.Column("launched_at", sa.DateTime),
        sa.Column("terminated_at", sa.DateTime),
        sa.Column("deleted_at", sa.DateTime),
        sa.Column("deleted", sa.Integer, nullable=False),
        *_timestamps(),
    )
    op.create_index("instances_project_id_deleted_idx", "instances", ["project_id", "deleted"])
    op.create_index("instances_host_deleted_idx", "instances", ["host", "deleted"])
    op.create_table(
        "block_device_mappings",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=False, unique=True),
        sa.Column("instance_uuid", sa.String(36), nullable=False),
        sa.Column("source_type", sa.String(255)),
        sa.Column("destination_type", sa.String(255)),
        sa.Column("boot_index", sa.Integer),
        sa.Column("device_name", sa.String(255)),
        sa.Column("volume_id", sa.String(36)),
        sa.Column("attachment_id", sa.String(36)),
        sa.Column("connection_info", sa.Text),
        sa.Column("delete_on_termination", sa.Boolean, nullable=False),
        sa.Column("tag", sa.String(255)),
        sa.Column("volume_size", sa.Integer),
        sa.Column("volume_type", sa.String(255)),
        sa.Column("disk_bus", sa.String(255)),
        sa.Column("device_type", sa.String(255)),
        sa.Column("guest_format", sa.String(255)),
        sa.Column("image_id", sa.String(36)),
        sa.Column("snapshot_id", sa.String(36)),
        sa.Column("no_device", sa.Boolean, nullable=False),
        *_timestamps(),
    )
    op.create_index("block_device_mappings_instance_uuid_idx", "block_device_mappings",
                    ["instance_uuid"])
    op.create_index("block_device_mappings_volume_id_idx", "block_device_mappings", ["volume_id"])
    op.create_index("block_device_mappings_attachment_id_idx", "block_device_mappings",
                    ["attachment_id"])
    op.create_table(
        "instance_actions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("action", sa.String(255), nullable=False),
        sa.Column("instance_uuid", sa.String(36), nullable=False),
        sa.Column("request_id", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255)),
        sa.Column("project_id", sa.String(255)),
        sa.Column("start_time", sa.DateTime, nullable=False),
        sa.Column("finish_time", sa.DateTime),
        sa.Column("message", sa.String(255)),
        sa.Column("updated_at", sa.DateTime),
    )
    op.create_index("instance_actions_instance_uuid_request_id_idx", "instance_actions",
                    ["instance_uuid", "request_id"])
    op.create_table(
        "instance_actions_events",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("action_id", sa.Integer,
                  sa.ForeignKey("instance_actions.id", ondelete="CASCADE"), nullable=False),
        sa.Column("event", sa.String(255), nullable=False),
        sa.Column("start_time", sa.DateTime, nullable=False),
        sa.Column("finish_time", sa.DateTime),
        sa.Column("result", sa.String(255)),
        sa.Column("traceback", sa.Text),
        sa.Column("host", sa.String(255)),
        sa.Column("details", sa.Text),
    )
    op.create_index("instance_actions_events_action_id_idx", "instance_actions_events",
                    ["action_id"])

    # The flavors Nova's devstack creates, so that tempest-style clients find
    # flavorRef 1..5 and 42/84 as they expect.
    rows = [
        ("1", "m1.tiny", 1, 512, 1), ("2", "m1.small", 1, 2048, 20),
        ("3", "m1.medium", 2, 4096, 40), ("4", "m1.large", 4, 8192, 80),
        ("5", "m1.xlarge", 8, 16384, 160), ("42", "m1.nano", 1, 128, 1),
        ("84", "m1.micro", 1, 192, 1),
    ]
    op.bulk_insert(flavors, [
        {"flavorid": fid, "name": name, "vcpus": vcpus, "memory_mb": mem,
         "root_gb": disk, "ephemeral_gb": 0, "swap": 0, "rxtx_factor": 1,
         "is_public": True, "disabled": False, "description": None}
        for fid, name, vcpus, mem, disk in rows])

