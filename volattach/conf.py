"""Every configuration option of volattach, in one place (oslo.config).

One file (``/etc/volattach/volattach.conf``) configures every daemon; each
daemon reads the groups it needs.  ``list_opts`` feeds oslo-config-generator
(``etc/volattach/volattach-config-generator.conf``) to write the sample.
"""
import os
import socket

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_log import log as logging
from oslo_utils import netutils
from oslo_policy import opts as policy_opts

from volattach.wsgi import body as wsgi_body

from volattach import listen

CONF = cfg.CONF

DEFAULT_TRANSPORT_URL = "rabbit://guest:guest@127.0.0.1:5672/"
# volattach-all's bus when transport_url is not set: the in-process
# oslo.messaging driver (rpc/inproc.py; "kombu+memory:////" still selects
# kombu's in-memory transport)
MEMORY_TRANSPORT_URL = "volattach-inproc://"

default_opts = [
    cfg.StrOpt("state_path",
               default=os.path.join(os.path.expanduser("~"), ".volattach"),
               sample_default="~/.volattach",
               help="Directory where volattach keeps its state (the SQLite "
                    "databases of the embedded defaults, lock files)."),
    cfg.IntOpt("report_interval", default=10, min=1,
               help="Seconds between two heartbeats of a service in the "
                    "services table."),
    cfg.IntOpt("graceful_shutdown_timeout", default=10, min=0,
               help="Seconds a conductor or compute daemon (and "
                    "volattach-all) asked to stop (SIGTERM, SIGINT) waits "
                    "for its RPC servers and in-flight work to end before "
                    "it exits anyway, with status 1; 0 waits forever. A "
                    "second signal exits at once. Work cut short is left "
                    "to the reconcile pass, as after a crash."),
    cfg.IntOpt("service_down_time", default=60, min=1,
               help="A service whose last heartbeat is older than this many "
                    "seconds counts as down."),
    cfg.IntOpt("rpc_call_monitor_timeout", default=10, min=0,
               help="Seconds an RPC call waits for a sign of life from "
                    "its server (the answer, or the heartbeat the server "
                    "sends every half of this while it works) before it "
                    "fails as a timeout, instead of waiting the whole "
                    "rpc_response_timeout for a request or an answer that "
                    "a broker restart lost. Long calls still answer: "
                    "their server heartbeats. 0 turns the monitor off; "
                    "values below 2 count as 2 (heartbeats are at least "
                    "a second apart). Keep it below "
                    "graceful_shutdown_timeout, so that a workflow whose "
                    "message was lost rolls back before a stop cuts it."),
    cfg.IntOpt("rpc_response_timeout_attach", default=60, min=1,
               help="Seconds the API waits for the conductor's answer to a "
                    "synchronous (below 2.101) volume attach."),
    cfg.IntOpt("reimage_timeout_per_gb", default=20, min=1,
               help="Nova's option: seconds per GiB of the image the "
                    "rebuild of a volume-backed server (2.93) waits for "
                    "the volume service's volume-reimaged event after its "
                    "os-reimage; without it the server goes to ERROR. "
                    "There is no image service to tell an image's size: "
                    "an image counts as 1 GiB."),
    cfg.BoolOpt("allow_insecure_noauth", default=False,
                help="Let the compute API and the volume service serve "
                     "auth_strategy = noauth on a listen address that is "
                     "not loopback (any caller can then claim to be "
                     "admin).  Without it they refuse to start."),
    cfg.HostAddressOpt("my_ip", default=netutils.get_my_ipv4(),
                       sample_default="<host_ipv4>",
                       help="This host's address, as Nova's: the ip of a "
                            "compute's volume connector, and the address "
                            "the volume service hands out for its exports "
                            "when it listens on a wildcard address."),
]

