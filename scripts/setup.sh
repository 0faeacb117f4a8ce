#!/usr/bin/env bash
# Creates .venv from nothing (only Python 3.11 needed) and installs bloxcam into it.
# Usage: scripts/setup.sh [EXTRAS], e.g. scripts/setup.sh test
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
extras=${1:-}
spec="."
[ -n "$extras" ] && spec=".[$extras]"
.venv/bin/python -m pip install --quiet --upgrade pip >/dev/null
.venv/bin/python -m pip install --quiet -e "$spec"
