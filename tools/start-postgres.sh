#!/usr/bin/env bash
# Start a PostgreSQL server on loopback for volattach's tests, unless ours
# is already running; install the server with apt-get when it is missing.
#
# The cluster is a throw-away test cluster: data under .ci-state/postgres/
# of the repository (git-ignored), listening on 127.0.0.1 only, no Unix
# socket, fsync off.  Its superuser is volattach/volattach (password auth).
# The script creates the database $VOLATTACH_PG_DB (default volattach_test)
# if it is missing and prints its SQLAlchemy URL as the last line of stdout
# (progress goes to stderr), so
#     url=$(tools/start-postgres.sh)
# works.  Idempotent: a running test cluster is reused.  When the port is
# taken by some other server, the next free port is used (unless
# VOLATTACH_PG_PORT pins it).  PostgreSQL refuses to run as root: as root the
# server runs as the postgres user (or a volattach-pg system user created for
# it).
#
# Environment:
#   VOLATTACH_PG_PORT      port, pinned (default: first usable from 55433 on)
#   VOLATTACH_PG_DIR       state directory (default <repo>/.ci-state/postgres,
#                          or /tmp/volattach-postgres when the server's user
#                          cannot reach the repository)
#   VOLATTACH_PG_DB        database to create (default volattach_test)
#   VOLATTACH_PG_TIMEOUT   seconds to wait for the server (default 60)
#   VOLATTACH_PG_LISTEN    one more address to listen on, beside 127.0.0.1
#                          (e.g. a network namespace's own address when the
#                          script runs in it with `ip netns exec`:
#                          tests/several_hosts); clients of the networks the
#                          server is on (pg_hba's samenet) may log in, and
#                          the URL printed names that address
#
# Stop it with: tools/start-postgres.sh --stop
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
DEFAULT_PORT=55433
DB=${VOLATTACH_PG_DB:-volattach_test}
TIMEOUT=${VOLATTACH_PG_TIMEOUT:-60}
PGSUPER=volattach
PGPASS=volattach

