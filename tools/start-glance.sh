#!/usr/bin/env bash
# Start a real Glance on loopback behind the Keystone of
# tools/start-keystone.sh, unless ours is already running, and upload the
# guest test image.
#
# Glance ($VOLATTACH_GLANCE_VERSION, default 33.0.0; the newest release that
# installs when that one does not) is installed from PyPI into its own
# virtualenv .ci-state/glance-venv and served by gunicorn (glance.wsgi.api,
# the WSGI entry point Glance ships; one worker, four threads) on a SQLite
# database with the `file` store.  Keystone is started (or found running)
# first: Glance validates tokens with keystonemiddleware as the service user
# "glance" (project "service", role service + admin), and the catalog gets
# an "image" service (name glance) at Glance's URL, public/internal/admin,
# region RegionOne, replacing any other image endpoint (the tempest job's
# stand-in).
#
# Uploaded (idempotent, every run): the image of tools/build-test-image.sh
# found in $VOLATTACH_TEST_IMAGE_DIR (default .ci-state/images), as a public
# qcow2 image named "volattach-test-<generation>" in the admin project.
# Glance computes its os_hash_value (sha512) on upload.
#
# The last line of stdout is the image's id; the line before it Glance's URL
# (progress goes to stderr):
#     out=$(tools/start-glance.sh); image=$(tail -n1 <<<"$out")
#
# Environment:
#   VOLATTACH_GLANCE_PORT        port (default 9292)
#   VOLATTACH_GLANCE_VERSION     glance release to install (default 33.0.0)
#   VOLATTACH_GLANCE_DIR         state directory (default .ci-state/glance)
#   VOLATTACH_KEYSTONE_PORT      Keystone's port (default 5000)
#   VOLATTACH_KEYSTONE_ADMIN_PASSWORD   default "admin"
#   VOLATTACH_GLANCE_SERVICE_PASSWORD   the "glance" user's (default "glance")
#   VOLATTACH_TEST_IMAGE_DIR     where build-test-image.sh put the image
#   VOLATTACH_GLANCE_NO_UPLOAD=1 start Glance only
#
# Stop it with: tools/start-glance.sh --stop
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
PORT=${VOLATTACH_GLANCE_PORT:-9292}
VERSION=${VOLATTACH_GLANCE_VERSION:-33.0.0}
STATE=${VOLATTACH_GLANCE_DIR:-$REPO/.ci-state/glance}
VENV=$REPO/.ci-state/glance-venv
KEYSTONE_PORT=${VOLATTACH_KEYSTONE_PORT:-5000}
KEYSTONE_URL=http://127.0.0.1:$KEYSTONE_PORT
ADMIN_PASSWORD=${VOLATTACH_KEYSTONE_ADMIN_PASSWORD:-admin}
SERVICE_PASSWORD=${VOLATTACH_GLANCE_SERVICE_PASSWORD:-glance}
IMAGE_DIR=${VOLATTACH_TEST_IMAGE_DIR:-$REPO/.ci-state/images}
URL=http://127.0.0.1:$PORT
PIDFILE=$STATE/gunicorn.pid

log() { echo "start-glance: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

running() {
    [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null
}

answers() {
    python3 - "$URL" <<'EOF' >/dev/null 2>&1
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1] + "/healthcheck", timeout=3) as r:
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

# -- Keystone first: Glance validates tokens against it ----------------------------
"$REPO/tools/start-keystone.sh" >/dev/null

# -- install ---------------------------------------------------------------------
if [ ! -x "$VENV/bin/glance-manage" ] || [ ! -x "$VENV/bin/gunicorn" ]; then
    log "installing glance $VERSION into $VENV"
    python3 -m venv "$VENV" >&2
    if ! "$VENV/bin/pip" install -q "glance==$VERSION" gunicorn >&2; then
        log "glance $VERSION does not install here; installing the newest that does"
        "$VENV/bin/pip" install -q glance gunicorn >&2
    fi
fi
log "glance $("$VENV/bin/pip" show glance 2>/dev/null | sed -n 's/^Version: //p')"

# -- the service user and the catalog entry (idempotent) ----------------------------
"$VENV/bin/python" - "$KEYSTONE_URL" "$ADMIN_PASSWORD" "$SERVICE_PASSWORD" "$URL" \
    <<'EOF' >&2
import json, sys, urllib.request

keystone, admin_password, service_password, glance_url = sys.argv[1:]
v3 = keystone + "/v3"


def call(method, path, body=None, token=None):
    req = urllib.request.Request(
        v3 + path, method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json",
                 **({"X-Auth-Token": token} if token else {})})
    with urllib.request.urlopen(req, timeout=30) as r:
        raw = r.read()
        return r.headers, (json.loads(raw) if raw else None)


headers, _ = call("POST", "/auth/tokens", {"auth": {
    "identity": {"methods": ["password"], "password": {"user": {
        "name": "admin", "domain": {"id": "default"},
        "password": admin_password}}},
    "scope": {"project": {"name": "admin", "domain": {"id": "default"}}}}})
token = headers["X-Subject-Token"]


def find(kind, query):
    return call("GET", "/%s?%s" % (kind, query), token=token)[1][kind]


def ensure(kind, one, body, query):
    found = find(kind, query)
    if found:
        return found[0]
    return call("POST", "/" + kind, {one: body}, token=token)[1][one]