database_opts = [
    cfg.StrOpt("connection",
               default="sqlite:///$state_path/volattach.sqlite",
               secret=True,
               help="SQLAlchemy URL of the compute database (instances, "
                    "block-device mappings, services, instance actions). "
                    "SQLite is the embedded default; use PostgreSQL "
                    "(postgresql+psycopg2://...) in production."),
    cfg.IntOpt("max_pool_size", default=10, min=1,
               help="Connections kept open per process (PostgreSQL)."),
    cfg.BoolOpt("connection_debug", default=False,
                help="Log every SQL statement."),
    cfg.StrOpt("sqlite_synchronous", default="NORMAL",
               choices=[("NORMAL", "sync the write-ahead log at checkpoints "
                                   "only"),
                        ("FULL", "sync the write-ahead log at every "
                                 "commit")],
               help="SQLite's PRAGMA synchronous for both SQLite databases "
                    "(the compute database and the volume service's "
                    "[volume] connection); ignored for PostgreSQL.  Both "
                    "run in WAL mode, where NORMAL is safe against a crash "
                    "or kill of the process: no commit is lost or "
                    "corrupted.  An operating system crash or power loss "
                    "can however roll back the last commits (never corrupt "
                    "the database).  FULL makes every commit durable "
                    "against those too, at the cost of an fsync per write "
                    "transaction."),
]

api_opts = [
    cfg.HostAddressOpt("listen", default="127.0.0.1",
                       help="Address the compute API listens on."),
    cfg.PortOpt("port", default=8774, help="Port of the compute API."),
    cfg.IntOpt("workers", default=2, min=1,
               help="gunicorn worker processes for the compute API."),
    cfg.IntOpt("threads", default=4, min=1,
               help="Threads per gunicorn worker (gthread worker class)."),
    cfg.StrOpt("auth_strategy", default="keystone",
               choices=[("noauth", "X-Auth-Token: <user>:<project>[:<role>,"
                                   "<role>] sets the caller; role admin "
                                   "makes an admin"),
                        ("keystone", "keystonemiddleware validates tokens "
                                     "([keystone_authtoken])")],
               help="How callers of the compute API are authenticated "
                    "(volattach-all's embedded default is noauth)."),
    cfg.StrOpt("public_endpoint",
               help="Base URL used in links of API responses, when the API "
                    "is behind a proxy.  Default: the request's host URL."),
    cfg.IntOpt("max_limit", default=1000, min=1,
               help="Most items a list call returns in one page."),
]

cinder_opts = [
    cfg.StrOpt("endpoint",
               sample_default="http://<[volume] listen>:<[volume] port>/v3",
               help="Block storage (Cinder v3) endpoint, without the "
                    "project id: the client appends /<project_id>. Unset: "
                    "the volume service of this configuration's [volume] "
                    "listen and port (loopback for a wildcard listen), "
                    "which is volattach-all's own; set it wherever the "
                    "volume service (or Cinder) runs on another host."),
    cfg.StrOpt("auth_strategy", default="keystone",
               choices=[("noauth", "send X-Auth-Token: <user>:<project> of "
                                   "the caller (Cinder's noauth_include_"
                                   "project_id)"),
                        ("keystone", "forward the caller's token and add a "
                                     "service token from the keystoneauth "
                                     "options of this group")],
               help="How the Cinder client authenticates (volattach-all's "
                    "embedded default is noauth)."),
    cfg.FloatOpt("retry_seconds", default=30.0, min=0,
                 help="Connection errors and 503s from Cinder are retried "
                      "with backoff for at most this many seconds."),
    cfg.BoolOpt("send_service_role", default=True,
                help="Under noauth, send X-Service-Roles: service on calls "
                     "that real Cinder only allows to services (deleting "
                     "a connected attachment)."),
    cfg.BoolOpt("noauth_include_roles", default=True,
                help="Under noauth, send the caller's roles in the token "
                     "(<user>:<project>:<role>,<role>), as volattach-volume "
                     "reads it.  Set to False against a real Cinder, whose "
                     "noauth takes everything after the first colon as the "
                     "project id (and makes every caller admin)."),
]

