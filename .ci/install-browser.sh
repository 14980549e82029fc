#!/usr/bin/env bash
# What the one end-to-end browser test (tests/test_web_browser.py) needs: Debian's chromium and Playwright's
# Python package. Playwright drives the system chromium through `executable_path`; never run
# `playwright install` (it downloads browsers, and CI has no network for that).
# Usage: .ci/install-browser.sh   (PYTHON=path/to/python to pick the interpreter; default .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-.venv/bin/python}"
[ -x "$PY" ] || PY=python3

if ! command -v chromium >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
chromium --version 2>/dev/null || true

"$PY" -m pip install -q -e ".[ui-test]"
"$PY" -c "import playwright; print('playwright', __import__('importlib.metadata').metadata.version('playwright'))"
