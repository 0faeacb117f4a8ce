#!/usr/bin/env bash
# System packages the tests need, from Debian. Installs only what is missing, and only
# when running as root (CI, a fresh Pi); otherwise says what to install.
set -euo pipefail
# chromium: the status page's browser tests (driven by Playwright)
# mosquitto: the MQTT broker the many-tables tests (tests/test_mqtt.py) start on a free port
packages=(chromium mosquitto)
missing=()
for p in "${packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "missing Debian packages: ${missing[*]} (run: sudo apt-get install ${missing[*]})" >&2
    exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
