#!/usr/bin/env bash
# tempest's own tests against volattach-all under a real Keystone.
#
#   tools/run-tempest.sh [SELECTION...]     (default: every selection)
#
# 1. Keystone (tools/start-keystone.sh) with the compute, volumev3 and
#    block-storage endpoints and volattach's service user.
# 2. the network and image stand-ins (tests/tempest/standins.py, see
#    tests/tempest/README.md) and volattach-all from tests/tempest/volattach.conf.in: keystone auth on the
#    compute API and on the volume service, two computes, SQLite, state in
#    .ci-state/tempest-run/ (fresh every run).
# 3. tempest $TEMPEST_VERSION in its own virtualenv (.ci-state/tempest-venv),
#    a workspace in .ci-state/tempest-work configured from
#    tests/tempest/tempest.conf.in (dynamic credentials), and one
#    `tempest run` per selection (tests/tempest/selections), minus the
#    tests of tests/tempest/exclusions.txt.
# Prints passed / failed / skipped / excluded per selection and the job's
# duration; exits non-zero when a test failed or a selection ran nothing.
#
# Environment:
#   VOLATTACH_TEMPEST_VERSION       tempest release (default 47.0.0)
#   VOLATTACH_TEMPEST_CONCURRENCY   tempest workers (default 2)
#   VOLATTACH_COMPUTE_PORT, VOLATTACH_VOLUME_PORT   (default 8774, 8776)
#   VOLATTACH_KEYSTONE_PORT         (default 5000)
#   VOLATTACH_TEMPEST_KEEP=1        leave Keystone running afterwards
set -euo pipefail

START=$(date +%s)
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
HERE=$REPO/tests/tempest
TEMPEST_VERSION=${VOLATTACH_TEMPEST_VERSION:-47.0.0}
CONCURRENCY=${VOLATTACH_TEMPEST_CONCURRENCY:-2}
export VOLATTACH_COMPUTE_PORT=${VOLATTACH_COMPUTE_PORT:-8774}
export VOLATTACH_VOLUME_PORT=${VOLATTACH_VOLUME_PORT:-8776}
ADMIN_PASSWORD=${VOLATTACH_KEYSTONE_ADMIN_PASSWORD:-admin}
SERVICE_PASSWORD=${VOLATTACH_KEYSTONE_SERVICE_PASSWORD:-volattach}
VENV=$REPO/.venv
TVENV=$REPO/.ci-state/tempest-venv
STATE=$REPO/.ci-state/tempest-run
WORK=$REPO/.ci-state/tempest-work

