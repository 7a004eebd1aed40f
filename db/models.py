"""SQLAlchemy 2 models of the compute database.

JSON-ish columns (flavor, metadata, connector, connection_info, fault) hold
JSON text; the objects layer encodes and decodes them.  Indexes follow the
queries the API and conductor make: by instance, by volume, by host, by
project, so that list calls stay flat as the database grows.
"""
import datetime

from sqlalchemy import (Boolean, DateTime, ForeignKey, Index, Integer, String,
                        Text, UniqueConstraint)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


class Base(DeclarativeBase):
    pass


class TimestampMixin:
    created_at: Mapped[datetime.datetime | None] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime.datetime | None] = mapped_column(DateTime, onupdate=utcnow)


class Service(TimestampMixin, Base):
    __tablename__ = "services"
    __table_args__ = (UniqueConstraint("host", "binary", name="uniq_services0host0binary"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uuid: Mapped[str] = mapped_column(String(36), unique=True)
    host: Mapped[str] = mapped_column(String(255))
    binary: Mapped[str] = mapped_column(String(255), index=True)
    topic: Mapped[str | None] = mapped_column(String(255))
    report_count: Mapped[int] = mapped_column(Integer, default=0)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    disabled_reason: Mapped[str | None] = mapped_column(String(255))
    forced_down: Mapped[bool] = mapped_column(Boolean, default=False)
    version: Mapped[int] = mapped_column(Integer, default=0)
    rpc_version: Mapped[str | None] = mapped_column(String(16))
    connector: Mapped[str | None] = mapped_column(Text)
    # JSON list of the image ids a compute's driver can boot (NULL: none
    # reported: another binary, or a compute before service version 11)
    images: Mapped[str | None] = mapped_column(Text)
    last_seen_up: Mapped[datetime.datetime | None] = mapped_column(DateTime)


class Flavor(Base):
    __tablename__ = "flavors"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    flavorid: Mapped[str] = mapped_column(String(255), unique=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    vcpus: Mapped[int] = mapped_column(Integer)
    memory_mb: Mapped[int] = mapped_column(Integer)
    root_gb: Mapped[int] = mapped_column(Integer)
    ephemeral_gb: Mapped[int] = mapped_column(Integer, default=0)
    swap: Mapped[int] = mapped_column(Integer, default=0)
    rxtx_factor: Mapped[float] = mapped_column(Integer, default=1)
    is_public: Mapped[bool] = mapped_column(Boolean, default=True)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    description: Mapped[str | None] = mapped_column(Text)


class Instance(TimestampMixin, Base):
    __tablename__ = "instances"
    __table_args__ = (
        Index("instances_project_id_deleted_idx", "project_id", "deleted"),
        Index("instances_host_deleted_idx", "host", "deleted"),
        # server lists page newest first (created_at DESC, id DESC): an
        # index serves that order per project and across projects (admin)
        Index("instances_project_id_deleted_created_at_id_idx",
              "project_id", "deleted", "created_at", "id"),
        Index("instances_deleted_created_at_id_idx", "deleted", "created_at", "id"),
        # and under an admin's status or host filter, or with the deleted
        # servers (migration 0007)
        Index("instances_vm_state_deleted_created_at_id_idx",
              "vm_state", "deleted", "created_at", "id"),
        Index("instances_host_deleted_created_at_id_idx",
              "host", "deleted", "created_at", "id"),
        Index("instances_created_at_id_idx", "created_at", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uuid: Mapped[str] = mapped_column(String(36), unique=True)
    project_id: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[str] = mapped_column(String(255))
    display_name: Mapped[str | None] = mapped_column(String(255))
    display_description: Mapped[str | None] = mapped_column(Text)
    hostname: Mapped[str | None] = mapped_column(String(255))
    host: Mapped[str | None] = mapped_column(String(255))
    node: Mapped[str | None] = mapped_column(String(255))
    vm_state: Mapped[str] = mapped_column(String(255))
    task_state: Mapped[str | None] = mapped_column(String(255))
    power_state: Mapped[int] = mapped_column(Integer, default=0)
    flavor: Mapped[str] = mapped_column(Text)
    image_ref: Mapped[str | None] = mapped_column(String(255))
    key_name: Mapped[str | None] = mapped_column(String(255))
    locked: Mapped[bool] = mapped_column(Boolean, default=False)
    locked_by: Mapped[str | None] = mapped_column(String(16))
    locked_reason: Mapped[str | None] = mapped_column(Text)
    availability_zone: Mapped[str | None] = mapped_column(String(255))
    reservation_id: Mapped[str | None] = mapped_column(String(255))
    launch_index: Mapped[int] = mapped_column(Integer, default=0)
    access_ip_v4: Mapped[str | None] = mapped_column(String(39))
    access_ip_v6: Mapped[str | None] = mapped_column(String(39))
    config_drive: Mapped[str | None] = mapped_column(String(255))
    # base64, as the API took it (Nova's MediumText; the API caps it)
    user_data: Mapped[str | None] = mapped_column(Text)
    metadata_: Mapped[str | None] = mapped_column("metadata", Text)
    # the flavor's vcpus and memory_mb, what the quotas of cores and ram
    # count (migration 0010; written with the flavor by instance_create)
    vcpus: Mapped[int | None] = mapped_column(Integer)
    memory_mb: Mapped[int | None] = mapped_column(Integer)
    fault: Mapped[str | None] = mapped_column(Text)
    shelved_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    launched_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    terminated_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    deleted_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    deleted: Mapped[int] = mapped_column(Integer, default=0)


class BlockDeviceMapping(TimestampMixin, Base):
    __tablename__ = "block_device_mappings"
    __table_args__ = (
        Index("block_device_mappings_instance_uuid_idx", "instance_uuid"),
        Index("block_device_mappings_volume_id_idx", "volume_id"),
        Index("block_device_mappings_attachment_id_idx", "attachment_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uuid: Mapped[str] = mapped_column(String(36), unique=True)
    instance_uuid: Mapped[str] = mapped_column(String(36))
    source_type: Mapped[str | None] = mapped_column(String(255))
    destination_type: Mapped[str | None] = mapped_column(String(255))
    boot_index: Mapped[int | None] = mapped_column(Integer)
    device_name: Mapped[str | None] = mapped_column(String(255))
    volume_id: Mapped[str | None] = mapped_column(String(36))
    attachment_id: Mapped[str | None] = mapped_column(String(36))
    connection_info: Mapped[str | None] = mapped_column(Text)
    delete_on_termination: Mapped[bool] = mapped_column(Boolean, default=False)
    tag: Mapped[str | None] = mapped_column(String(255))
    volume_size: Mapped[int | None] = mapped_column(Integer)
    volume_type: Mapped[str | None] = mapped_column(String(255))
    disk_bus: Mapped[str | None] = mapped_column(String(255))
    device_type: Mapped[str | None] = mapped_column(String(255))
    guest_format: Mapped[str | None] = mapped_column(String(255))
    image_id: Mapped[str | None] = mapped_column(String(36))
    snapshot_id: Mapped[str | None] = mapped_column(String(36))
    no_device: Mapped[bool] = mapped_column(Boolean, default=False)
    attach_mode: Mapped[str | None] = mapped_column(String(2))


class AbandonedReservation(Base):
    """The uuid of a block-device record that an attach gave up on before
    the compute's reserve made it (its call got no answer): the conductor's
    rollback writes it, and a reserve that arrives later is refused instead
    of creating a record no workflow will finish
    (``db.api.block_devices.bdm_abandon_reservation``).  Deleted with the
    instance's row going (``instance_destroy``)."""
    __tablename__ = "abandoned_reservations"
    __table_args__ = (
        Index("abandoned_reservations_instance_uuid_idx", "instance_uuid"),
    )

    bdm_uuid: Mapped[str] = mapped_column(String(36), primary_key=True)
    instance_uuid: Mapped[str] = mapped_column(String(36))
    created_at: Mapped[datetime.datetime | None] = mapped_column(DateTime, default=utcnow)


class InstanceAction(Base):
    __tablename__ = "instance_actions"
    __table_args__ = (
        Index("instance_actions_instance_uuid_request_id_idx", "instance_uuid", "request_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    action: Mapped[str] = mapped_column(String(255))
    instance_uuid: Mapped[str] = mapped_column(String(36))
    request_id: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[str | None] = mapped_column(String(255))
    project_id: Mapped[str | None] = mapped_column(String(255))
    start_time: Mapped[datetime.datetime] = mapped_column(DateTime, default=utcnow)
    finish_time: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    message: Mapped[str | None] = mapped_column(String(255))
    updated_at: Mapped[datetime.datetime | None] = mapped_column(
        DateTime, default=utcnow, onupdate=utcnow)


class InstanceActionEvent(Base):
    __tablename__ = "instance_actions_events"
    __table_args__ = (Index("instance_actions_events_action_id_idx", "action_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    action_id: Mapped[int] = mapped_column(ForeignKey("instance_actions.id", ondelete="CASCADE"))
    event: Mapped[str] = mapped_column(String(255))
    start_time: Mapped[datetime.datetime] = mapped_column(DateTime, default=utcnow)
    finish_time: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    result: Mapped[str | None] = mapped_column(String(255))
    traceback: Mapped[str | None] = mapped_column(Text)
    host: Mapped[str | None] = mapped_column(String(255))
    details: Mapped[str | None] = mapped_column(Text)


class KeyPair(TimestampMixin, Base):
    """A user's SSH (or x509) public key, named per user (os-keypairs)."""
    __tablename__ = "key_pairs"
    __table_args__ = (UniqueConstraint("user_id", "name",
                                       name="uniq_key_pairs0user_id0name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[str] = mapped_column(String(255))
    fingerprint: Mapped[str | None] = mapped_column(String(255))
    public_key: Mapped[str | None] = mapped_column(Text)
    type: Mapped[str] = mapped_column(String(10), default="ssh")


class Migration(TimestampMixin, Base):
    """A move of a server between hosts and how it went (os-migrations,
    /servers/{id}/migrations); volattach records live migrations."""
    __tablename__ = "migrations"
    __table_args__ = (
        # a server's migrations in progress (/servers/{id}/migrations)
        Index("migrations_instance_uuid_status_idx", "instance_uuid", "status"),
        # the host filter of os-migrations (source or destination)
        Index("migrations_source_compute_idx", "source_compute"),
        Index("migrations_dest_compute_idx", "dest_compute"),
        # os-migrations pages newest first (created_at DESC, id DESC)
        Index("migrations_created_at_id_idx", "created_at", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uuid: Mapped[str] = mapped_column(String(36), unique=True)
    instance_uuid: Mapped[str] = mapped_column(String(36))
    source_compute: Mapped[str | None] = mapped_column(String(255))
    dest_compute: Mapped[str | None] = mapped_column(String(255))
    source_node: Mapped[str | None] = mapped_column(String(255))
    dest_node: Mapped[str | None] = mapped_column(String(255))
    dest_host: Mapped[str | None] = mapped_column(String(255))
    old_instance_type_id: Mapped[int | None] = mapped_column(Integer)
    new_instance_type_id: Mapped[int | None] = mapped_column(Integer)
    status: Mapped[str | None] = mapped_column(String(255))
    migration_type: Mapped[str | None] = mapped_column(String(255))
    hidden: Mapped[bool] = mapped_column(Boolean, default=False)
    user_id: Mapped[str | None] = mapped_column(String(255))
    project_id: Mapped[str | None] = mapped_column(String(255))
    deleted: Mapped[bool] = mapped_column(Boolean, default=False)


class InstanceGroup(TimestampMixin, Base):
    """A server group (os-server-groups): a policy (affinity,
    anti-affinity, soft-affinity, soft-anti-affinity) and its rules (JSON:
    ``max_server_per_host``), per project."""
    __tablename__ = "instance_groups"
    __table_args__ = (
        UniqueConstraint("uuid", name="uniq_instance_groups0uuid"),
        Index("instance_groups_project_id_idx", "project_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uuid: Mapped[str] = mapped_column(String(36))
    name: Mapped[str | None] = mapped_column(String(255))
    project_id: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[str] = mapped_column(String(255))
    policy: Mapped[str] = mapped_column(String(255))
    rules: Mapped[str | None] = mapped_column(Text)


class InstanceGroupMember(Base):
    """A server created into a group; gone with the group (CASCADE) or the
    server's row (``instance_destroy``)."""
    __tablename__ = "instance_group_members"
    __table_args__ = (
        UniqueConstraint("group_id", "instance_uuid",
                         name="uniq_instance_group_members0group0instance"),
        Index("instance_group_members_instance_uuid_idx", "instance_uuid"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    group_id: Mapped[int] = mapped_column(
        ForeignKey("instance_groups.id", ondelete="CASCADE"))
    instance_uuid: Mapped[str] = mapped_column(String(36))
    created_at: Mapped[datetime.datetime | None] = mapped_column(DateTime, default=utcnow)


class Aggregate(TimestampMixin, Base):
    """A host aggregate (os-aggregates); its ``availability_zone`` metadata
    is the zone of its hosts."""
    __tablename__ = "aggregates"
    __table_args__ = (
        UniqueConstraint("uuid", name="uniq_aggregates0uuid"),
        UniqueConstraint("name", name="uniq_aggregates0name"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uuid: Mapped[str] = mapped_column(String(36))
    name: Mapped[str] = mapped_column(String(255))


class AggregateHost(Base):
    __tablename__ = "aggregate_hosts"
    __table_args__ = (
        UniqueConstraint("host", "aggregate_id",
                         name="uniq_aggregate_hosts0host0aggregate_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    aggregate_id: Mapped[int] = mapped_column(
        ForeignKey("aggregates.id", ondelete="CASCADE"))
    host: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime.datetime | None] = mapped_column(DateTime, default=utcnow)


class AggregateMetadata(Base):
    __tablename__ = "aggregate_metadata"
    __table_args__ = (
        UniqueConstraint("aggregate_id", "key",
                         name="uniq_aggregate_metadata0aggregate_id0key"),
        Index("aggregate_metadata_key_idx", "key"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    aggregate_id: Mapped[int] = mapped_column(
        ForeignKey("aggregates.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(255))
    value: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime.datetime | None] = mapped_column(DateTime, default=utcnow)


class InstanceTag(Base):
    """A tag of a server (2.26, os-server-tags): at most 50 per server;
    the rows go with the server's delete (``instance_destroy``)."""
    __tablename__ = "instance_tags"
    __table_args__ = (Index("instance_tags_tag_idx", "tag"),)

    instance_uuid: Mapped[str] = mapped_column(String(36), primary_key=True)
    tag: Mapped[str] = mapped_column(String(60), primary_key=True)


class Quota(TimestampMixin, Base):
    """A limit set by os-quota-sets: a project's (``user_id`` "") or one
    user's in a project; a resource without a row has the [quota]
    default."""
    __tablename__ = "quotas"
    __table_args__ = (UniqueConstraint(
        "project_id", "user_id", "resource",
        name="uniq_quotas0project_id0user_id0resource"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[str] = mapped_column(String(255), default="")
    resource: Mapped[str] = mapped_column(String(255))
    hard_limit: Mapped[int] = mapped_column(Integer)


class QuotaClass(TimestampMixin, Base):
    """A limit of a quota class (os-quota-class-sets); the class
    ``default``'s limits replace the [quota] defaults of every project."""
    __tablename__ = "quota_classes"
    __table_args__ = (UniqueConstraint(
        "class_name", "resource", name="uniq_quota_classes0class_name0resource"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    class_name: Mapped[str] = mapped_column(String(255))
    resource: Mapped[str] = mapped_column(String(255))
    hard_limit: Mapped[int] = mapped_column(Integer)


class QuotaProjectLock(Base):
    """One row per project that counted its usage: a create (and a quota
    update) takes it FOR UPDATE before it counts, so that two checks of
    one project run one after the other on PostgreSQL (SQLite's writes
    are serial already).  See ``db.api.quotas``."""
    __tablename__ = "quota_project_locks"

    project_id: Mapped[str] = mapped_column(String(255), primary_key=True)