compute_opts = [
    cfg.StrOpt("host", default=socket.gethostname(),
               sample_default="<hostname>",
               help="Name of this compute host: its RPC server name and "
                    "its row in the services table."),
    cfg.StrOpt("virt_driver", default="fake",
               choices=[("fake", "in-memory driver for tests, benchmarks "
                                 "and the embedded default"),
                        ("libvirt", "real guests through libvirt "
                                    "(volattach[libvirt] extra; see "
                                    "[libvirt])")],
               help="Virtualization driver of the compute service."),
    cfg.ListOpt("fake_images",
                default=["155d900f-4e14-4e4c-a73d-069cbf4541e6",
                         "2c8d8b3e-3b1b-4e5f-9b4f-5bd1c0de0a11"],
                help="With [compute] virt_driver = fake, the image ids a "
                     "server can boot from. There is no image service: "
                     "each compute reports its images in its service "
                     "record, and the API answers 400 for an imageRef no "
                     "up compute reports, as Nova answers for an image it "
                     "cannot find. The default holds the README's example "
                     "image and the tempest job's second image. With the "
                     "libvirt driver the images are the directories of "
                     "[libvirt] image_dir."),
    cfg.IntOpt("max_disk_devices_to_attach", default=-1, min=-1,
               help="Most disk devices one server may have; -1 means no "
                    "limit beyond the device names available."),
    cfg.IntOpt("shelved_offload_time", default=0, min=-1,
               help="Seconds a shelved server stays on its host before the "
                    "conductor offloads it (checked at most every minute); 0 "
                    "offloads at once, -1 never.  Volume-backed servers are "
                    "always offloaded at once."),
]

# Nova's [quota] defaults: the limits of a project that has none of its own
# (os-quota-sets defaults); -1 is unlimited
quota_opts = [
    cfg.IntOpt("instances", default=10, min=-1,
               help="Servers a project may have."),
    cfg.IntOpt("cores", default=20, min=-1,
               help="vCPUs (the flavors' vcpus) a project's servers may have."),
    cfg.IntOpt("ram", default=51200, min=-1,
               help="MiB of RAM a project's servers may have."),
    cfg.IntOpt("metadata_items", default=128, min=-1,
               help="Metadata items one server may have."),
    cfg.IntOpt("injected_files", default=5, min=-1,
               help="Personality files (shown, not used: below 2.57)."),
    cfg.IntOpt("injected_file_content_bytes", default=10240, min=-1,
               help="Bytes of a personality file (shown, not used)."),
    cfg.IntOpt("injected_file_path_length", default=255, min=-1,
               help="Path length of a personality file (shown, not used)."),
    cfg.IntOpt("key_pairs", default=100, min=-1,
               help="Key pairs a user may have."),
    cfg.IntOpt("server_groups", default=10, min=-1,
               help="Server groups a project may have."),
    cfg.IntOpt("server_group_members", default=10, min=-1,
               help="Servers one server group may hold."),
]

fake_driver_opts = [
    cfg.FloatOpt("reserve_latency", default=0.0, min=0,
                 help="Seconds the fake driver spends choosing a device "
                      "name (reserve_block_device_name)."),
    cfg.FloatOpt("attach_latency", default=0.0, min=0,
                 help="Seconds the fake driver spends attaching a volume."),
    cfg.FloatOpt("detach_latency", default=0.0, min=0,
                 help="Seconds the fake driver spends detaching a volume."),
    cfg.FloatOpt("spawn_latency", default=0.0, min=0,
                 help="Seconds the fake driver spends building a server."),
    cfg.FloatOpt("swap_latency", default=0.0, min=0,
                 help="Seconds the fake driver spends swapping a volume "
                      "(the block copy of a real driver)."),
    cfg.ListOpt("fail_operations", default=[],
                help="Operations of the fake driver that raise, for tests: "
                     "any of reserve, connect, attach, detach, disconnect, "
                     "spawn, destroy, swap, pre_live_migration, "
                     "live_migration, post_live_migration."),
    cfg.StrOpt("device_prefix", default="vd",
               help="Guest device name prefix (vd -> /dev/vdb ...)."),
    cfg.StrOpt("stats_file",
               help="For tests: a JSON file the fake driver rewrites with "
                    "its counters (connects, disconnects, targets, lost "
                    "connections) on every connect and disconnect."),
]

