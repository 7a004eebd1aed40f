#!/usr/bin/env bash
# Start a three-node RabbitMQ cluster on this machine, on loopback ports of
# its own, beside the one-node broker of tools/start-rabbitmq.sh (which
# keeps 5672/25672 and the node name rabbit@localhost).
#
# Prints the transport URL naming all three nodes as the last line of
# stdout (progress goes to stderr):
#     rabbit://guest:guest@127.0.0.1:5681,guest:guest@127.0.0.1:5682,guest:guest@127.0.0.1:5683/
# so   url=$(tools/start-rabbitmq-cluster.sh | tail -n 1)   works.
#
# Idempotent: run again, it starts any node that is down (a node's own
# mnesia remembers the cluster, so it rejoins by itself) and makes a node
# that does not run in the cluster (one whose data directory was removed:
# it comes back empty and alone) join it again (the cluster forgets its
# old self first).  All three nodes are started together, then waited
# for: a node restarted after the others may wait for its peers to
# come up (RabbitMQ waits for the node that stopped last).
#
# Each node is tools/start-rabbitmq.sh with VOLATTACH_RABBIT_STATE_DIR: its
# own node name, AMQP and Erlang distribution ports, mnesia, logs, pid file
# (<dir>/<node name>/rabbit.pid), empty config and plugins files.  They
# share the rabbitmq user's Erlang cookie (/var/lib/rabbitmq/.erlang.cookie:
# Debian's wrappers run every node and rabbitmqctl as that user), which is
# what lets them cluster.
#
#   tools/start-rabbitmq-cluster.sh           start / repair the cluster
#   tools/start-rabbitmq-cluster.sh --stop    stop its three nodes
#   tools/start-rabbitmq-cluster.sh --status  rabbitmqctl cluster_status
#
# Environment:
#   VOLATTACH_RABBIT_CLUSTER_PORTS  three AMQP ports (default "5681 5682 5683");
#                                   each node's distribution port is its AMQP
#                                   port + 20000 (25681...)
#   VOLATTACH_RABBIT_CLUSTER_NAME   node name prefix (default vacluster: nodes
#                                   vacluster1@localhost ... vacluster3@localhost)
#   VOLATTACH_RABBIT_CLUSTER_DIR    state directory (default
#                                   /var/lib/volattach-rabbitmq-cluster)
#   VOLATTACH_RABBIT_TIMEOUT        seconds to wait for each node (default 120)
#   VOLATTACH_RABBIT_LISTEN         the AMQP listeners' address (default
#                                   127.0.0.1; see tools/start-rabbitmq.sh)
#
# Needs root (or the rabbitmq user), as tools/start-rabbitmq.sh.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
read -r -a PORTS <<< "${VOLATTACH_RABBIT_CLUSTER_PORTS:-5681 5682 5683}"
PREFIX=${VOLATTACH_RABBIT_CLUSTER_NAME:-vacluster}
DIR=${VOLATTACH_RABBIT_CLUSTER_DIR:-/var/lib/volattach-rabbitmq-cluster}
LISTEN=${VOLATTACH_RABBIT_LISTEN:-127.0.0.1}
export PATH="$PATH:/usr/sbin:/sbin"

