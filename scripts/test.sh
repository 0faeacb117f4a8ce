#!/usr/bin/env bash
# Sets up everything the test suite needs and runs it. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-system.sh
scripts/setup.sh test
exec .venv/bin/python -m pytest "$@"