log() { echo "start-postgres: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

export PATH="$PATH:/usr/sbin:/sbin"

apt_install() {
    [ "$(id -u)" = 0 ] || die "$* is not installed and installing it needs root (apt-get install -y $*)"
    command -v apt-get >/dev/null || die "$* is not installed and there is no apt-get to install it"
    log "installing $* with apt-get"
    # Wait for another apt/dpkg run instead of failing on its lock.
    local aptopts=(-o DPkg::Lock::Timeout=600 -o APT::Acquire::Retries=3)
    DEBIAN_FRONTEND=noninteractive apt-get "${aptopts[@]}" update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get "${aptopts[@]}" install -y -qq \
        --no-install-recommends "$@" >&2
}

find_pgbin() {
    # Newest server installation: /usr/lib/postgresql/<major>/bin (Debian),
    # else whatever initdb is on PATH.
    local d best="" bestv=0 v
    for d in /usr/lib/postgresql/*/bin; do
        if [ ! -x "$d/postgres" ] || [ ! -x "$d/initdb" ] || [ ! -x "$d/pg_ctl" ]; then continue; fi
        v=$(basename "$(dirname "$d")"); v=${v%%.*}
        if [ "$v" -gt "$bestv" ] 2>/dev/null; then best=$d; bestv=$v; fi
    done
    if [ -z "$best" ] && command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
        best=$(dirname "$(command -v initdb)")
    fi
    echo "$best"
}

choose_user() {
    # The OS user the server runs as.
    if [ "$(id -u)" = 0 ]; then
        if id postgres >/dev/null 2>&1; then echo postgres; else echo volattach-pg; fi
    else
        id -un
    fi
}

as_server_user() {
    # From a directory the server's user can enter (initdb and pg_ctl
    # complain about an unreadable working directory).
    if [ "$(id -un)" = "$RUNAS" ]; then
        "$@"
    else
        (cd / && runuser -u "$RUNAS" -- "$@")
    fi
}

choose_dir() {
    if [ -n "${VOLATTACH_PG_DIR:-}" ]; then
        echo "$VOLATTACH_PG_DIR"; return
    fi
    # The server's user must be able to traverse every parent directory.
    if [ "$(id -un)" = "$RUNAS" ] || ! id "$RUNAS" >/dev/null 2>&1 \
            || runuser -u "$RUNAS" -- test -x "$REPO" 2>/dev/null; then
        echo "$REPO/.ci-state/postgres"
    else
        echo "${TMPDIR:-/tmp}/volattach-postgres"
    fi
}

answering() {  # answering PORT
    "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$1" -t 2 >/dev/null 2>&1
}

port_in_use() {  # port_in_use PORT: something accepts TCP connections there
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

psql_super() {  # psql_super PORT ARGS...: psql as our superuser over TCP
    local port=$1; shift
    PGPASSWORD=$PGPASS PGCONNECT_TIMEOUT=5 "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 \
        -h 127.0.0.1 -p "$port" -U "$PGSUPER" "$@"
}

ours() {  # ours PORT: the server there accepts our superuser
    psql_super "$1" -d postgres -tAc "SELECT 1" >/dev/null 2>&1
}

running_port() {
    # Port of the server running from $DATA, or nothing.  Line 4 of
    # postmaster.pid is the port.
    if [ -f "$DATA/postmaster.pid" ] \
            && as_server_user "$PGBIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
        sed -n 4p "$DATA/postmaster.pid"
    fi
}

set_paths() {
    RUNAS=$(choose_user)
    STATE=$(choose_dir)
    DATA="$STATE/data"
    LOGFILE="$STATE/postgres.log"
}

PGBIN=$(find_pgbin)
set_paths

if [ "${1:-}" = "--stop" ]; then
    if [ -n "$PGBIN" ] && [ -n "$(running_port)" ]; then
        as_server_user "$PGBIN/pg_ctl" -D "$DATA" -m fast -w stop >&2
    else
        log "no server running from $DATA"
    fi
    exit 0
fi

if [ -z "$PGBIN" ]; then
    apt_install postgresql
    PGBIN=$(find_pgbin)
    [ -n "$PGBIN" ] || die "PostgreSQL server binaries still missing after installing postgresql"
fi
log "using PostgreSQL server binaries in $PGBIN"

if [ "$(id -u)" = 0 ] && ! id "$RUNAS" >/dev/null 2>&1; then
    log "creating system user $RUNAS to run PostgreSQL (it refuses to run as root)"
    useradd --system --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin "$RUNAS"
fi
# Again, now that the server's user exists (the install may have made it).
set_paths

PORT=$(running_port)
if [ -n "$PORT" ]; then
    log "test cluster already running from $DATA on 127.0.0.1:${PORT}"
    [ -z "${VOLATTACH_PG_PORT:-}" ] || [ "$VOLATTACH_PG_PORT" = "$PORT" ] \
        || die "the test cluster in $DATA runs on port $PORT, not VOLATTACH_PG_PORT=$VOLATTACH_PG_PORT (stop it: $0 --stop)"
else
    if [ -n "${VOLATTACH_PG_PORT:-}" ]; then
        candidates=("$VOLATTACH_PG_PORT")
    else
        mapfile -t candidates < <(seq "$DEFAULT_PORT" $((DEFAULT_PORT + 20)))
    fi
    for p in "${candidates[@]}"; do
        if answering "$p" && ours "$p"; then
            # A test cluster of this script started from another checkout.
            log "reusing the test cluster already answering on 127.0.0.1:${p}"
            PORT=$p; break
        elif port_in_use "$p"; then
            log "127.0.0.1:${p} is taken by another server"
        else
            PORT=$p; START=1; break
        fi
    done
    [ -n "$PORT" ] || die "no usable port among ${candidates[*]} (set VOLATTACH_PG_PORT)"
fi

if [ "${START:-0}" = 1 ]; then
    mkdir -p "$STATE"
    if [ "$(id -u)" = 0 ]; then chown "$RUNAS" "$STATE"; fi
    chmod 700 "$STATE"

    major=$("$PGBIN/postgres" --version | awk '{print $3}' | cut -d. -f1)
    if [ -s "$DATA/PG_VERSION" ] && [ "$(cat "$DATA/PG_VERSION")" != "$major" ]; then
        log "$DATA is a PostgreSQL $(cat "$DATA/PG_VERSION") cluster, the server is $major: recreating it"
        rm -rf "$DATA"
    fi
    if [ ! -s "$DATA/PG_VERSION" ]; then
        log "creating a test cluster in $DATA"
        rm -rf "$DATA"
        pwfile="$STATE/.pw"
        ( umask 077; printf '%s\n' "$PGPASS" > "$pwfile" )
        if [ "$(id -u)" = 0 ]; then chown "$RUNAS" "$pwfile"; fi
        as_server_user "$PGBIN/initdb" -D "$DATA" -U "$PGSUPER" --pwfile="$pwfile" \
            --auth-host=scram-sha-256 --auth-local=peer -E UTF8 --no-locale \
            >"$STATE/initdb.log" 2>&1 || { cat "$STATE/initdb.log" >&2; die "initdb failed"; }
        rm -f "$pwfile"
        # A test cluster: loopback only, no Unix socket (its default
        # directory may not exist or be writable), durability off for speed.
        # The port is given at start (-p), so the cluster can move.
        cat >> "$DATA/postgresql.conf" <<CONF

# --- added by tools/start-postgres.sh (volattach test cluster) ---
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
max_connections = 300
fsync = off
synchronous_commit = off
full_page_writes = off
CONF
    fi

    listen_opt=""
    if [ -n "${VOLATTACH_PG_LISTEN:-}" ]; then
        listen_opt=" -c listen_addresses=127.0.0.1,${VOLATTACH_PG_LISTEN}"
        grep -q "^host all all samenet" "$DATA/pg_hba.conf" \
            || echo "host all all samenet scram-sha-256" >> "$DATA/pg_hba.conf"
    fi
    log "starting PostgreSQL on 127.0.0.1${VOLATTACH_PG_LISTEN:+,$VOLATTACH_PG_LISTEN}:${PORT} (data $DATA, log $LOGFILE)"
    # pg_ctl -w waits until the server accepts connections, bounded by -t.
    if ! as_server_user "$PGBIN/pg_ctl" -D "$DATA" -l "$LOGFILE" -o "-p $PORT$listen_opt" \
            -w -t "$TIMEOUT" start >&2; then
        [ -f "$LOGFILE" ] && { log "--- tail of $LOGFILE"; tail -n 30 "$LOGFILE" >&2; }
        die "PostgreSQL did not start"
    fi
fi

deadline=$((SECONDS + TIMEOUT))
until answering "$PORT"; do
    [ "$SECONDS" -lt "$deadline" ] || die "PostgreSQL on 127.0.0.1:${PORT} not ready within ${TIMEOUT}s"
    sleep 1
done
ours "$PORT" || die "the server on 127.0.0.1:${PORT} does not accept ${PGSUPER}/${PGPASS}"

if [ "$(psql_super "$PORT" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '${DB}'")" != 1 ]; then
    log "creating database ${DB}"
    psql_super "$PORT" -d postgres -c "CREATE DATABASE \"${DB}\"" >&2
fi
log "PostgreSQL is ready on 127.0.0.1:${PORT}"
echo "postgresql+psycopg2://${PGSUPER}:${PGPASS}@${VOLATTACH_PG_LISTEN:-127.0.0.1}:${PORT}/${DB}"
