#!/usr/bin/env bash
# Sets up .venv from nothing, then referees the bundled recorded Blox game at its real pace:
# events are printed here and the status page is at http://127.0.0.1:8080/ (PIN 2468).
# Extra arguments go to `bloxcam serve` (e.g. --speed 10, --port 8081).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
mkdir -p out
exec .venv/bin/bloxcam serve --recording tests/fixtures/blox/game-3p --log out/table.sqlite --pin 2468 "$@"
