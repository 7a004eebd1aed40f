#!/usr/bin/env bash
# Start tgtd (the userspace iSCSI target of Debian's `tgt` package) on
# loopback for the volume service's iscsi backend and the iscsi guest
# tests; install `tgt` with apt-get when it is missing.  Also gives this
# host an open-iscsi initiator name (/etc/iscsi/initiatorname.iscsi) when
# it has none: the compute sends it in its connector and QEMU's libiscsi
# logs in with it, so that the target's initiator ACL lets it in.
#
# Prints the portal (127.0.0.1:3260) as the last line of stdout; progress
# goes to stderr.  Idempotent: a tgtd already answering is reused as it is
# (its targets stay).
#
# Environment:
#   VOLATTACH_TGT_PORTAL   the portal tgtd listens on (default 127.0.0.1:3260)
#   VOLATTACH_TGT_TIMEOUT  seconds to wait for tgtd (default 20)
set -euo pipefail

PORTAL=${VOLATTACH_TGT_PORTAL:-127.0.0.1:3260}
TIMEOUT=${VOLATTACH_TGT_TIMEOUT:-20}
export PATH="$PATH:/usr/sbin:/sbin"
export DEBIAN_FRONTEND=noninteractive

log() { echo "start-tgt: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

SUDO=""
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || die "must run as root (or with sudo)"
    SUDO="sudo"
fi

if ! command -v tgtd >/dev/null || ! command -v tgtadm >/dev/null; then
    log "installing tgt"
    $SUDO apt-get update -qq >&2 || log "apt-get update failed; trying anyway"
    $SUDO apt-get install -y -qq --no-install-recommends tgt >&2
fi

INITIATOR_FILE=/etc/iscsi/initiatorname.iscsi
if ! grep -qs '^InitiatorName=.' "$INITIATOR_FILE"; then
    name="iqn.1993-08.org.debian:01:$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')"
    log "writing $INITIATOR_FILE ($name)"
    $SUDO mkdir -p /etc/iscsi
    echo "InitiatorName=$name" | $SUDO tee "$INITIATOR_FILE" >/dev/null
fi

answering() { $SUDO tgtadm --lld iscsi --mode target --op show >/dev/null 2>&1; }

if ! answering; then
    log "starting tgtd on $PORTAL"
    $SUDO mkdir -p /var/log/tgt
    # its own session: it outlives this script; -f keeps it from forking
    # away from its log (tgtd -f ignores SIGTERM while it has targets:
    # stop it with `tgtadm --mode system --op delete` then a kill)
    $SUDO setsid tgtd -f --iscsi "portal=$PORTAL" \
        </dev/null >>/var/log/tgt/tgtd.log 2>&1 &
    deadline=$((SECONDS + TIMEOUT))
    until answering; do
        [ $SECONDS -lt $deadline ] || die "tgtd did not answer in ${TIMEOUT}s (/var/log/tgt/tgtd.log)"
        sleep 0.1
    done
fi
host=${PORTAL%:*}
port=${PORTAL##*:}
deadline=$((SECONDS + TIMEOUT))
until (exec 3<>"/dev/tcp/${host//[\[\]]/}/$port") 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || die "nothing listens on $PORTAL (another tgtd's portal?)"
    sleep 0.1
done
log "tgtd is up ($PORTAL)"
echo "$PORTAL"