log() { echo "start-rabbitmq-cluster: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[ "${#PORTS[@]}" = 3 ] || die "VOLATTACH_RABBIT_CLUSTER_PORTS needs three ports, not '${PORTS[*]}'"
for p in "${PORTS[@]}"; do
    [ "$p" != 5672 ] || die "5672 is the one-node broker's port (tools/start-rabbitmq.sh)"
done

NODES=()
for i in 1 2 3; do NODES+=("${PREFIX}${i}@localhost"); done
SEED=${NODES[0]}

ctl() {  # ctl NODE ARGS...: rabbitmqctl on NODE, quiet
    local node=$1; shift
    rabbitmqctl -q -n "$node" "$@"
}

ctl_or_die() {  # ctl_or_die NODE ARGS...: ctl, its output shown only on failure
    local out
    out=$(ctl "$@" 2>&1) || { log "$out"; die "rabbitmqctl -n $*: failed"; }
}

node_env() {  # node_env I: the environment of tools/start-rabbitmq.sh for node I
    local i=$1
    echo "VOLATTACH_RABBIT_NODE=${NODES[$i]}" \
         "VOLATTACH_RABBIT_PORT=${PORTS[$i]}" \
         "VOLATTACH_RABBIT_DIST_PORT=$((PORTS[i] + 20000))" \
         "VOLATTACH_RABBIT_STATE_DIR=$DIR/${NODES[$i]%@*}" \
         "VOLATTACH_RABBIT_LISTEN=$LISTEN"
}

url() {
    local parts=() p
    for p in "${PORTS[@]}"; do parts+=("guest:guest@${LISTEN}:${p}"); done
    local IFS=,
    echo "rabbit://${parts[*]}/"
}

running_in_cluster() {  # running_in_cluster NODE: NODE runs and sees SEED's cluster
    local status
    status=$(ctl "$1" cluster_status --formatter json 2>/dev/null) || return 1
    python3 - "$status" "${NODES[@]}" <<'EOF'
import json, sys
status = json.loads(sys.argv[1])
disk = set(status.get("disk_nodes", [])) | set(status.get("ram_nodes", []))
sys.exit(0 if set(sys.argv[2:]) <= disk else 1)
EOF
}

case "${1:-}" in
    --stop)
        for i in 0 1 2; do
            pid_file="$DIR/${NODES[$i]%@*}/rabbit.pid"
            if ctl "${NODES[$i]}" status >/dev/null 2>&1; then
                log "stopping ${NODES[$i]}"
                ctl "${NODES[$i]}" stop "$pid_file" >&2 || true
            fi
        done
        exit 0 ;;
    --status)
        exec rabbitmqctl -n "$SEED" cluster_status ;;
    "") ;;
    *) die "unknown argument $1 (--stop, --status)" ;;
esac

mkdir -p "$DIR"
started=$SECONDS
# Start the three together (see the header), each in the background, its
# progress in a file (a detached node keeps the stderr it was started with
# open: a pipe there would never end).
pids=()
for i in 0 1 2; do
    # shellcheck disable=SC2046
    env $(node_env "$i") "$HERE/start-rabbitmq.sh" > /dev/null \
        2> "$DIR/${NODES[$i]%@*}.start.log" < /dev/null &
    pids+=($!)
done
failed=0
for i in 0 1 2; do
    wait "${pids[$i]}" || failed=1
    sed "s/^/[${NODES[$i]}] /" "$DIR/${NODES[$i]%@*}.start.log" >&2
done
[ "$failed" = 0 ] || die "a node did not start (see above)"

# Cluster: a node not in the seed's cluster (a new one, or one whose data
# was removed) is reset and joins it; the seed forgets its former self first.
for i in 1 2; do
    node=${NODES[$i]}
    if running_in_cluster "$node"; then
        continue
    fi
    log "$node joins $SEED"
    ctl_or_die "$node" stop_app
    ctl_or_die "$node" reset
    ctl "$SEED" forget_cluster_node "$node" >/dev/null 2>&1 || true
    ctl_or_die "$node" join_cluster "$SEED"
    ctl_or_die "$node" start_app
done
# The seed itself may have come back empty: then it is the one alone.
if ! running_in_cluster "$SEED"; then
    other=${NODES[1]}
    log "$SEED rejoins through $other"
    ctl_or_die "$SEED" stop_app
    ctl_or_die "$SEED" reset
    ctl "$other" forget_cluster_node "$SEED" >/dev/null 2>&1 || true
    ctl_or_die "$SEED" join_cluster "$other"
    ctl_or_die "$SEED" start_app
fi
for node in "${NODES[@]}"; do
    ctl "$node" await_startup --timeout "${VOLATTACH_RABBIT_TIMEOUT:-120}" >/dev/null
    running_in_cluster "$node" || die "$node is not in the cluster (rabbitmqctl -n $node cluster_status)"
done
log "cluster ${NODES[*]} ready after $((SECONDS - started))s"
url
