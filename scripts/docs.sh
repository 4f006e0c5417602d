#!/usr/bin/env bash
# The documentation site, on a fresh machine or an old one: sets everything up (.venv,
# ecs_spatial with its test and docs extras), then builds the site from mkdocs.yml and docs/
# into out/site with warnings as errors, as CI does. Open out/site/index.html to read it.
# Extra arguments go to mkdocs build:  scripts/docs.sh --verbose
# (tests/test_docs.py, in the suite, runs every Python block of the pages.)
set -euo pipefail
# test,docs: the same .venv as scripts/test.sh, so that tests/test_docs.py runs there too.
EXTRAS=test,docs source "$(dirname "$0")/bootstrap.sh"
export NO_MKDOCS_2_WARNING=1  # mkdocs-material's banner about MkDocs 2: not a build warning
exec "$PY" -m mkdocs build --strict "$@"
