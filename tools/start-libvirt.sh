#!/usr/bin/env bash
# Start libvirt (QEMU driver, TCG-capable) on this machine for volattach's
# libvirt driver and guest tests; install QEMU, libvirt and the build
# dependencies of libvirt-python with apt-get when they are missing (on
# Debian 12, libvirt from bookworm-backports: see LIBVIRT_MIN below).
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
#   VOLATTACH_LIBVIRT_TIMEOUT    seconds to wait for libvirtd (default 60)
#   VOLATTACH_LIBVIRT_BACKPORTS  0: Debian 12's own libvirt 9.0 (guests then
#                                do not survive a storage daemon restart)
#   VOLATTACH_NBD_TLS_DIR        the compute's NBD client certificates
#                                ([libvirt] nbd_tls_dir): qemu.conf's
#                                nbd_tls_x509_cert_dir (the peer copies it)
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

# qemu-block-extra: QEMU's rbd and iscsi (libiscsi: block-iscsi.so)
# block drivers, which open rbd and iscsi volumes without kernel modules
PACKAGES="qemu-system-x86 qemu-utils qemu-block-extra qemu-system-common \
pkg-config gcc python3-dev genisoimage busybox-static cpio"
# libvirt-daemon-driver-secret: the libvirt secrets that hold the cephx keys
# of rbd disks (without it: "not supported by the connection driver") and
# the CHAP passwords of iscsi disks
LIBVIRT_PACKAGES="libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients libvirt-dev \
libvirt-daemon-driver-secret"

# Debian 12's libvirt 9.0 drops a network disk's <reconnect delay>: QEMU's
# NBD client then gives up at once when the storage daemon goes away, and
# a guest does not survive a restart of it (README, "Real guests").  The
# delay needs libvirt 9.2 (LIBVIRT_MIN): on Debian 12 the libvirt packages
# come from bookworm-backports (11.x); QEMU stays Debian 12's own 7.2.
# VOLATTACH_LIBVIRT_BACKPORTS=0 keeps the distribution's libvirt.
LIBVIRT_MIN=9.2
codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
backports=""
if [ "$codename" = bookworm ] && [ "${VOLATTACH_LIBVIRT_BACKPORTS:-1}" != 0 ]; then
    backports=bookworm-backports
fi

installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"
}

missing=""
for p in $PACKAGES; do
    installed "$p" || missing="$missing $p"
done
for p in $LIBVIRT_PACKAGES; do
    if [ -z "$backports" ]; then
        installed "$p" || missing="$missing $p"
    elif ! installed "$p" || ! dpkg --compare-versions \
            "$(dpkg-query -W -f='${Version}' "$p")" ge "$LIBVIRT_MIN"; then
        missing="$missing $p/$backports"
    fi
done
if [ -n "$missing" ]; then
    if [ -n "$backports" ] && [ "$missing" != "${missing%/"$backports"*}" ] \
            && ! grep -rqs "$backports" /etc/apt/sources.list /etc/apt/sources.list.d; then
        log "adding $backports to apt's sources"
        echo "deb http://deb.debian.org/debian $backports main" \
            | $SUDO tee "/etc/apt/sources.list.d/volattach-$backports.list" >/dev/null
    fi
    log "installing:$missing"
    $SUDO apt-get update -qq >&2 || log "apt-get update failed; trying anyway"
    # keep a qemu.conf written below (an upgrade would ask about it)
    # shellcheck disable=SC2086
    $SUDO apt-get install -y -qq --no-install-recommends \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
        $missing >&2
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
if [ -n "${VOLATTACH_NBD_TLS_DIR:-}" ]; then
    want="$want
nbd_tls_x509_cert_dir = \"$VOLATTACH_NBD_TLS_DIR\""
fi
running() { pgrep -x "$1" >/dev/null; }
# a daemon still running the binary an upgrade replaced
stale() {
    local pid
    for pid in $(pgrep -x "$1" || true); do
        readlink "/proc/$pid/exe" 2>/dev/null | grep -q "(deleted)" && return 0
    done
    return 1
}

# the daemon of this script, not tools/start-libvirt-peer.sh's libvirtd
main_libvirtd() {
    local pid
    pid=$(cat /run/libvirtd.pid 2>/dev/null) && [ -n "$pid" ] \
        && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = libvirtd ] && echo "$pid"
}

restart=0
stale libvirtd && restart=1
# a driver module just installed loads only at libvirtd's start (its
# package restarts libvirtd only through systemd)
if main_libvirtd >/dev/null; then
    case "$(virsh -c qemu:///system secret-list 2>&1 || true)" in
        *"not supported"*) restart=1 ;;
    esac
fi
if stale virtlogd; then
    log "restarting virtlogd for the new libvirt"
    $SUDO kill "$(pgrep -x virtlogd)"
    for _ in $(seq 50); do running virtlogd || break; sleep 0.1; done
fi
if [ "$(cat "$CONF" 2>/dev/null)" != "$want" ]; then
    log "writing $CONF"
    echo "$want" | $SUDO tee "$CONF" >/dev/null
    restart=1
fi

if ! running virtlogd; then
    log "starting virtlogd"
    $SUDO virtlogd -d
fi
if main_libvirtd >/dev/null && [ "$restart" = 1 ]; then
    log "restarting libvirtd for the new configuration, version or driver"
    $SUDO kill "$(main_libvirtd)"
    for _ in $(seq 50); do main_libvirtd >/dev/null || break; sleep 0.1; done
fi
if ! main_libvirtd >/dev/null; then
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
