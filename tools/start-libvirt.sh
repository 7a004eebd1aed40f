#!/usr/bin/env bash
# Start libvirt (QEMU driver, TCG-capable) on this machine for volattach's
# libvirt driver and guest tests; install QEMU, libvirt and the build
# dependencies of libvirt-python with apt-get when they are missing.
#
# Works as root inside a container: creates the libvirt-qemu user and group
# the QEMU driver needs, writes /etc/libvirt/qemu.conf with the settings a
# container needs (no cgroups, no namespaces, no security driver), starts
# virtlogd and then libvirtd, and waits until
#     virsh -c qemu:///system capabilities
# answers.  Idempotent: running daemons are reused; the configuration is
# rewritten only when it differs.
#
# Environment:
#   VOLATTACH_LIBVIRT_TIMEOUT  seconds to wait for libvirtd (default 60)
set -euo pipefail

TIMEOUT=${VOLATTACH_LIBVIRT_TIMEOUT:-60}
export PATH="$PATH:/usr/sbin:/sbin"
export DEBIAN_FRONTEND=noninteractive

log() { echo "start-libvirt: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

SUDO=""
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || die "must run as root (or with sudo)"
    SUDO="sudo"
fi

PACKAGES="qemu-system-x86 qemu-utils qemu-block-extra qemu-system-common \
libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients \
libvirt-dev pkg-config gcc python3-dev genisoimage busybox-static cpio"

missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" \
        || missing="$missing $p"
done
if [ -n "$missing" ]; then
    log "installing:$missing"
    $SUDO apt-get update -qq >&2 || log "apt-get update failed; trying anyway"
    # shellcheck disable=SC2086
    $SUDO apt-get install -y -qq --no-install-recommends $missing >&2
fi

getent group libvirt-qemu >/dev/null || $SUDO groupadd -r libvirt-qemu
getent passwd libvirt-qemu >/dev/null \
    || $SUDO useradd -r -g libvirt-qemu -d /var/lib/libvirt -s /usr/sbin/nologin libvirt-qemu
$SUDO mkdir -p /var/log/libvirt /var/run/libvirt /var/log/libvirt/qemu

CONF=/etc/libvirt/qemu.conf
want=$(cat <<'EOF'
# Written by volattach tools/start-libvirt.sh (root in a container).
user = "root"
group = "root"
cgroup_controllers = [ ]
namespaces = [ ]
remember_owner = 0
security_driver = "none"
EOF
)
restart=0
if [ "$(cat "$CONF" 2>/dev/null)" != "$want" ]; then
    log "writing $CONF"
    echo "$want" | $SUDO tee "$CONF" >/dev/null
    restart=1
fi

running() { pgrep -x "$1" >/dev/null; }

if ! running virtlogd; then
    log "starting virtlogd"
    $SUDO virtlogd -d
fi
if running libvirtd && [ "$restart" = 1 ]; then
    log "restarting libvirtd for the new configuration"
    $SUDO kill "$(pgrep -x libvirtd)"
    for _ in $(seq 50); do running libvirtd || break; sleep 0.1; done
fi
if ! running libvirtd; then
    log "starting libvirtd"
    $SUDO libvirtd -d
fi

deadline=$((SECONDS + TIMEOUT))
until virsh -c qemu:///system capabilities >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || die "libvirtd did not answer in ${TIMEOUT}s"
    sleep 0.2
done
# Read the whole document first: with pipefail, `virsh | grep -q` fails
# whenever grep exits at the match before virsh has written everything.
caps=$(virsh -c qemu:///system capabilities)
case "$caps" in
    *"domain type='qemu'"*) ;;
    *) die "libvirt lists no qemu domain type" ;;
esac
log "libvirt is up (qemu:///system)"
echo "qemu:///system"