log() { echo "run-tempest: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# -- install ---------------------------------------------------------------------
if [ ! -x "$VENV/bin/volattach-all" ]; then
    log "installing volattach into $VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check -e "$REPO"
fi
if [ ! -x "$TVENV/bin/tempest" ] || \
   [ "$("$TVENV/bin/pip" show tempest 2>/dev/null | sed -n 's/^Version: //p')" != "$TEMPEST_VERSION" ]; then
    log "installing tempest $TEMPEST_VERSION into $TVENV"
    python3 -m venv "$TVENV"
    "$TVENV/bin/pip" install -q --disable-pip-version-check "tempest==$TEMPEST_VERSION" \
        || "$TVENV/bin/pip" install -q --disable-pip-version-check tempest
fi

# -- Keystone, the network stand-in and volattach-all -------------------------------
NETWORK_PORT=${VOLATTACH_NETWORK_STANDIN_PORT:-9696}
IMAGE_PORT=${VOLATTACH_IMAGE_STANDIN_PORT:-9292}
export VOLATTACH_CATALOG_NETWORK_URL=http://127.0.0.1:$NETWORK_PORT/
export VOLATTACH_CATALOG_IMAGE_URL=http://127.0.0.1:$IMAGE_PORT/
# the images of the fake driver, tempest's image_ref and image_ref_alt
IMAGE_REF=155d900f-4e14-4e4c-a73d-069cbf4541e6
IMAGE_REF_ALT=2c8d8b3e-3b1b-4e5f-9b4f-5bd1c0de0a11
# a Keystone that was already running (scripts/test starts one for Glance
# before its streams) is left running afterwards
KEYSTONE_WAS_RUNNING=0
if curl -sf -o /dev/null "http://127.0.0.1:${VOLATTACH_KEYSTONE_PORT:-5000}/v3"; then
    KEYSTONE_WAS_RUNNING=1
fi
KEYSTONE_URL=$("$REPO/tools/start-keystone.sh" | tail -n 1)
log "keystone at $KEYSTONE_URL"

render() {  # render TEMPLATE OUT: replace @NAME@ placeholders
    sed -e "s|@STATE@|$STATE|g" -e "s|@WORKSPACE@|$WORK|g" \
        -e "s|@KEYSTONE_URL@|$KEYSTONE_URL|g" \
        -e "s|@COMPUTE_PORT@|$VOLATTACH_COMPUTE_PORT|g" \
        -e "s|@VOLUME_PORT@|$VOLATTACH_VOLUME_PORT|g" \
        -e "s|@ADMIN_PASSWORD@|$ADMIN_PASSWORD|g" \
        -e "s|@IMAGE_REF@|$IMAGE_REF|g" -e "s|@IMAGE_REF_ALT@|$IMAGE_REF_ALT|g" \
        -e "s|@SERVICE_PASSWORD@|$SERVICE_PASSWORD|g" "$1" > "$2"
}

rm -rf "$STATE"
mkdir -p "$STATE"
render "$HERE/volattach.conf.in" "$STATE/volattach.conf"
ALL_PID=
NET_PID=
cleanup() {
    if [ -n "$NET_PID" ]; then kill "$NET_PID" 2>/dev/null || true; fi
    if [ -n "$ALL_PID" ] && kill -0 "$ALL_PID" 2>/dev/null; then
        kill "$ALL_PID"
        for _ in $(seq 50); do kill -0 "$ALL_PID" 2>/dev/null || break; sleep 0.2; done
        kill -9 "$ALL_PID" 2>/dev/null || true
    fi
    if [ "${VOLATTACH_TEMPEST_KEEP:-0}" != 1 ] && [ "$KEYSTONE_WAS_RUNNING" != 1 ]; then
        "$REPO/tools/start-keystone.sh" --stop || true
    fi
}
trap cleanup EXIT

answers() {  # answers URL: any HTTP answer at all
    "$VENV/bin/python" - "$1" <<'EOF' >/dev/null 2>&1
import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(sys.argv[1], timeout=2)
except urllib.error.HTTPError:
    pass
EOF
}
for port in "$VOLATTACH_COMPUTE_PORT" "$VOLATTACH_VOLUME_PORT" "$NETWORK_PORT" "$IMAGE_PORT"; do
    if answers "http://127.0.0.1:$port/"; then
        die "port $port is taken by another server: set VOLATTACH_COMPUTE_PORT / VOLATTACH_VOLUME_PORT"
    fi
done
"$VENV/bin/python" "$HERE/standins.py" "$NETWORK_PORT" "$IMAGE_PORT" \
    "$IMAGE_REF" "$IMAGE_REF_ALT" 2> "$STATE/standins.log" &
NET_PID=$!
log "starting volattach-all (log: $STATE/volattach.log)"
"$VENV/bin/volattach-all" --config-file "$STATE/volattach.conf" \
    > "$STATE/volattach-all.out" 2>&1 &
ALL_PID=$!
for _ in $(seq 60); do
    if answers "http://127.0.0.1:$VOLATTACH_COMPUTE_PORT/" && \
       answers "http://127.0.0.1:$VOLATTACH_VOLUME_PORT/" && \
       answers "http://127.0.0.1:$NETWORK_PORT/" && \
       answers "http://127.0.0.1:$IMAGE_PORT/"; then break; fi
    kill -0 "$ALL_PID" 2>/dev/null || { tail -n 30 "$STATE/volattach-all.out" >&2; die "volattach-all exited"; }
    sleep 1
done
answers "http://127.0.0.1:$VOLATTACH_COMPUTE_PORT/" || die "volattach-all does not answer"
# what devstack creates for tempest: the multiattach volume type
"$VENV/bin/python" "$HERE/prepare_cloud.py" "$KEYSTONE_URL" "$ADMIN_PASSWORD" \
    || die "could not create the multiattach volume type"

# -- tempest ---------------------------------------------------------------------
if [ ! -d "$WORK/etc" ]; then
    rm -rf "$WORK"
    # tempest registers workspaces by name in ~/.tempest/workspace.yaml: a
    # workspace of this name left by another checkout would refuse the init.
    "$TVENV/bin/tempest" workspace remove --name "$(basename "$WORK")" \
        >/dev/null 2>&1 || true
    (cd "$REPO/.ci-state" && "$TVENV/bin/tempest" init "$WORK" >&2)
fi
mkdir -p "$WORK/locks"
render "$HERE/tempest.conf.in" "$WORK/etc/tempest.conf"
EXCLUDE=$STATE/exclude-regexes.txt
sed -e 's/[[:space:]]*#.*$//' -e '/^[[:space:]]*$/d' "$HERE/exclusions.txt" > "$EXCLUDE"

SUMMARY=$STATE/summary.txt
: > "$SUMMARY"
FAILED=0
run_selection() {  # run_selection NAME REGEX
    local name=$1 regex=$2 out=$STATE/tempest-$1.out listed excluded
    log "selection $name: $regex"
    listed=$STATE/list-$name.txt
    (cd "$WORK" && "$TVENV/bin/tempest" run --list-tests --regex "$regex") \
        2>/dev/null | grep '^tempest\.' > "$listed" || true
    excluded=$("$VENV/bin/python" - "$listed" "$EXCLUDE" <<'EOF'
import re, sys
tests = [line.strip() for line in open(sys.argv[1]) if line.strip()]
regexes = [re.compile(line.strip()) for line in open(sys.argv[2]) if line.strip()]
print(sum(1 for t in tests if any(r.search(t) for r in regexes)))
EOF
)
    set +e
    (cd "$WORK" && "$TVENV/bin/tempest" run --regex "$regex" \
        --exclude-list "$EXCLUDE" --concurrency "$CONCURRENCY") > "$out" 2>&1
    local rc=$?
    set -e
    local passed failed skipped ran
    passed=$(sed -n 's/^ - Passed: \([0-9]*\).*/\1/p' "$out" | tail -n 1)
    failed=$(sed -n 's/^ - Failed: \([0-9]*\).*/\1/p' "$out" | tail -n 1)
    skipped=$(sed -n 's/^ - Skipped: \([0-9]*\).*/\1/p' "$out" | tail -n 1)
    passed=${passed:-0}; failed=${failed:-0}; skipped=${skipped:-0}
    ran=$((passed + failed + skipped))
    grep -E '^\{[0-9]+\} .*(FAILED|\.\.\. FAILED)' "$out" >&2 || true
    if [ "$rc" != 0 ] || [ "$failed" != 0 ] || [ "$ran" = 0 ]; then
        FAILED=1
        [ "$failed" = 0 ] && failed="0 (tempest exit $rc, ran $ran)"
        tail -n 40 "$out" >&2
    fi
    printf '%-16s passed %4s  failed %4s  skipped %4s  excluded %4s  (of %s listed)\n' \
        "$name" "$passed" "$failed" "$skipped" "$excluded" "$(wc -l < "$listed")" | tee -a "$SUMMARY"
}

declare -A SELECTIONS
ORDER=()
while read -r name regex; do
    case "$name" in ''|'#'*) continue ;; esac
    SELECTIONS[$name]=$regex
    ORDER+=("$name")
done < "$HERE/selections"
if [ $# -gt 0 ]; then ORDER=("$@"); fi
for name in "${ORDER[@]}"; do
    [ -n "${SELECTIONS[$name]:-}" ] || die "unknown selection $name (see tests/tempest/selections)"
    run_selection "$name" "${SELECTIONS[$name]}"
done

echo "== tempest $("$TVENV/bin/pip" show tempest | sed -n 's/^Version: //p') against volattach-all, keystone $("$REPO/.ci-state/keystone-venv/bin/pip" show keystone | sed -n 's/^Version: //p')"
cat "$SUMMARY"
echo "job took $(( $(date +%s) - START )) s"
if [ "$FAILED" != 0 ]; then
    log "FAILED (outputs: $STATE/tempest-*.out, tempest log: $WORK/tempest.log, volattach log: $STATE/volattach.log)"
    exit 1
fi
