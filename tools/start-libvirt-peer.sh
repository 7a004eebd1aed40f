#!/usr/bin/env bash
# A second libvirt daemon on this machine, beside the one of
# tools/start-libvirt.sh, so that a live migration can go from one libvirt
# to another without a second machine.  Idempotent; prints its URI as the
# last line.
#
# libvirt's privileged daemon keeps its state, domain definitions and pid
# files in compiled-in places (/run/libvirt, /var/lib/libvirt,
# /etc/libvirt, /var/cache/libvirt, /var/log/libvirt).  The peer runs in a
# mount namespace of its own (unshare -m) where those are bind mounts of
# directories under STATE_DIR, with its own host UUID (libvirt refuses a
# migration to the host it comes from) and its sockets in SOCKET_DIR, a
# place both namespaces see.  Its QEMU runs with the same qemu.conf as the
# first daemon's; the two QEMUs migrate over loopback.
#
# In the peer's namespace /run/libvirt is the peer's: the first daemon's
# sockets are reached there (and here) through MAIN_SOCKETS, a bind mount
# of the first daemon's /run/libvirt made before the namespace.  The script
# prints two URIs: the first daemon's through MAIN_SOCKETS (the one a
# migration from the peer connects to), then, last, the peer's.
#
#   VOLATTACH_LIBVIRT_PEER_STATE   state directory (default
#                                  /var/lib/volattach-libvirt-peer)
#   VOLATTACH_LIBVIRT_PEER_SOCKETS socket directory (default
#                                  /run/volattach-libvirt-peer)
#
# Needs root (mount namespaces) and libvirt installed (start-libvirt.sh).
set -euo pipefail

export PATH="$PATH:/usr/sbin:/sbin"
STATE=${VOLATTACH_LIBVIRT_PEER_STATE:-/var/lib/volattach-libvirt-peer}
SOCKETS=${VOLATTACH_LIBVIRT_PEER_SOCKETS:-/run/volattach-libvirt-peer}
MAIN_SOCKETS=/run/volattach-libvirt-main
URI="qemu+unix:///system?socket=$SOCKETS/libvirt-sock"
MAIN_URI="qemu+unix:///system?socket=$MAIN_SOCKETS/libvirt-sock"
TIMEOUT=${VOLATTACH_LIBVIRT_TIMEOUT:-60}

log() { echo "start-libvirt-peer: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (it uses a mount namespace)"
command -v libvirtd >/dev/null || die "libvirtd missing: run tools/start-libvirt.sh first"

answers() { virsh -c "$URI" version >/dev/null 2>&1; }
pid_of() { cat "$SOCKETS/$1.pid" 2>/dev/null || true; }
alive() { local pid; pid=$(pid_of "$1"); [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; }
replaced() {
    local pid; pid=$(pid_of "$1")
    [ -n "$pid" ] && readlink "/proc/$pid/exe" 2>/dev/null | grep -q "(deleted)"
}

mkdir -p "$MAIN_SOCKETS"
mountpoint -q "$MAIN_SOCKETS" || mount --bind /run/libvirt "$MAIN_SOCKETS"

# the peer's namespace must see the first daemon's sockets
sees_main() {
    nsenter -t "$(pid_of libvirtd)" -m test -S "$MAIN_SOCKETS/libvirt-sock"
}

# a peer started before libvirt-daemon-driver-secret was installed (by
# tools/start-libvirt.sh) has no secret store for the cephx keys of rbd disks
has_secrets() {
    case "$(virsh -c "$URI" secret-list 2>&1 || true)" in
        *"not supported"*) return 1 ;;
    esac
}

if alive libvirtd && ! replaced libvirtd && answers && sees_main && has_secrets; then
    log "already running"
    echo "$MAIN_URI"
    echo "$URI"
    exit 0
fi
for daemon in libvirtd virtlogd; do
    if alive "$daemon"; then
        log "stopping the peer's $daemon"
        kill "$(pid_of "$daemon")"
        for _ in $(seq 50); do alive "$daemon" || break; sleep 0.1; done
    fi
done

mkdir -p "$STATE"/etc "$STATE"/run "$STATE"/lib "$STATE"/cache "$STATE"/log "$SOCKETS"
# the first daemon's configuration files, not its domains or networks
find /etc/libvirt -maxdepth 1 -type f -exec cp -p {} "$STATE/etc/" \;
[ -s "$STATE/host_uuid" ] || cat /proc/sys/kernel/random/uuid > "$STATE/host_uuid"
cat > "$STATE/etc/libvirtd.conf" <<EOF
unix_sock_dir = "$SOCKETS"
host_uuid = "$(cat "$STATE/host_uuid")"
EOF

log "starting a libvirt daemon in its own mount namespace ($STATE)"
unshare --mount --propagation private sh -ec "
    mount --bind '$STATE/etc' /etc/libvirt
    mount --bind '$STATE/run' /run/libvirt
    mount --bind '$STATE/lib' /var/lib/libvirt
    mount --bind '$STATE/cache' /var/cache/libvirt
    mount --bind '$STATE/log' /var/log/libvirt
    virtlogd -d -p '$SOCKETS/virtlogd.pid'
    libvirtd -d -p '$SOCKETS/libvirtd.pid'
"

deadline=$((SECONDS + TIMEOUT))
until answers; do
    [ $SECONDS -lt $deadline ] || die "the peer libvirtd did not answer in ${TIMEOUT}s (log: $STATE/log/libvirtd.log)"
    sleep 0.2
done
log "libvirt peer is up ($URI)"
echo "$MAIN_URI"
echo "$URI"
