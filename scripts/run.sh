#!/usr/bin/env bash
# Sets up .venv from nothing and runs the referee on the bundled recorded Blox game.
# Extra arguments go to `bloxcam replay` (e.g. --json).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/bloxcam replay tests/fixtures/blox/game-3p "$@"