conductor_opts = [
    cfg.StrOpt("host", default=socket.gethostname(),
               sample_default="<hostname>",
               help="Name of this conductor: its row in the services "
                    "table (two conductors on one machine need two "
                    "names)."),
    cfg.IntOpt("reconcile_interval", default=300, min=0,
               help="Seconds between two passes of the conductor's attachment "
                    "reconciliation (orphan attachments, orphan block-device "
                    "records, volumes stuck reserved/attaching/detaching); 0 "
                    "disables the periodic pass (volattach-manage attachments "
                    "reconcile still runs one by hand)."),
    cfg.IntOpt("reconcile_grace_period", default=600, min=0,
               help="Seconds a drift must be old before the reconciliation "
                    "repairs it: attachments, records and volume statuses "
                    "changed more recently are left to the workflow that may "
                    "still be running on them.  Keep it well above the "
                    "longest attach, detach or swap (RPC timeouts included)."),
]

upgrade_levels_opts = [
    cfg.StrOpt("compute", default="auto",
               help="Cap of the compute RPC API version: 'auto' (the "
                    "minimum version of the running compute services), a "
                    "version number, or empty for no cap."),
    cfg.StrOpt("conductor",
               help="Cap of the conductor RPC API version, or empty."),
]

volume_opts = [
    cfg.HostAddressOpt("listen", default="127.0.0.1",
                       help="Address the volume service listens on."),
    cfg.PortOpt("port", default=8776, help="Port of the volume service."),
    cfg.IntOpt("workers", default=1, min=1,
               help="gunicorn worker processes for the volume service."),
    cfg.StrOpt("connection",
               default="sqlite:///$state_path/volume.sqlite",
               secret=True,
               help="SQLAlchemy URL of the volume service's own database."),
    cfg.StrOpt("auth_strategy", default="keystone",
               choices=["noauth", "keystone"],
               help="How callers of the volume service are authenticated "
                    "(volattach-all's embedded default is noauth)."),
    cfg.StrOpt("backend", default="fake",
               choices=["fake", "file", "rbd", "iscsi"],
               help="Storage driver: 'fake' (no storage) or 'file' (sparse "
                    "raw files exported over NBD by qemu-storage-daemon; "
                    "needs volattach[libvirt] and QEMU) or 'rbd' (images "
                    "in a Ceph pool: [rbd]) or 'iscsi' (the file "
                    "backend's files as tgt targets: [iscsi])."),
    cfg.ListOpt("images",
                default=["155d900f-4e14-4e4c-a73d-069cbf4541e6",
                         "2c8d8b3e-3b1b-4e5f-9b4f-5bd1c0de0a11"],
                help="fake backend: the image ids a volume can be created "
                     "from (imageRef; there is no image service, and no "
                     "image data is copied). The volume is bootable. Any "
                     "other imageRef is 400. The file backend does not "
                     "create volumes from images."),
    cfg.StrOpt("volumes_dir", default="$state_path/volumes",
               help="file backend: directory of the volume files."),
    cfg.HostAddressOpt("export_host", default="127.0.0.1",
                       help="file backend: address the NBD server listens "
                            "on and computes connect to."),
    cfg.PortOpt("export_port", default=10809,
                help="file backend: port of the NBD server."),
    cfg.BoolOpt("nbd_tls", default=False,
                help="file backend: serve NBD over TLS only, to the "
                     "clients of nbd_tls_allowed_clients (QEMU's "
                     "tls-creds-x509 and tls-authz); connections then "
                     "say tls and computes connect with [libvirt] "
                     "nbd_tls_dir."),
    cfg.StrOpt("nbd_tls_dir", default="/etc/pki/qemu",
               help="file backend: directory of the NBD server's TLS "
                    "material, in QEMU's names: ca-cert.pem, "
                    "server-cert.pem (whose subjectAltName holds the "
                    "address computes connect to), server-key.pem."),
    cfg.MultiStrOpt("nbd_tls_allowed_clients", default=[],
                    help="file backend with nbd_tls: the distinguished "
                         "name of a client certificate let in (a "
                         "compute's, e.g. O=volattach,CN=compute1); "
                         "repeat the option for each.  Others, even "
                         "signed by the CA, are refused."),
    cfg.BoolOpt("allow_insecure_nbd", default=False,
                help="file backend: let the NBD server listen on an "
                     "export_host that is not loopback without nbd_tls "
                     "(any host reaching it can read and write every "
                     "volume).  Without it the volume service refuses "
                     "to start."),
    cfg.StrOpt("backend_name", default="fake",
               help="Name of the storage backend of the volume service."),
    cfg.ListOpt("enabled_backends", default=[],
                help="Several backends in one service, as Cinder's option: "
                     "the names of config sections, each with "
                     "volume_backend (fake, file, rbd or iscsi), "
                     "volume_backend_name and the backend's own options "
                     "(a file backend's [volume] ones, an rbd backend's "
                     "[rbd] ones, an iscsi backend's [iscsi] ones).  "
                     "Volume types choose one by their "
                     "volume_backend_name extra spec; a type without it "
                     "gets the first.  Empty: the one backend of [volume] "
                     "backend."),
    cfg.BoolOpt("shared_targets", default=False,
                help="The fake backend shares one host connection (target) "
                     "among all volumes attached to one host."),
    cfg.StrOpt("host", default=socket.gethostname(),
               sample_default="<hostname>",
               help="Host name of the volume service: its row in GET "
                    "/os-services is <host>@<backend_name>, and volumes "
                    "show <host>@<backend_name>#<backend_name>."),
    cfg.StrOpt("compute_endpoint",
               help="The compute API the volume service asks to swap an "
                    "attached volume during a retype or migration (Nova's "
                    "PUT /servers/{id}/os-volume_attachments/{volume}). "
                    "Unset: http://<[api] listen>:<[api] port>/v2.1 (the "
                    "compute API of volattach-all's own process; loopback "
                    "for a wildcard listen). It authenticates with the "
                    "[cinder] service credentials when [volume] "
                    "auth_strategy is keystone, else with a noauth admin "
                    "token.  The volume-extended events of an in-use "
                    "extend go there too (POST "
                    "/os-server-external-events)."),
    cfg.FloatOpt("compute_timeout", default=30.0, min=0.1,
                 help="Seconds the volume service waits for the compute "
                      "API ([volume] compute_endpoint) to answer a call "
                      "(a volume-extended event, a swap)."),
]

