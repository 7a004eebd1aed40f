#!/usr/bin/env bash
# Install a real OpenStack Cinder 29.0.0 into a virtualenv of its own, for
# the conformance tests (tests/conformance), the guest tier's real-Cinder
# RBD test and benchmarks/cinder_latency.py.
#
#   tools/real-cinder/setup.sh [VENV]      default: .ci-state/cinder-venv
#
# Cinder comes from PyPI at test time: nothing of it is in this repository,
# and it never shares volattach's .venv (its pins differ).  About 30-60 s and
# 330 MB the first time; afterwards a stamp file in the venv makes this a
# no-op (delete VENV to reinstall).  Prints the venv's python on the last
# line.  Exit status 3: the package index could not be reached.
#
# Cinder's RBD driver needs Ceph's Python bindings, `rados` and `rbd`.  They
# are not on PyPI: Debian's python3-rados and python3-rbd (installed with
# Ceph by tools/start-ceph.sh) are extension modules built for Debian's own
# /usr/bin/python3.  So when that interpreter imports them, the venv is made
# from it (PYTHON overrides) and the two modules are linked into the venv's
# site-packages; its other Debian packages stay out of the venv.  Without
# them Cinder still runs its fake backend (run_cinder.py --backend fake).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
VENV=${1:-${VOLATTACH_CINDER_VENV:-$REPO/.ci-state/cinder-venv}}
DEBIAN_PYTHON=/usr/bin/python3
if [ -z "${PYTHON:-}" ]; then
    if [ -x "$DEBIAN_PYTHON" ] \
            && "$DEBIAN_PYTHON" -c "import rados, rbd, ensurepip" 2>/dev/null; then
        PYTHON=$DEBIAN_PYTHON
    else
        # no python3-venv: another python3, into which link_ceph_bindings
        # still links Debian's modules when its ABI is the same (3.11)
        PYTHON=python3
    fi
fi
REQUIREMENTS=(cinder==29.0.0 python-cinderclient fixtures)
STAMP="$VENV/.volattach-real-cinder-stamp"
WANT="${REQUIREMENTS[*]}"

log() { echo "real-cinder/setup.sh: $*" >&2; }

# Link the rados and rbd modules of PYTHON (else of Debian's python3) into
# the venv's site-packages, kept only when the venv's python imports them.
link_ceph_bindings() {
    "$VENV/bin/python" -c "import rados, rbd" 2>/dev/null && return 0
    local src=$PYTHON
    "$src" -c "import rados, rbd" 2>/dev/null || src=$DEBIAN_PYTHON
    [ -x "$src" ] && "$src" -c "import rados, rbd" 2>/dev/null || return 0
    local site mod file
    site=$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    for mod in rados rbd; do
        file=$("$src" -c "import $mod; print($mod.__file__)")
        ln -sf "$file" "$site/$(basename "$file")"
    done
    if "$VENV/bin/python" -c "import rados, rbd" 2>/dev/null; then
        log "linked Ceph's rados and rbd bindings of $src into $VENV"
    else
        rm -f "$site"/rados.*.so "$site"/rbd.*.so
        log "WARNING: $VENV cannot import the rados/rbd bindings of $src (a python of another ABI?): Cinder's RBD driver will not load"
    fi
}

# One installer at a time per venv (parallel test runs share it).
mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
if command -v flock >/dev/null 2>&1; then
    flock -w 900 9 || { log "ERROR: $VENV.lock held for 900 s"; exit 1; }
fi

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] \
        && [ -x "$VENV/bin/python" ] \
        && "$VENV/bin/python" -c "import cinder" 2>/dev/null; then
    link_ceph_bindings
    log "already installed in $VENV"
    echo "$VENV/bin/python"
    exit 0
fi

if [ ! -x "$VENV/bin/python" ]; then
    log "creating $VENV"
    "$PYTHON" -m venv "$VENV" || {
        log "ERROR: '$PYTHON -m venv' failed (on Debian/Ubuntu: apt-get install python3-venv)"
        exit 1
    }
fi

log "installing ${WANT} into $VENV"
LOG_FILE="$VENV/pip-install.log"
set +e
# --no-compile: byte-compiling all of Cinder took half of the install's CPU
# (42 s of 3m42s vs 22 s of 1m50s, measured on a loaded machine); Cinder
# compiles the modules it imports on its first start instead
"$VENV/bin/python" -m pip install --disable-pip-version-check -q --no-compile \
    "${REQUIREMENTS[@]}" >"$LOG_FILE" 2>&1
rc=$?
set -e
if [ "$rc" != 0 ]; then
    tail -n 30 "$LOG_FILE" >&2
    if grep -qiE "NewConnectionError|Failed to establish a new connection|Temporary failure in name resolution|Network is unreachable|No matching distribution found|Could not find a version that satisfies|ConnectTimeout|ReadTimeout|ProxyError|SSLError" "$LOG_FILE"; then
        log "ERROR: the package index is unreachable (see $LOG_FILE)"
        exit 3
    fi
    log "ERROR: pip install failed with status $rc (see $LOG_FILE)"
    exit 1
fi
link_ceph_bindings
echo "$WANT" >"$STAMP"
log "installed in $VENV"
echo "$VENV/bin/python"
