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

if ! command -v chromium >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO="sudo"
  if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" -eq 0 ] || [ -n "$SUDO" ]; }; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
  else
    echo "note: Debian's chromium is not installed; the browser test will be skipped (apt-get install chromium)"
  fi
fi
echo "ready: .venv/bin/python -m dashboard   (tests: .venv/bin/python -m pytest)"