project = ensure("projects", "project",
                 {"name": "service", "domain_id": "default"}, "name=service")
user = ensure("users", "user", {"name": "glance", "domain_id": "default",
                                "password": service_password}, "name=glance")
call("PATCH", "/users/" + user["id"],
     {"user": {"password": service_password}}, token=token)
for name in ("service", "admin"):
    role = ensure("roles", "role", {"name": name}, "name=" + name)
    call("PUT", "/projects/%s/users/%s/roles/%s" % (
        project["id"], user["id"], role["id"]), token=token)
# one image service: drop any other (the tempest job's stand-in)
for service in find("services", "type=image"):
    if service["name"] != "glance":
        for e in find("endpoints", "service_id=" + service["id"]):
            call("DELETE", "/endpoints/" + e["id"], token=token)
        call("DELETE", "/services/" + service["id"], token=token)
service = ensure("services", "service", {"name": "glance", "type": "image"},
                 "type=image")
for interface in ("public", "internal", "admin"):
    existing = find("endpoints", "service_id=%s&interface=%s" % (
        service["id"], interface))
    if existing and existing[0]["url"] == glance_url:
        continue
    for e in existing:
        call("DELETE", "/endpoints/" + e["id"], token=token)
    call("POST", "/endpoints", {"endpoint": {
        "service_id": service["id"], "interface": interface,
        "region_id": "RegionOne", "url": glance_url}}, token=token)
print("catalog: image -> " + glance_url, file=sys.stderr)
EOF

# -- configuration ------------------------------------------------------------------
mkdir -p "$STATE/etc" "$STATE/images" "$STATE/staging" "$STATE/tasks"
cp "$VENV/etc/glance/glance-api-paste.ini" "$STATE/etc/glance-api-paste.ini"
cat > "$STATE/etc/glance-api.conf" <<EOF
[DEFAULT]
log_file = $STATE/glance-api.log
enabled_backends = file:file
bind_host = 127.0.0.1
bind_port = $PORT
# image-import is not used: images are uploaded with PUT .../file
enabled_import_methods = []
[database]
connection = sqlite:///$STATE/glance.sqlite
[glance_store]
default_backend = file
[file]
filesystem_store_datadir = $STATE/images/
[os_glance_staging_store]
filesystem_store_datadir = $STATE/staging/
[os_glance_tasks_store]
filesystem_store_datadir = $STATE/tasks/
[paste_deploy]
flavor = keystone
config_file = $STATE/etc/glance-api-paste.ini
[keystone_authtoken]
www_authenticate_uri = $KEYSTONE_URL
auth_url = $KEYSTONE_URL
auth_type = password
project_domain_name = Default
user_domain_name = Default
project_name = service
username = glance
password = $SERVICE_PASSWORD
service_token_roles_required = true
[oslo_policy]
enforce_new_defaults = true
enforce_scope = false
EOF
# glance-manage and the WSGI application read their files from one folder
cp "$STATE/etc/glance-api.conf" "$STATE/etc/glance-manage.conf"
export OS_GLANCE_CONFIG_DIR=$STATE/etc

if running && answers; then
    log "already running at $URL"
else
    rm -f "$PIDFILE"
    log "db_sync"
    "$VENV/bin/glance-manage" --config-dir "$STATE/etc" db_sync >"$STATE/db_sync.log" 2>&1 \
        || die "glance-manage db_sync failed (see $STATE/db_sync.log)"
    log "starting gunicorn on $URL"
    "$VENV/bin/gunicorn" --daemon --workers 1 --threads 4 --worker-class gthread \
        --timeout 300 --bind "127.0.0.1:$PORT" --pid "$PIDFILE" \
        --error-logfile "$STATE/gunicorn.log" --chdir "$STATE" \
        glance.wsgi.api:application >&2
    for _ in $(seq 90); do answers && break; sleep 1; done
    answers || die "glance does not answer at $URL (see $STATE/gunicorn.log, $STATE/glance-api.log)"
fi
echo "$URL"

# -- the test image -----------------------------------------------------------------
# build-test-image.sh makes a direct-kernel-boot image (kernel, initramfs,
# cmdline).  Glance holds it as Nova's AMI-style triple: the kernel as an
# "aki" image, the initramfs as an "ari" image, and the machine image, a
# small qcow2 disk, whose kernel_id, ramdisk_id and os_command_line
# properties name the other two and the command line (the properties Nova's
# libvirt driver boots such an image by).
[ "${VOLATTACH_GLANCE_NO_UPLOAD:-0}" = 1 ] && exit 0
image_dir=$(ls -d "$IMAGE_DIR"/*/ 2>/dev/null | head -n 1 || true)
[ -n "$image_dir" ] && [ -f "$image_dir/kernel" ] \
    || die "no test image under $IMAGE_DIR (tools/build-test-image.sh $IMAGE_DIR)"
generation=$(cat "$image_dir/generation" 2>/dev/null || echo 0)
disk=$STATE/root-$generation.qcow2
[ -f "$disk" ] || qemu-img create -q -f qcow2 "$disk" 64M >&2
"$VENV/bin/python" "$REPO/tools/glance_upload.py" "$KEYSTONE_URL" "$ADMIN_PASSWORD" \
    "$URL" "$image_dir" "$disk" "volattach-test-$generation"
