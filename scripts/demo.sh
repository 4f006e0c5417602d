#!/usr/bin/env bash
# The headline scene (examples/collisions.py), on a fresh machine or an old one: sets
# everything up, then opens its window. With no screen (no $DISPLAY or $WAYLAND_DISPLAY on
# Linux) it renders headless instead and saves the last frame to out/collisions.png.
# Extra arguments go to the scene:  scripts/demo.sh --boxes 4000
set -euo pipefail
EXTRAS=examples source "$(dirname "$0")/bootstrap.sh"
if [[ "$(uname)" == Linux && -z "${DISPLAY:-}" && -z "${WAYLAND_DISPLAY:-}" ]]; then
    mkdir -p out
    echo "demo: no screen here; rendering 600 frames headless to out/collisions.png"
    exec "$PY" examples/collisions.py --headless --frames 600 --screenshot out/collisions.png "$@"
fi
exec "$PY" examples/collisions.py "$@"
