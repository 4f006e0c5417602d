#!/usr/bin/env bash
# Shared set-up for scripts/test.sh and scripts/demo.sh; source it with the extras wanted:
#     EXTRAS=test source scripts/bootstrap.sh
#
# On a fresh machine with only Python 3.10+ and pip (and root for apt), it:
#   1. installs the system libraries the headless pyglet renderer needs, and the compiler and
#      Python headers that build the C core where they are missing (scripts/setup-system.sh;
#      without them the package is pure Python, and works the same);
#   2. creates the virtual environment .venv with $PYTHON (default python3), or reuses it;
#   3. installs ecs_spatial into it (editable, building its optional C core) with the extras
#      asked for, only when pyproject.toml, setup.py, a C source, the extras or the toolchain's
#      presence changed since the last time, so reruns take a second;
#   4. says in one line when the compiled core is not in use, and why.
# Afterwards $PY is the environment's python.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
EXTRAS="${EXTRAS:-test}"
PYTHON="${PYTHON:-python3}"

# Its report also tells whether the core can be built: a compiler installed since the last
# run is a reason to reinstall (below).
system_report=$(PYTHON="$PYTHON" "$ROOT/scripts/setup-system.sh") || {
    printf '%s\n' "$system_report"
    exit 1
}
printf '%s\n' "$system_report"
toolchain=absent
if [[ "$system_report" == *"the compiled core will be built"* ]]; then
    toolchain=present
fi

if [[ ! -x .venv/bin/python ]]; then
    if ! "$PYTHON" -m venv .venv 2>/dev/null; then
        # Debian's system Python ships venv separately (python3-venv).
        rm -rf .venv
        if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
            export DEBIAN_FRONTEND=noninteractive
            apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-venv
            "$PYTHON" -m venv .venv
        else
            echo "bootstrap: '$PYTHON -m venv' failed; install your Python's venv module" \
                "(Debian/Ubuntu: sudo apt-get install python3-venv)." >&2
            exit 1
        fi
    fi
fi
PY="$ROOT/.venv/bin/python"

stamp=".venv/.ecs_spatial-installed"
# The compiled core is built at install time: a changed C source or setup.py reinstalls too.
want="$(cat pyproject.toml setup.py ecs_spatial/*.c 2>/dev/null | sha256sum
    echo "extras=$EXTRAS toolchain=$toolchain")"
if [[ ! -f "$stamp" ]] || [[ "$(cat "$stamp")" != "$want" ]]; then
    "$PY" -m pip install --quiet --upgrade pip
    "$PY" -m pip install --quiet -e ".[$EXTRAS]"
    printf '%s' "$want" > "$stamp"
fi
# pip --quiet hides the build's own notice; this is the one line a user sees (0.1 s).
core_reason=$(env -u ECS_SPATIAL_PURE "$PY" -c 'from ecs_spatial import index; print(index.REASON)')
if [[ -n "$core_reason" ]]; then
    echo "bootstrap: the compiled core is not in use ($core_reason);" \
        "the pure-Python index runs instead, with the same behaviour."
fi
export PY
