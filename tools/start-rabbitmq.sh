#!/usr/bin/env bash
# Start a RabbitMQ broker on loopback for volattach's tests, if one is not
# already answering; install rabbitmq-server with apt-get when it is missing.
#
# Prints the transport URL (rabbit://guest:guest@127.0.0.1:5672/) as the
# last line of stdout; progress goes to stderr, so
#     url=$(tools/start-rabbitmq.sh)
# works.  Idempotent: a broker already answering is reused as it is.
#
# Environment:
#   VOLATTACH_RABBIT_PORT     AMQP port (default 5672)
#   VOLATTACH_RABBIT_NODE     Erlang node name (default rabbit@localhost)
#   VOLATTACH_RABBIT_TIMEOUT  seconds to wait for the broker (default 120)
#   VOLATTACH_RABBIT_DIST_PORT  Erlang distribution port (default RabbitMQ's:
#                             the AMQP port + 20000)
#   VOLATTACH_RABBIT_LISTEN   the address of the AMQP listener (default
#                             127.0.0.1), e.g. a network namespace's own
#                             address when the script runs in it with
#                             `ip netns exec` (tests/several_hosts); epmd and
#                             Erlang distribution stay on loopback
#   VOLATTACH_RABBIT_STATE_DIR  a node of its own, beside the system's: its
#                             mnesia, logs and pid file (<dir>/rabbit.pid)
#                             under this directory (handed to the rabbitmq
#                             user), with empty config and enabled-plugins
#                             files of its own (so no management listener);
#                             (with VOLATTACH_RABBIT_LISTEN other than
#                             127.0.0.1, loopback_users = none: guest may
#                             log in from that address's network);
#                             default: the system's /var/lib/rabbitmq,
#                             /var/log/rabbitmq and /etc/rabbitmq
#
# Needs root (or the rabbitmq user) to start the broker: Debian's wrappers
# run it as the rabbitmq user.  Stop it with
#     rabbitmqctl -n rabbit@localhost stop
# (epmd keeps running after that: stop it by its pid if you need to).
set -euo pipefail

PORT=${VOLATTACH_RABBIT_PORT:-5672}
NODE=${VOLATTACH_RABBIT_NODE:-rabbit@localhost}
TIMEOUT=${VOLATTACH_RABBIT_TIMEOUT:-120}
LISTEN=${VOLATTACH_RABBIT_LISTEN:-127.0.0.1}
URL="rabbit://guest:guest@${LISTEN}:${PORT}/"

log() { echo "start-rabbitmq: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

export PATH="$PATH:/usr/sbin:/sbin"

apt_install() {
    [ "$(id -u)" = 0 ] || die "$* is not installed and installing it needs root (apt-get install -y $*)"
    command -v apt-get >/dev/null || die "$* is not installed and there is no apt-get to install it"
    log "installing $* with apt-get"
    # Wait for another apt/dpkg run (e.g. unattended installs) instead of failing.
    local aptopts=(-o DPkg::Lock::Timeout=600 -o APT::Acquire::Retries=3)
    DEBIAN_FRONTEND=noninteractive apt-get "${aptopts[@]}" update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get "${aptopts[@]}" install -y -qq \
        --no-install-recommends "$@" >&2
}

port_open() {
    # bash's /dev/tcp: true when something accepts connections on the port.
    (exec 3<>"/dev/tcp/${LISTEN}/${PORT}") 2>/dev/null
}

node_ready() {
    # The node has booted completely (all apps started); fails at once
    # when the node is not running.
    rabbitmqctl -q -n "$NODE" await_startup --timeout 5 >/dev/null 2>&1
}

# Loopback only (platform notes): the AMQP listener, epmd and Erlang
# distribution all bind 127.0.0.1.
export RABBITMQ_NODE_IP_ADDRESS="$LISTEN"
export RABBITMQ_NODE_PORT="$PORT"
export ERL_EPMD_ADDRESS=127.0.0.1
export RABBITMQ_NODENAME="$NODE"
export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
if [ -n "${VOLATTACH_RABBIT_DIST_PORT:-}" ]; then
    export RABBITMQ_DIST_PORT="$VOLATTACH_RABBIT_DIST_PORT"
fi
LOG_DIR=/var/log/rabbitmq
STATE=${VOLATTACH_RABBIT_STATE_DIR:-}
if [ -n "$STATE" ]; then
    LOG_DIR="$STATE/log"
    export RABBITMQ_MNESIA_BASE="$STATE/mnesia"
    export RABBITMQ_LOG_BASE="$LOG_DIR"
    export RABBITMQ_PID_FILE="$STATE/rabbit.pid"
    export RABBITMQ_CONFIG_FILE="$STATE/rabbitmq.conf"
    export RABBITMQ_ADVANCED_CONFIG_FILE="$STATE/advanced.config"
    export RABBITMQ_ENABLED_PLUGINS_FILE="$STATE/enabled_plugins"
fi

if port_open; then
    if command -v rabbitmqctl >/dev/null && node_ready; then
        log "RabbitMQ node $NODE already running on ${LISTEN}:${PORT}"
    else
        # Something else (another node name, a broker started by hand)
        # answers on the port: use it as it is.
        log "something already listens on ${LISTEN}:${PORT}; using it as the broker"
    fi
    echo "$URL"
    exit 0
fi

if ! command -v rabbitmq-server >/dev/null || ! command -v rabbitmqctl >/dev/null; then
    apt_install rabbitmq-server
fi
command -v rabbitmq-server >/dev/null || die "rabbitmq-server still missing after install"

if [ "$(id -u)" != 0 ] && [ "$(id -un)" != rabbitmq ]; then
    die "no broker on ${LISTEN}:${PORT} and only root or the rabbitmq user can start one (sudo $0)"
fi

if [ -n "$STATE" ]; then
    mkdir -p "$RABBITMQ_MNESIA_BASE" "$LOG_DIR"
    [ -e "$RABBITMQ_CONFIG_FILE" ] || : > "$RABBITMQ_CONFIG_FILE"
    # a node of its own on another address: guest may log in from there
    # (RabbitMQ lets guest in over loopback only by default)
    if [ "$LISTEN" != 127.0.0.1 ] && ! grep -q '^loopback_users' "$RABBITMQ_CONFIG_FILE"; then
        echo "loopback_users = none" >> "$RABBITMQ_CONFIG_FILE"
    fi
    [ -e "$RABBITMQ_ENABLED_PLUGINS_FILE" ] || echo "[]." > "$RABBITMQ_ENABLED_PLUGINS_FILE"
    if [ "$(id -u)" = 0 ] && id rabbitmq >/dev/null 2>&1; then
        chown -R rabbitmq "$STATE"
    fi
fi

log "starting RabbitMQ node $NODE on ${LISTEN}:${PORT}"
rabbitmq-server -detached >&2 || log "rabbitmq-server -detached exited $? (checking whether the node came up anyway)"

# await_startup exits at once (69) while the node has not registered with
# epmd yet, so retry it in a bounded loop.
deadline=$((SECONDS + TIMEOUT))
until node_ready && port_open; do
    if [ "$SECONDS" -ge "$deadline" ]; then
        for f in /var/log/rabbitmq/startup_err /var/log/rabbitmq/startup_log \
                 "$LOG_DIR/${NODE}.log"; do
            [ -s "$f" ] && { log "--- tail of $f"; tail -n 30 "$f" >&2; }
        done
        die "RabbitMQ did not come up within ${TIMEOUT}s"
    fi
    sleep 1
done
log "RabbitMQ is ready after $((SECONDS))s"
echo "$URL"