libvirt_opts = [
    cfg.StrOpt("connection_uri", default="qemu:///system",
               help="libvirt URI of the hypervisor ([compute] virt_driver "
                    "= libvirt)."),
    cfg.StrOpt("virt_type", default="kvm", choices=["kvm", "qemu"],
               help="Domain type: kvm, or qemu for TCG (no KVM)."),
    cfg.StrOpt("image_dir",
               help="Directory of bootable images: every <image id>/ under "
                    "it holding kernel and initramfs (see "
                    "tools/build-test-image.sh) can be booted by id. The "
                    "compute reports them in its service record; the API "
                    "refuses an imageRef that no up compute reports (400) "
                    "and the scheduler picks a compute that has it."),
    cfg.StrOpt("instances_path", default="$state_path/instances",
               help="Per-guest files: console log and socket, config "
                    "drive."),
    cfg.IntOpt("wait_soft_reboot_seconds", default=120, min=0,
               help="Seconds a soft reboot waits for the guest to shut "
                    "down when asked (ACPI) before it reboots it hard, as "
                    "Nova's libvirt driver does."),
    cfg.IntOpt("max_memory_mb", default=512, min=64,
               help="Upper bound of a guest's memory whatever its flavor "
                    "says (test guests need little)."),
    cfg.FloatOpt("device_detach_timeout", default=20.0, min=0.1,
                 help="Seconds to wait for libvirt's device-removed event "
                      "before asking the guest again."),
    cfg.StrOpt("live_migration_inbound_uri",
               help="Live migration to this host: the libvirt URI the "
                    "source's libvirt connects to (for example "
                    "qemu+tcp://<this host>/system).  Default: "
                    "connection_uri, which reaches this host's libvirt only "
                    "from the same machine (two libvirt daemons side by "
                    "side: tools/start-libvirt-peer.sh)."),
    cfg.StrOpt("live_migration_inbound_addr",
               help="Live migration to this host: the address the source's "
                    "QEMU sends the guest's memory and local disks to, as "
                    "Nova's option of that name.  Default: libvirt's choice "
                    "(this host's name)."),
    cfg.IntOpt("live_migration_timeout", default=45, min=1,
               help="Seconds a live migration may take before the source "
                    "aborts it (the guest stays on the source).  The "
                    "conductor waits for it as for any compute call: keep "
                    "it below rpc_response_timeout."),
    cfg.IntOpt("swap_volume_timeout", default=300, min=1,
               help="Seconds a swap's block copy onto the new volume may "
                    "take before the compute aborts it (the guest keeps the "
                    "old volume; the swap fails).  The conductor waits for "
                    "it as for any compute call: keep it below "
                    "rpc_response_timeout for a synchronous swap."),
    cfg.FloatOpt("swap_volume_poll_interval", default=0.05, min=0.001,
                 help="Seconds between two looks at a swap's block copy."),
    cfg.StrOpt("rbd_user",
               help="rbd volumes: the cephx user of a connection that "
                    "names none (Nova's fallback); the compute defines "
                    "its libvirt secret from /etc/ceph/<cluster>.client."
                    "<user>.keyring."),
    cfg.StrOpt("rbd_secret_uuid",
               help="rbd volumes: the libvirt secret uuid of a connection "
                    "that names none (Nova's fallback). Unset: one derived "
                    "from the cluster and user."),
    cfg.StrOpt("nbd_tls_dir", default="/etc/pki/qemu",
               help="nbd volumes whose connection says tls: directory of "
                    "this compute's NBD client certificate (ca-cert.pem, "
                    "client-cert.pem, client-key.pem), also libvirt's "
                    "nbd_tls_x509_cert_dir in qemu.conf.  An attach "
                    "fails when the certificate is missing or expired."),
]

