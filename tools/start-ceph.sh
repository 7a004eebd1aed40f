#!/usr/bin/env bash
# Start a single-node Ceph cluster on loopback for volattach's rbd volume
# backend, its libvirt rbd disks and their tests; install Debian's ceph
# packages with apt-get when they are missing.
#
# One monitor (mon.a on 127.0.0.1:3300 and :6789), one manager (mgr.x) and
# one OSD (osd.0, BlueStore on a sparse file, no block device needed), all
# started by hand (no systemd), their state under STATE.  The standard
# client files are written, so that any Ceph client (rbd, QEMU, Cinder's
# RBD driver, the rados/rbd Python bindings) finds the cluster:
#     /etc/ceph/ceph.conf  /etc/ceph/ceph.client.admin.keyring
# Single-node settings: pools of size 1, no warnings about missing
# replicas.  The pool POOL is created and initialized for rbd.
#
# Idempotent: running daemons are reused (a fast check when everything is
# up); a stopped cluster is started again with its data.  Prints the
# configuration file's path as the last line.
#
# Environment:
#   VOLATTACH_CEPH_STATE     state directory (default /var/lib/volattach-ceph)
#   VOLATTACH_CEPH_POOL      rbd pool to create (default volumes)
#   VOLATTACH_CEPH_OSD_SIZE  size of the OSD's sparse file (default 20G)
#   VOLATTACH_CEPH_TIMEOUT   seconds to wait for the cluster (default 90)
set -euo pipefail

export PATH="$PATH:/usr/sbin:/sbin"
export DEBIAN_FRONTEND=noninteractive
STATE=${VOLATTACH_CEPH_STATE:-/var/lib/volattach-ceph}
POOL=${VOLATTACH_CEPH_POOL:-volumes}
OSD_SIZE=${VOLATTACH_CEPH_OSD_SIZE:-20G}
TIMEOUT=${VOLATTACH_CEPH_TIMEOUT:-90}
CONF=/etc/ceph/ceph.conf
ADMIN_KEYRING=/etc/ceph/ceph.client.admin.keyring
MON_ADDR=127.0.0.1

log() { echo "start-ceph: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root"

installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"
}
missing=""
for p in ceph-mon ceph-mgr ceph-osd ceph-common python3-rados python3-rbd \
        qemu-block-extra uuid-runtime; do
    installed "$p" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    log "installing:$missing"
    apt-get update -qq >&2 || log "apt-get update failed; trying anyway"
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
        $missing >&2
fi

# the ceph CLI waits forever for an absent monitor
ceph_() { timeout 30 ceph --connect-timeout 20 "$@"; }

# the daemon's pid when it runs (it may run a binary an upgrade replaced)
daemon_pid() {
    local pid
    pid=$(cat "$STATE/run/$1.pid" 2>/dev/null) || return 1
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null \
        && readlink "/proc/$pid/exe" 2>/dev/null | grep -q "ceph-" \
        && echo "$pid"
}
pid_alive() {
    local pid
    pid=$(daemon_pid "$1") && ! readlink "/proc/$pid/exe" | grep -q "(deleted)"
}

write_conf() {
    local fsid
    fsid=$(cat "$STATE/fsid")
    cat <<EOF
# Written by volattach tools/start-ceph.sh: a single-node cluster whose
# state is in $STATE.
[global]
fsid = $fsid
mon initial members = a
mon host = [v2:$MON_ADDR:3300,v1:$MON_ADDR:6789]
public network = 127.0.0.0/8
ms bind ipv6 = false
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
auth allow insecure global id reclaim = false
osd pool default size = 1
osd pool default min size = 1
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon warn on insecure global id reclaim allowed = false
# no warning for a disk 70 % full (a development machine's often is); the
# monitor still stops at 5 % free
mon data avail warn = 10

[mon]
mon data = $STATE/mon/ceph-\$id
keyring = $STATE/mon/ceph-\$id/keyring
log file = $STATE/log/\$name.log
pid file = $STATE/run/\$name.pid
admin socket = $STATE/run/\$name.asok
mon cluster log file = $STATE/log/cluster.log

[mgr]
mgr data = $STATE/mgr/ceph-\$id
keyring = $STATE/mgr/ceph-\$id/keyring
log file = $STATE/log/\$name.log
pid file = $STATE/run/\$name.pid
admin socket = $STATE/run/\$name.asok

[osd]
osd data = $STATE/osd/ceph-\$id
keyring = $STATE/osd/ceph-\$id/keyring
log file = $STATE/log/\$name.log
pid file = $STATE/run/\$name.pid
admin socket = $STATE/run/\$name.asok
osd objectstore = bluestore
bluestore block create = true
bluestore block size = $(numfmt --from=iec "$OSD_SIZE")
bluestore fsck on mount = false
osd memory target = 1073741824
EOF
}

