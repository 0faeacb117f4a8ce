#!/usr/bin/env bash
# Install bloxcam as a systemd service on Raspberry Pi OS (Bookworm or later).
#
#   sudo systemd/install.sh            # table service: bloxcam.service
#   sudo systemd/install.sh --hub      # also the room hub: bloxcam-hub.service
#   systemd/install.sh --dry-run       # print what would be done, change nothing
#
# Safe to run again (after `git pull`, say): it creates only what is missing, never
# overwrites /etc/bloxcam/table.toml, reinstalls the package into the venv and restarts
# the services that were running so they pick up the new code.
set -euo pipefail
# The venv and units must be readable by the service user whatever root's umask is.
umask 022

usage() {
    cat <<'EOF'
Usage: install.sh [--dry-run] [--hub] [--iio] [--no-apt]

  -n, --dry-run  print every step that would change the system, change nothing
      --hub      also install and start bloxcam-hub.service (needs /etc/bloxcam/hub.toml)
      --iio      also install the drop-in for an accelerometer on the kernel's IIO driver
      --no-apt   do not install Debian packages (python3-venv, python3-picamera2, ...)
  -h, --help     this text
EOF
}

DRY_RUN=0
WITH_HUB=0
WITH_IIO=0
WITH_APT=1
while [ $# -gt 0 ]; do
    case "$1" in
        -n | --dry-run) DRY_RUN=1 ;;
        --hub) WITH_HUB=1 ;;
        --iio) WITH_IIO=1 ;;
        --no-apt) WITH_APT=0 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "install.sh: unknown option: $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done

SRC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
UNIT_SRC="$SRC_DIR/systemd"
PREFIX=/opt/bloxcam
VENV="$PREFIX/.venv"          # ExecStart= in the units runs $VENV/bin/bloxcam
CONF_DIR=/etc/bloxcam
UNIT_DIR=/etc/systemd/system
# Raspberry Pi OS's own Python: the one python3-picamera2 and libcamera are built for.
PYTHON=/usr/bin/python3
SERVICE_USER=bloxcam
SERVICE_GROUPS=(video i2c gpio)
# python3-picamera2 brings libcamera's Python bindings, which are not on PyPI: the venv
# sees them through --system-site-packages.
APT_PACKAGES=(python3-venv python3-pip python3-picamera2)

step() { printf '==> %s\n' "$*"; }
note() { printf '    %s\n' "$*"; }
# Every command that changes the system goes through run: printed, and executed
# unless --dry-run. Read-only probes (id, getent, dpkg -s, cmp) run in both modes so
# the dry run shows what this machine would actually need.
run() {
    printf '+'
    printf ' %q' "$@"
    printf '\n'
    if [ "$DRY_RUN" -eq 0 ]; then
        "$@"
    fi
}

[ -f "$SRC_DIR/pyproject.toml" ] || { echo "install.sh: $SRC_DIR is not a bloxcam source tree" >&2; exit 1; }
if [ "$DRY_RUN" -eq 0 ] && [ "$(id -u)" -ne 0 ]; then
    echo "install.sh: run as root (sudo $0), or with --dry-run to see the steps" >&2
    exit 1
fi
[ "$DRY_RUN" -eq 1 ] && step "dry run: nothing will be changed"

# --- 1. Debian packages ---------------------------------------------------------------
step "Debian packages"
if [ "$WITH_APT" -eq 1 ]; then
    missing=()
    for p in "${APT_PACKAGES[@]}"; do
        dpkg -s "$p" >/dev/null 2>&1 && continue
        if [ "$p" = python3-picamera2 ] && ! apt-cache show "$p" >/dev/null 2>&1; then
            # Only Raspberry Pi's archive has it; plain Debian can still use opencv/replay.
            note "warning: $p is not available from apt here; the Pi camera source will not work"
            continue
        fi
        missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        run apt-get update
        run env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
    else
        note "nothing to install"
    fi
else
    note "skipped (--no-apt)"
fi

# --- 2. User and groups ---------------------------------------------------------------
step "user $SERVICE_USER and groups ${SERVICE_GROUPS[*]}"
for g in "${SERVICE_GROUPS[@]}"; do
    # Raspberry Pi OS has them all; elsewhere create them so the unit's
    # SupplementaryGroups= does not fail the start.
    getent group "$g" >/dev/null || run groupadd --system "$g"
done
if id -u "$SERVICE_USER" >/dev/null 2>&1; then
    note "user $SERVICE_USER exists"
else
    # A leftover group of the same name (user deleted by hand) becomes the primary group.
    if getent group "$SERVICE_USER" >/dev/null; then own_group=(--gid "$SERVICE_USER"); else own_group=(--user-group); fi
    run useradd --system "${own_group[@]}" --home-dir "/var/lib/$SERVICE_USER" --no-create-home \
        --shell /usr/sbin/nologin --comment "bloxcam referee" "$SERVICE_USER"