rbd_opts = [
    cfg.StrOpt("rbd_pool", default="volumes",
               help="rbd backend: the pool of the volumes' images."),
    cfg.StrOpt("rbd_ceph_conf", default="/etc/ceph/ceph.conf",
               help="rbd backend: the Ceph configuration file."),
    cfg.StrOpt("rbd_cluster_name", default="ceph",
               help="rbd backend: the cluster's name (its keyrings are "
                    "/etc/ceph/<cluster>.client.<user>.keyring)."),
    cfg.StrOpt("rbd_user",
               help="rbd backend: the cephx user the volume service "
                    "connects as (images, and the read-only users of "
                    "volumes: caps in README's Ceph RBD volumes section); "
                    "also the user of read-write connections when "
                    "rbd_attach_user is unset. Unset: client.admin."),
    cfg.StrOpt("rbd_attach_user",
               help="rbd backend: the cephx user read-write connections "
                    "name (caps mon 'profile rbd' osd 'profile rbd "
                    "pool=<rbd_pool>'; computes hold its key). Unset: "
                    "rbd_user (auth_enabled when set, as Cinder)."),
    cfg.StrOpt("rbd_secret_uuid",
               help="rbd backend: the libvirt secret uuid of read-write "
                    "connections. Unset: the cluster's fsid, as Cinder."),
    cfg.StrOpt("rbd_readonly_user", default="volattach-readonly",
               help="rbd backend: the prefix of the per-volume cephx users "
                    "of read-only attachments (<prefix>-<volume id>), "
                    "created on a volume's first read-only connection with "
                    "access to that image only, removed after its last "
                    "read-only attachment; their key travels in the "
                    "connection (keyring), never in a file."),
    cfg.IntOpt("rados_connect_timeout", default=10, min=1,
               help="rbd backend: seconds to wait for the cluster."),
]

# [iscsi]: the iscsi backend (volume/backends/tgt.py), Cinder's names
iscsi_opts = [
    cfg.HostAddressOpt("target_ip_address", default="127.0.0.1",
                       help="iscsi backend: the address of tgtd's portal "
                            "computes connect to."),
    cfg.PortOpt("target_port", default=3260,
                help="iscsi backend: the port of tgtd's portal."),
    cfg.StrOpt("target_prefix", default="iqn.2010-10.org.openstack:",
               help="iscsi backend: the prefix of the targets' IQNs."),
]

