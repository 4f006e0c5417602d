#!/usr/bin/env bash
# The whole test suite, on a fresh machine or an old one: sets everything up (system packages
# for the headless renderer, .venv, ecs_spatial with its test and docs extras: the docs'
# pages are tested too, and scripts/docs.sh then shares the environment), then runs pytest.
# Extra arguments go to pytest:  scripts/test.sh -k quadtree -x
set -euo pipefail
EXTRAS=test,docs source "$(dirname "$0")/bootstrap.sh"
exec "$PY" -m pytest "$@"