fi
current_groups=" $(id -nG "$SERVICE_USER" 2>/dev/null || true) "
for g in "${SERVICE_GROUPS[@]}"; do
    case "$current_groups" in
        *" $g "*) note "$SERVICE_USER is in $g" ;;
        *) run usermod --append --groups "$g" "$SERVICE_USER" ;;
    esac
done

# --- 3. Virtual environment -----------------------------------------------------------
step "virtual environment $VENV"
if [ -x "$VENV/bin/python" ]; then
    note "reusing $VENV"
else
    run install -d -m 0755 "$PREFIX"
    run "$PYTHON" -m venv --system-site-packages "$VENV"
fi
# apt's picamera2 stack (simplejpeg, ...) is compiled against the system NumPy, which
# the venv sees too; on Bookworm that is 1.x, and a NumPy 2 installed into the venv
# would shadow it and break importing picamera2. numpy 1.26 still satisfies bloxcam.
pip_extra=()
if [ -x "$PYTHON" ] && "$PYTHON" -c 'import sys, numpy; sys.exit(int(numpy.__version__.split(".")[0]) >= 2)' 2>/dev/null; then
    pip_extra+=("numpy<2")
fi
# --upgrade so a re-run installs the current source even if the version did not change.
run "$VENV/bin/pip" install --upgrade "${SRC_DIR}[pi]" "${pip_extra[@]}"
if [ "$DRY_RUN" -eq 0 ]; then
    "$VENV/bin/bloxcam" --help >/dev/null || { echo "install.sh: $VENV/bin/bloxcam does not run" >&2; exit 1; }
    if ! "$VENV/bin/python" -c 'import picamera2' 2>/dev/null; then
        note "warning: picamera2 does not import in $VENV; [source] kind = \"picamera2\" will fail"
        note "         (on Raspberry Pi OS: apt-get install python3-picamera2, then run this again)"
    fi
fi

# --- 4. Configuration -----------------------------------------------------------------
step "configuration $CONF_DIR"
run install -d -m 0755 "$CONF_DIR"
if [ -e "$CONF_DIR/table.toml" ]; then
    note "keeping existing $CONF_DIR/table.toml"
else
    run install -m 0640 -o root -g "$SERVICE_USER" "$UNIT_SRC/table.toml" "$CONF_DIR/table.toml"
    if [ "$DRY_RUN" -eq 0 ]; then
        pin=$(printf '%06d' "$(( $(od -An -N4 -tu4 /dev/urandom | tr -d ' ') % 1000000 ))")
    else
        pin=NNNNNN
    fi
    run sed -i "s/^pin = \"CHANGEME\"/pin = \"$pin\"/" "$CONF_DIR/table.toml"
    note "table PIN: $pin (change it in $CONF_DIR/table.toml)"
fi
if [ "$WITH_HUB" -eq 1 ] && [ ! -e "$CONF_DIR/hub.toml" ]; then
    note "warning: $CONF_DIR/hub.toml does not exist; bloxcam-hub will fail until it does"
fi

# --- 5. Units -------------------------------------------------------------------------
step "systemd units in $UNIT_DIR"
units=(bloxcam.service)
[ "$WITH_HUB" -eq 1 ] && units+=(bloxcam-hub.service)
for u in "${units[@]}"; do
    if cmp -s "$UNIT_SRC/$u" "$UNIT_DIR/$u"; then
        note "$u unchanged"
    else
        run install -m 0644 "$UNIT_SRC/$u" "$UNIT_DIR/$u"
    fi
done
if [ "$WITH_IIO" -eq 1 ]; then
    dropin="$UNIT_DIR/bloxcam.service.d/iio-accelerometer.conf"
    if cmp -s "$UNIT_SRC/iio-accelerometer.conf" "$dropin"; then
        note "IIO drop-in unchanged"
    else
        run install -d -m 0755 "$UNIT_DIR/bloxcam.service.d"
        run install -m 0644 "$UNIT_SRC/iio-accelerometer.conf" "$dropin"
    fi
fi
run systemctl daemon-reload

# --- 6. Enable and start --------------------------------------------------------------
step "enable and start"
for u in "${units[@]}"; do
    # A service that was already running gets restarted so it runs the code just installed.
    if systemctl is-active --quiet "$u" 2>/dev/null; then
        run systemctl enable "$u"
        run systemctl restart "$u"
    else
        run systemctl enable --now "$u"
    fi
done

step "done"
note "status:  systemctl status bloxcam    log: journalctl -u bloxcam -f"
note "page:    http://$HOSTNAME.local:8080/ (port: [table] port in $CONF_DIR/table.toml)"