# The keys of a backend's own section ([volume] enabled_backends), beside
# the options of its kind (registered on the section when it is loaded).
backend_section_opts = [
    cfg.StrOpt("volume_backend",
               choices=["fake", "file", "rbd", "iscsi"],
               help="Storage driver of this backend section."),
    cfg.StrOpt("volume_backend_name",
               help="Name volume types choose this backend by (their "
                    "volume_backend_name extra spec); default: the "
                    "section's name."),
]

# [wsgi]: the in-process server's (volattach.embedded_server)
wsgi_opts = [
    cfg.IntOpt("threads", default=8, min=1,
               help="Threads that run the application, per in-process "
                    "server (volattach-all's compute API and volume "
                    "service). Connections do not hold threads."),
    cfg.FloatOpt("header_timeout", default=20.0, min=0.1,
                 help="Seconds a client has to send a whole request head "
                      "(request line and headers) from its first byte; a "
                      "slower one is disconnected."),
    cfg.FloatOpt("keepalive_timeout", default=60.0, min=0.1,
                 help="Seconds an idle kept-alive connection stays open, "
                      "in the in-process server and in the gunicorn "
                      "daemons (whole seconds there, at least 1)."),
    cfg.IntOpt("max_connections", default=256, min=1,
               help="Connections an in-process server keeps open at once; "
                    "past it, new connections wait in the listen backlog."),
    cfg.IntOpt("max_request_body_size", default=1048576, min=1,
               help="Bytes of request body the in-process server accepts "
                    "(413 above). The transport-level guard: keep it at or "
                    "above [oslo_middleware] max_request_body_size, which "
                    "the applications answer with their own 413."),
    cfg.IntOpt("max_request_header_size", default=65536, min=1024,
               help="Bytes of request line and headers accepted (431 "
                    "above)."),
]


all_opts = [
    cfg.ListOpt("compute_hosts", default=["compute1", "compute2"],
                help="volattach-all: host names of the compute services it "
                     "runs in its one process."),
    cfg.BoolOpt("run_volume_service", default=True,
                help="volattach-all: also serve the volume service."),
    cfg.BoolOpt("volume_in_process", default=True,
                help="volattach-all: when [cinder] endpoint is the volume "
                     "service this process serves, its compute API and "
                     "conductor call it without a socket: the request goes "
                     "to the service's WSGI application (same middleware, "
                     "same access log line) in the caller's thread.  False: "
                     "over HTTP on loopback, as to any volume service."),
]

glance_opts = [
    cfg.StrOpt("endpoint",
               help="Glance's URL (for example http://127.0.0.1:9292). "
                    "Unset: Glance is found in Keystone's catalog (service "
                    "type image) with the [glance] credentials. With "
                    "neither an endpoint nor an auth_type there is no image "
                    "service: computes boot the images of [libvirt] "
                    "image_dir or [compute] fake_images, as before."),
    cfg.StrOpt("region_name",
               help="The catalog's region of Glance's endpoint."),
    cfg.ListOpt("valid_interfaces", default=["internal", "public"],
                help="The catalog's interfaces to take Glance's endpoint "
                     "from, in order."),
]

image_cache_opts = [
    cfg.StrOpt("subdirectory_name", default="_base",
               help="Where under [libvirt] instances_path a compute keeps "
                    "the Glance images it downloaded (Nova's option of "
                    "that name)."),
    cfg.IntOpt("manager_interval", default=2400, min=0,
               help="Seconds between two passes of the image cache "
                    "manager that removes unused images; 0 turns it off."),
    cfg.BoolOpt("remove_unused_base_images", default=True,
                help="Whether the image cache manager removes images no "
                     "guest of this host uses."),
    cfg.IntOpt("remove_unused_original_minimum_age_seconds", default=86400,
               min=0,
               help="An unused image is removed once it was last used this "
                    "many seconds ago."),
]

