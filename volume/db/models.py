"""Tables of the volume service (SQLAlchemy 2 declarative models).

The alembic migrations in ``migrations/versions`` create exactly these
tables; ``tests/unit/volume/test_volume_db_migrations.py`` checks that they
agree.  The connector of an attachment is not stored in the attachment row:
it is kept as key/value rows in ``attachment_specs`` (values JSON-encoded),
as the new attach API spec asks.
"""
import datetime

from sqlalchemy import (Boolean, DateTime, ForeignKey, Integer, String, Text,
                        UniqueConstraint, Index, false)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utcnow():
    """Naive UTC timestamp, printed by the views like Cinder's."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


class Base(DeclarativeBase):
    pass


class Service(Base):
    """This service's registration and heartbeat (``GET /os-services``)."""
    __tablename__ = "services"
    __table_args__ = (UniqueConstraint("host", "binary",
                                       name="uniq_services0host0binary"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True,
                                    autoincrement=True)
    uuid: Mapped[str] = mapped_column(String(36), nullable=False,
                                      unique=True)
    host: Mapped[str] = mapped_column(String(255), nullable=False)
    binary: Mapped[str] = mapped_column(String(255), nullable=False)
    topic: Mapped[str | None] = mapped_column(String(255))
    availability_zone: Mapped[str] = mapped_column(String(255),
                                                   nullable=False)
    disabled: Mapped[bool] = mapped_column(Boolean, nullable=False,
                                           default=False)
    disabled_reason: Mapped[str | None] = mapped_column(String(255))
    report_count: Mapped[int] = mapped_column(Integer, nullable=False,
                                              default=0)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime,
                                                          nullable=False)
    updated_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)


class VolumeType(Base):
    __tablename__ = "volume_types"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    name: Mapped[str] = mapped_column(String(255), nullable=False,
                                      unique=True)
    description: Mapped[str | None] = mapped_column(String(255))
    is_public: Mapped[bool] = mapped_column(Boolean, nullable=False,
                                            default=True)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime,
                                                          nullable=False)
    updated_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)


class VolumeTypeExtraSpec(Base):
    __tablename__ = "volume_type_extra_specs"
    __table_args__ = (UniqueConstraint(
        "volume_type_id", "key",
        name="uniq_volume_type_extra_specs0type0key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True,
                                    autoincrement=True)
    volume_type_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("volume_types.id", ondelete="CASCADE"),
        nullable=False)
    key: Mapped[str] = mapped_column(String(255), nullable=False)
    value: Mapped[str] = mapped_column(String(255), nullable=False)


class Encryption(Base):
    """The encryption specs of a volume type, at most one per type
    (Cinder's ``encryption`` table, ``/types/{id}/encryption``)."""
    __tablename__ = "encryption"
    __table_args__ = (UniqueConstraint(
        "volume_type_id", name="uniq_encryption0volume_type_id"),)

    encryption_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    volume_type_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("volume_types.id", ondelete="CASCADE"),
        nullable=False)
    cipher: Mapped[str | None] = mapped_column(String(255))
    key_size: Mapped[int | None] = mapped_column(Integer)
    provider: Mapped[str] = mapped_column(String(255), nullable=False)
    control_location: Mapped[str] = mapped_column(String(255),
                                                  nullable=False)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime,
                                                          nullable=False)
    updated_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)


class Volume(Base):
    __tablename__ = "volumes"
    __table_args__ = (Index("volumes_project_id_idx", "project_id"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    project_id: Mapped[str] = mapped_column(String(255), nullable=False)
    user_id: Mapped[str] = mapped_column(String(255), nullable=False)
    name: Mapped[str | None] = mapped_column(String(255))
    description: Mapped[str | None] = mapped_column(String(255))
    size: Mapped[int] = mapped_column(Integer, nullable=False)
    status: Mapped[str] = mapped_column(String(255), nullable=False)
    migration_status: Mapped[str | None] = mapped_column(String(255))
    availability_zone: Mapped[str] = mapped_column(String(255),
                                                   nullable=False)
    volume_type_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("volume_types.id"), nullable=False)
    # Copied from the type's extra spec at creation, like Cinder does: the
    # reservation compare-and-swap reads it in the same UPDATE statement.
    multiattach: Mapped[bool] = mapped_column(Boolean, nullable=False,
                                              default=False)
    readonly: Mapped[bool] = mapped_column(Boolean, nullable=False,
                                           default=False)
    # os-update_readonly_flag was called: metadata shows readonly either way
    readonly_set: Mapped[bool] = mapped_column(Boolean, nullable=False,
                                               default=False,
                                               server_default=false())
    shared_targets: Mapped[bool] = mapped_column(Boolean, nullable=False,
                                                 default=False)
    bootable: Mapped[bool] = mapped_column(Boolean, nullable=False,
                                           default=False)
    # the image it was created from (Cinder's volume_image_metadata)
    image_id: Mapped[str | None] = mapped_column(String(36))
    # Cinder's name_id: the id the backend names its data by, when not the
    # volume's own (a migrated volume keeps its id, its data is the
    # target's)
    name_id: Mapped[str | None] = mapped_column(String(36))
    service_uuid: Mapped[str | None] = mapped_column(String(36))
    host: Mapped[str | None] = mapped_column(String(255))
    metadata_json: Mapped[str] = mapped_column("metadata", Text,
                                               nullable=False, default="{}")
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime,
                                                          nullable=False)
    updated_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)


class VolumeAttachment(Base):
    __tablename__ = "volume_attachments"
    __table_args__ = (
        Index("volume_attachments_volume_id_idx", "volume_id"),
        Index("volume_attachments_instance_uuid_idx", "instance_uuid"),
        Index("volume_attachments_attached_host_idx", "attached_host"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    volume_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("volumes.id"), nullable=False)
    # The volume's project: the owner sees the attachment even when an
    # admin made it.
    project_id: Mapped[str] = mapped_column(String(255), nullable=False)
    instance_uuid: Mapped[str | None] = mapped_column(String(36))
    attached_host: Mapped[str | None] = mapped_column(String(255))
    mountpoint: Mapped[str | None] = mapped_column(String(255))
    attach_status: Mapped[str] = mapped_column(String(255), nullable=False)
    attach_mode: Mapped[str | None] = mapped_column(String(2))
    # Made by the attach actions from before 3.27 (os-reserve, os-attach).
    legacy: Mapped[bool] = mapped_column(Boolean, nullable=False,
                                         default=False,
                                         server_default=false())
    connection_info: Mapped[str | None] = mapped_column(Text)
    attach_time: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    detach_time: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    created_at: Mapped[datetime.datetime] = mapped_column(DateTime,
                                                          nullable=False)
    updated_at: Mapped[datetime.datetime | None] = mapped_column(DateTime)


class AttachmentSpec(Base):
    """One key of an attachment's connector; ``value`` is JSON."""
    __tablename__ = "attachment_specs"
    __table_args__ = (UniqueConstraint(
        "attachment_id", "key", name="uniq_attachment_specs0attachment0key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True,
                                    autoincrement=True)
    attachment_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("volume_attachments.id", ondelete="CASCADE"),
        nullable=False)
    key: Mapped[str] = mapped_column(String(255), nullable=False)
    value: Mapped[str] = mapped_column(Text, nullable=False)
