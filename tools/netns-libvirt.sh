#!/usr/bin/env bash
# A libvirt daemon for one compute host of the several-hosts tier
# (tests/several_hosts): run inside network namespace NS (`ip netns exec`)
# and a mount namespace of its own (`unshare -m`), as
# tools/start-libvirt-peer.sh does for the peer, so that its QEMUs open
# their NBD connections and migration streams from NS's address.
#
#   tools/netns-libvirt.sh NS STATE_DIR          start (idempotent); prints
#                                                the daemon's URI last
#   tools/netns-libvirt.sh NS STATE_DIR --stop   stop it (libvirtd, virtlogd)
#
# libvirtd keeps its state, domains and pid files in compiled-in places
# (/etc/libvirt, /run/libvirt, /var/lib/libvirt, /var/cache/libvirt,
# /var/log/libvirt): in the daemon's mount namespace those are bind mounts
# of directories under STATE_DIR.  Its sockets are in STATE_DIR/sockets,
# which every namespace sees (unix sockets do not care about network
# namespaces): the compute daemon and the other hosts' libvirts (live
# migration) connect there.  Each daemon gets a host UUID of its own.
# qemu.conf is the one of tools/start-libvirt.sh, with
# nbd_tls_x509_cert_dir set to VOLATTACH_NBD_TLS_DIR when given (the
# compute's NBD client certificate).
#
# Needs root and libvirt installed (tools/start-libvirt.sh); keep
# STATE_DIR short (a unix socket path holds 108 bytes).
set -euo pipefail

export PATH="$PATH:/usr/sbin:/sbin"
NS=${1:?usage: $0 NS STATE_DIR [--stop]}
STATE=${2:?usage: $0 NS STATE_DIR [--stop]}
SOCKETS="$STATE/sockets"
URI="qemu+unix:///system?socket=$SOCKETS/libvirt-sock"
TIMEOUT=${VOLATTACH_LIBVIRT_TIMEOUT:-60}

log() { echo "netns-libvirt($NS): $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

pid_of() { cat "$SOCKETS/$1.pid" 2>/dev/null || true; }
alive() { local pid; pid=$(pid_of "$1"); [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; }
answers() { virsh -c "$URI" version >/dev/null 2>&1; }

stop() {
    local daemon
    for daemon in libvirtd virtlogd; do
        if alive "$daemon"; then
            kill "$(pid_of "$daemon")"
            for _ in $(seq 100); do alive "$daemon" || break; sleep 0.1; done
            if alive "$daemon"; then kill -9 "$(pid_of "$daemon")"; fi
        fi
    done
}

if [ "${3:-}" = "--stop" ]; then
    stop
    exit 0
fi

[ "$(id -u)" = 0 ] || die "must run as root (network and mount namespaces)"
command -v libvirtd >/dev/null || die "libvirtd missing: run tools/start-libvirt.sh first"
ip netns pids "$NS" >/dev/null 2>&1 || die "no network namespace $NS"

if alive libvirtd && answers; then
    log "already running"
    echo "$URI"
    exit 0
fi
stop

mkdir -p "$STATE"/etc "$STATE"/run "$STATE"/lib "$STATE"/cache "$STATE"/log "$SOCKETS"
find /etc/libvirt -maxdepth 1 -type f -exec cp -p {} "$STATE/etc/" \;
if [ -n "${VOLATTACH_NBD_TLS_DIR:-}" ]; then
    sed -i '/^nbd_tls_x509_cert_dir/d' "$STATE/etc/qemu.conf"
    echo "nbd_tls_x509_cert_dir = \"$VOLATTACH_NBD_TLS_DIR\"" >> "$STATE/etc/qemu.conf"
fi
[ -s "$STATE/host_uuid" ] || cat /proc/sys/kernel/random/uuid > "$STATE/host_uuid"
cat > "$STATE/etc/libvirtd.conf" <<EOF
unix_sock_dir = "$SOCKETS"
host_uuid = "$(cat "$STATE/host_uuid")"
EOF

log "starting virtlogd and libvirtd ($STATE)"
ip netns exec "$NS" unshare --mount --propagation private sh -ec "
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
    [ $SECONDS -lt $deadline ] || die "libvirtd did not answer in ${TIMEOUT}s (log: $STATE/log/libvirtd.log)"
    sleep 0.2
done
log "up ($URI)"
echo "$URI"