bootstrap() {
    log "creating a new cluster in $STATE"
    for name in mon.a mgr.x osd.0; do
        if daemon_pid "$name" >/dev/null; then
            kill "$(daemon_pid "$name")"
            for _ in $(seq 100); do daemon_pid "$name" >/dev/null || break; sleep 0.1; done
        fi
    done
    rm -rf "$STATE"
    mkdir -p "$STATE"/run "$STATE"/log "$STATE"/mon/ceph-a "$STATE"/mgr/ceph-x \
        "$STATE"/osd/ceph-0 /etc/ceph
    uuidgen > "$STATE/fsid"
    write_conf > "$CONF"
    local tmp="$STATE/bootstrap"
    mkdir -p "$tmp"
    ceph-authtool --create-keyring "$tmp/mon.keyring" --gen-key -n mon. \
        --cap mon 'allow *' >/dev/null
    ceph-authtool --create-keyring "$STATE/client.admin.keyring" --gen-key \
        -n client.admin --cap mon 'allow *' --cap osd 'allow *' \
        --cap mds 'allow *' --cap mgr 'allow *' >/dev/null
    install -m 600 "$STATE/client.admin.keyring" "$ADMIN_KEYRING"
    ceph-authtool "$tmp/mon.keyring" --import-keyring "$ADMIN_KEYRING" >/dev/null
    monmaptool --create --fsid "$(cat "$STATE/fsid")" \
        --addv a "[v2:$MON_ADDR:3300,v1:$MON_ADDR:6789]" "$tmp/monmap" >/dev/null
    ceph-mon --mkfs -i a --monmap "$tmp/monmap" --keyring "$tmp/mon.keyring"
    ceph-mon -i a >>"$STATE/log/start.log" 2>&1
    ceph_ auth get-or-create mgr.x mon 'allow profile mgr' osd 'allow *' \
        mds 'allow *' > "$STATE/mgr/ceph-x/keyring"
    local osd_uuid
    osd_uuid=$(uuidgen)
    [ "$(ceph_ osd new "$osd_uuid")" = 0 ] || die "the OSD did not get id 0"
    ceph_ auth get-or-create osd.0 mon 'allow profile osd' \
        mgr 'allow profile osd' osd 'allow *' > "$STATE/osd/ceph-0/keyring"
    ceph-osd -i 0 --mkfs --osd-uuid "$osd_uuid" >"$STATE/log/osd-mkfs.log" 2>&1 \
        || die "ceph-osd --mkfs failed: $(tail -n 5 "$STATE/log/osd-mkfs.log")"
    rm -rf "$tmp"
}

if [ ! -s "$STATE/fsid" ] || [ ! -d "$STATE/osd/ceph-0" ] \
        || [ ! -s "$STATE/osd/ceph-0/keyring" ] \
        || [ ! -s "$STATE/client.admin.keyring" ]; then
    bootstrap
fi
# the client files always name this cluster (another run may have
# rewritten them)
if [ "$(cat "$CONF" 2>/dev/null)" != "$(write_conf)" ]; then
    log "writing $CONF"
    write_conf > "$CONF"
fi
cmp -s "$STATE/client.admin.keyring" "$ADMIN_KEYRING" \
    || install -m 600 "$STATE/client.admin.keyring" "$ADMIN_KEYRING"

for daemon in "mon a" "mgr x" "osd 0"; do
    set -- $daemon
    if ! pid_alive "$1.$2"; then
        if pid=$(daemon_pid "$1.$2"); then
            log "stopping $1.$2 (its binary was upgraded)"
            kill "$pid"
            for _ in $(seq 300); do daemon_pid "$1.$2" >/dev/null || break; sleep 0.1; done
        fi
        log "starting $1.$2"
        "ceph-$1" -i "$2" >>"$STATE/log/start.log" 2>&1
    fi
done

deadline=$((SECONDS + TIMEOUT))
until [ "$(ceph_ osd stat -f json 2>/dev/null \
            | python3 -c 'import json,sys; print(json.load(sys.stdin)["num_up_osds"])' \
            2>/dev/null)" = 1 ]; do
    [ $SECONDS -lt $deadline ] || die "osd.0 not up in ${TIMEOUT}s (logs: $STATE/log)"
    sleep 0.5
done

if ! ceph_ osd pool ls | grep -qx "$POOL"; then
    log "creating the rbd pool $POOL"
    ceph_ osd pool create "$POOL" 32 32 >/dev/null 2>&1
    ceph_ osd pool set "$POOL" size 1 --yes-i-really-mean-it >/dev/null 2>&1
    timeout 60 rbd pool init "$POOL"
fi
log "ceph is up (mon $MON_ADDR:6789, pool $POOL)"
echo "$CONF"
