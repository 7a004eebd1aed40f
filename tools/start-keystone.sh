#!/usr/bin/env bash
# Start a real Keystone on loopback for volattach's tempest job, unless ours
# is already running.
#
# Keystone ($VOLATTACH_KEYSTONE_VERSION, default 30.0.0; the newest release
# that installs when that one does not) is installed from PyPI into its own
# virtualenv .ci-state/keystone-venv and served by gunicorn with ONE worker
# and ONE thread on a SQLite database (two workers, or two threads, on
# SQLite answer "database is locked"),
# or on PostgreSQL when VOLATTACH_KEYSTONE_DB_URL names one (for example the
# URL tools/start-postgres.sh prints).  Tokens are fernet tokens.
#
# Bootstrapped (idempotent, every run):
#   - the admin user/project/role and the identity endpoint (keystone-manage
#     bootstrap), the roles member, reader, service;
#   - the catalog: compute (http://127.0.0.1:$COMPUTE_PORT/v2.1), volumev3
#     and block-storage (http://127.0.0.1:$VOLUME_PORT/v3/%(project_id)s),
#     region RegionOne, public and internal interfaces;
#   - a service user (volattach/$SERVICE_PASSWORD in project "service",
#     roles service and admin) for keystonemiddleware's token validation and
#     for the service tokens volattach sends to its volume service.
# The last line of stdout is Keystone's URL (progress goes to stderr):
#     url=$(tools/start-keystone.sh)
#
# Environment:
#   VOLATTACH_KEYSTONE_PORT      port (default 5000)
#   VOLATTACH_KEYSTONE_VERSION   keystone release to install (default 30.0.0)
#   VOLATTACH_KEYSTONE_DIR       state directory (default .ci-state/keystone)
#   VOLATTACH_KEYSTONE_DB_URL    SQLAlchemy URL (default SQLite in the state dir)
#   VOLATTACH_KEYSTONE_ADMIN_PASSWORD    default "admin"
#   VOLATTACH_KEYSTONE_SERVICE_PASSWORD  default "volattach"
#   VOLATTACH_COMPUTE_PORT, VOLATTACH_VOLUME_PORT   catalog ports (8774, 8776)
#   VOLATTACH_CATALOG_NETWORK_URL  when set, a "network" endpoint at this URL
#                                  (the tempest job's network stand-in)
#   VOLATTACH_CATALOG_IMAGE_URL    likewise an "image" endpoint
#
# Stop it with: tools/start-keystone.sh --stop
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
PORT=${VOLATTACH_KEYSTONE_PORT:-5000}
VERSION=${VOLATTACH_KEYSTONE_VERSION:-30.0.0}
STATE=${VOLATTACH_KEYSTONE_DIR:-$REPO/.ci-state/keystone}
VENV=$REPO/.ci-state/keystone-venv
ADMIN_PASSWORD=${VOLATTACH_KEYSTONE_ADMIN_PASSWORD:-admin}
SERVICE_PASSWORD=${VOLATTACH_KEYSTONE_SERVICE_PASSWORD:-volattach}
COMPUTE_PORT=${VOLATTACH_COMPUTE_PORT:-8774}
VOLUME_PORT=${VOLATTACH_VOLUME_PORT:-8776}
URL=http://127.0.0.1:$PORT
PIDFILE=$STATE/gunicorn.pid

log() { echo "start-keystone: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

running() {
    [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null
}

answers() {
    "$VENV/bin/python" - "$URL" <<'EOF' >/dev/null 2>&1
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1] + "/v3", timeout=3) as r:
    sys.exit(0 if r.status == 200 else 1)
EOF
}

if [ "${1:-}" = "--stop" ]; then
    if running; then
        pid=$(cat "$PIDFILE")
        kill "$pid"
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        log "stopped (pid $pid)"
    fi
    rm -f "$PIDFILE"
    exit 0
fi

# -- install ---------------------------------------------------------------------
if [ ! -x "$VENV/bin/keystone-manage" ] || [ ! -x "$VENV/bin/gunicorn" ]; then
    log "installing keystone $VERSION into $VENV"
    python3 -m venv "$VENV" >&2
    "$VENV/bin/pip" install -q --upgrade pip >&2 || true
    if ! "$VENV/bin/pip" install -q "keystone==$VERSION" gunicorn psycopg2-binary >&2; then
        log "keystone $VERSION does not install here; installing the newest that does"
        "$VENV/bin/pip" install -q keystone gunicorn psycopg2-binary >&2
    fi
fi
log "keystone $("$VENV/bin/pip" show keystone 2>/dev/null | sed -n 's/^Version: //p')"

mkdir -p "$STATE/fernet-keys" "$STATE/credential-keys"
DB_URL=${VOLATTACH_KEYSTONE_DB_URL:-sqlite:///$STATE/keystone.sqlite}
case "$DB_URL" in
    sqlite*) WORKERS=(--workers 1 --threads 1) ;;
    *) WORKERS=(--workers 2 --threads 4) ;;
esac
CONF=$STATE/keystone.conf
cat > "$CONF" <<EOF
[DEFAULT]
log_file = $STATE/keystone.log
[database]
connection = $DB_URL
[token]
provider = fernet
expiration = 7200
[fernet_tokens]
key_repository = $STATE/fernet-keys
[credential]
key_repository = $STATE/credential-keys
[cache]
enabled = false
[identity]
# a throw-away test Keystone: cheap bcrypt for tempest's many dynamic users
password_hash_rounds = 4
EOF