_GROUPS = [
    (None, default_opts),
    ("database", database_opts),
    ("api", api_opts),
    ("cinder", cinder_opts),
    ("compute", compute_opts),
    ("fake_driver", fake_driver_opts),
    ("quota", quota_opts),
    ("conductor", conductor_opts),
    ("upgrade_levels", upgrade_levels_opts),
    ("volume", volume_opts),
    ("libvirt", libvirt_opts),
    ("rbd", rbd_opts),
    ("iscsi", iscsi_opts),
    ("all", all_opts),
    ("wsgi", wsgi_opts),
    ("glance", glance_opts),
    ("image_cache", image_cache_opts),
]


def register_opts(conf):
    for group, opts in _GROUPS:
        conf.register_opts(opts, group=group)
    ks_loading.register_session_conf_options(conf, "cinder")
    ks_loading.register_auth_conf_options(conf, "cinder")
    ks_loading.register_session_conf_options(conf, "glance")
    ks_loading.register_auth_conf_options(conf, "glance")
    wsgi_body.register_opts(conf)
    policy_opts.set_defaults(conf)  # registers [oslo_policy]


register_opts(CONF)
logging.register_options(CONF)


# volattach-all's embedded defaults: one process on loopback, noauth tokens.
EMBEDDED_AUTH_GROUPS = ("api", "cinder", "volume")


def set_embedded_defaults(conf):
    """noauth as the default auth_strategy of every group (volattach-all
    and in-process tests); a configuration file still wins."""
    for group in EMBEDDED_AUTH_GROUPS:
        conf.set_default("auth_strategy", "noauth", group=group)


def cinder_endpoint(conf):
    """``[cinder] endpoint``, or the volume service of this configuration's
    ``[volume] listen``/``port`` (volattach-all's own)."""
    if conf.cinder.endpoint:
        return conf.cinder.endpoint
    return listen.loopback_url(conf.volume.listen, conf.volume.port, "/v3")


def list_opts():
    """The options, for oslo-config-generator (namespace volattach)."""
    result = [(group or "DEFAULT", opts) for group, opts in _GROUPS]
    ks = (ks_loading.get_session_conf_options()
          + ks_loading.get_auth_common_conf_options())
    for i, (group, opts) in enumerate(result):
        if group in ("cinder", "glance"):
            result[i] = (group, opts + ks)
    return result + wsgi_body.list_opts()


def version_string():
    """volattach's version, from the installed package's metadata."""
    from importlib import metadata
    try:
        return metadata.version("volattach")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def parse_args(argv, default_config_files=None, conf=CONF, description=None):
    """Parse the command line and config files, and set up logging.
    ``description``: what ``--help`` says the command is (also
    ``--version``, from the package's metadata)."""
    logging.set_defaults(default_log_levels=logging.get_default_log_levels() + [
        "oslo.messaging=WARN", "oslo_messaging=WARN", "amqp=WARN",
        "kombu=WARN", "stevedore=WARN", "alembic=WARN",
        # "Loading backend: eventlet" at every start (oslo.messaging's
        # server imports oslo.service; nothing here runs on eventlet)
        "oslo_service.backend=WARN",
    ])
    if default_config_files is None:
        default_config_files = [p for p in ("/etc/volattach/volattach.conf",)
                                if os.path.exists(p)]
    from volattach import startup
    prog = startup.prog_name()
    try:
        conf(argv, project="volattach",
             default_config_files=default_config_files,
             version="%(prog)s " + version_string(), description=description)
    except cfg.ConfigFilesNotFoundError as exc:
        startup.fail(prog, "--config-file %s: no such file or not readable"
                     % ", ".join(exc.config_files))
    except cfg.ConfigFileParseError as exc:
        startup.fail(prog, "%s: not a configuration file: %s"
                     % (exc.config_file, exc.msg))
    except (cfg.Error, ValueError) as exc:
        startup.fail(prog, exc)
    # start-up mistakes are one line (volattach.startup), before any log
    try:
        startup.check_values(conf)
        startup.check_log_destination(conf)
        startup.check_state_path(conf)
    except startup.StartupError as exc:
        startup.fail(prog, exc)
    try:
        from volattach import log_setup
        log_setup.setup(conf)
    except OSError as exc:
        startup.fail(prog, "--log-file/--log-dir: cannot open the log: %s"
                     % exc)
    for line in startup.unknown_option_lines(conf):
        logging.getLogger(__name__).warning(line)