if running && answers; then
    log "already running at $URL"
else
    rm -f "$PIDFILE"
    KM=("$VENV/bin/keystone-manage" --config-file "$CONF")
    log "db_sync"
    "${KM[@]}" db_sync >&2
    "${KM[@]}" fernet_setup --keystone-user "$(id -un)" --keystone-group "$(id -gn)" >&2
    "${KM[@]}" credential_setup --keystone-user "$(id -un)" --keystone-group "$(id -gn)" >&2
    log "bootstrap"
    "${KM[@]}" bootstrap --bootstrap-password "$ADMIN_PASSWORD" \
        --bootstrap-username admin --bootstrap-project-name admin \
        --bootstrap-role-name admin --bootstrap-region-id RegionOne \
        --bootstrap-admin-url "$URL/v3" --bootstrap-internal-url "$URL/v3" \
        --bootstrap-public-url "$URL/v3" >&2
    # keystone parses sys.argv with oslo.config when its application loads,
    # and gunicorn's own arguments are no keystone options: load it through
    # a module that empties the argument list first.
    cat > "$STATE/keystone_wsgi.py" <<'PYEOF'
import sys
sys.argv = sys.argv[:1]
from keystone.wsgi.api import application  # noqa: E402,F401
PYEOF
    log "starting gunicorn on $URL"
    OS_KEYSTONE_CONFIG_FILES=$CONF "$VENV/bin/gunicorn" --daemon \
        "${WORKERS[@]}" --worker-class gthread --timeout 120 \
        --bind "127.0.0.1:$PORT" --pid "$PIDFILE" \
        --error-logfile "$STATE/gunicorn.log" --chdir "$STATE" \
        --pythonpath "$STATE" keystone_wsgi:application >&2
    for _ in $(seq 90); do answers && break; sleep 1; done
    answers || die "keystone does not answer at $URL (see $STATE/gunicorn.log, $STATE/keystone.log)"
fi

# -- catalog, roles and the service user (idempotent) ------------------------------
log "catalog: compute :$COMPUTE_PORT, volumev3 + block-storage :$VOLUME_PORT"
"$VENV/bin/python" - "$URL" "$ADMIN_PASSWORD" "$SERVICE_PASSWORD" \
    "$COMPUTE_PORT" "$VOLUME_PORT" "${VOLATTACH_CATALOG_NETWORK_URL:-}" \
    "${VOLATTACH_CATALOG_IMAGE_URL:-}" <<'EOF' >&2
import sys
import requests

(url, admin_password, service_password, compute_port, volume_port,
 network_url, image_url) = sys.argv[1:]
auth = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
    "name": "admin", "domain": {"id": "default"}, "password": admin_password}}},
    "scope": {"project": {"name": "admin", "domain": {"id": "default"}}}}}
r = requests.post(url + "/v3/auth/tokens", json=auth, timeout=30)
r.raise_for_status()
s = requests.Session()
s.headers["X-Auth-Token"] = r.headers["X-Subject-Token"]
v3 = url + "/v3"


def find(kind, **filters):
    r = s.get("%s/%s" % (v3, kind), params=filters, timeout=30)
    r.raise_for_status()
    return r.json()[kind]


def ensure(kind, one, body, **filters):
    found = find(kind, **filters)
    if found:
        return found[0]
    r = s.post("%s/%s" % (v3, kind), json={one: body}, timeout=30)
    r.raise_for_status()
    return r.json()[one]


roles = {name: ensure("roles", "role", {"name": name}, name=name)
         for name in ("admin", "member", "reader", "service")}
service_project = ensure("projects", "project",
                         {"name": "service", "domain_id": "default"},
                         name="service")
user = ensure("users", "user", {"name": "volattach", "domain_id": "default",
                                "password": service_password},
              name="volattach")
s.patch("%s/users/%s" % (v3, user["id"]),
        json={"user": {"password": service_password}},
        timeout=30).raise_for_status()
for role in ("service", "admin"):
    s.put("%s/projects/%s/users/%s/roles/%s" % (
        v3, service_project["id"], user["id"], roles[role]["id"]),
        timeout=30).raise_for_status()

CATALOG = [
    ("nova", "compute", "http://127.0.0.1:%s/v2.1" % compute_port),
    ("cinderv3", "volumev3",
     "http://127.0.0.1:%s/v3/%%(project_id)s" % volume_port),
    ("cinder", "block-storage",
     "http://127.0.0.1:%s/v3/%%(project_id)s" % volume_port),
]
if network_url:
    CATALOG.append(("network-standin", "network", network_url))
if image_url:
    CATALOG.append(("image-standin", "image", image_url))
for name, stype, endpoint in CATALOG:
    service = ensure("services", "service", {"name": name, "type": stype},
                     type=stype)
    for interface in ("public", "internal", "admin"):
        existing = find("endpoints", service_id=service["id"],
                        interface=interface)
        if existing and existing[0]["url"] == endpoint:
            continue
        for e in existing:
            s.delete("%s/endpoints/%s" % (v3, e["id"]),
                     timeout=30).raise_for_status()
        s.post(v3 + "/endpoints", json={"endpoint": {
            "service_id": service["id"], "interface": interface,
            "region_id": "RegionOne", "url": endpoint}},
            timeout=30).raise_for_status()
print("catalog ready", file=sys.stderr)
EOF

echo "$URL"
