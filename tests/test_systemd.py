"""The Raspberry Pi service integration: the sd_notify client, the unit files and install.sh.

The unit files are checked with ``systemd-analyze verify``, which exits 0 on unknown keys
and bad values, so every line it prints fails the test. It also requires ExecStart='s
program to exist; rather than editing the units, each is verified byte for byte inside a
temporary root (``--root=``) that holds the distribution's own units (for the targets we
depend on) and an executable at the unit's ExecStart path.
"""

from __future__ import annotations

import array
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from service import systemd as sd

REPO = Path(__file__).resolve().parents[1]
SYSTEMD_DIR = REPO / "systemd"
INSTALL_SH = SYSTEMD_DIR / "install.sh"
UNITS = ("bloxcam.service", "bloxcam-hub.service")
VENV_BLOXCAM = "/opt/bloxcam/.venv/bin/bloxcam"

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_analyze = pytest.mark.skipif(
    SYSTEMD_ANALYZE is None,
    reason="systemd-analyze is not installed (Debian package 'systemd'): unit files cannot be verified",
)


# --------------------------------------------------------------------------------------
# sd_notify against a real AF_UNIX datagram socket


def _receiver(address: str | bytes) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    # SO_PASSCRED: read the sender's pid the way systemd does for NotifyAccess=main.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    sock.bind(address)
    sock.settimeout(2.0)
    return sock


def _recv(sock: socket.socket) -> tuple[str, int | None]:
    data, ancdata, _flags, _addr = sock.recvmsg(4096, socket.CMSG_SPACE(3 * 4))
    pid = None
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            pid = array.array("i", payload[:12])[0]
    return data.decode(), pid


def _drain(sock: socket.socket) -> list[str]:
    got = []
    sock.setblocking(False)
    try:
        while True:
            got.append(sock.recv(4096).decode())
    except BlockingIOError:
        pass
    finally:
        sock.settimeout(2.0)
    return got


@pytest.fixture
def path_socket(monkeypatch):
    # A short directory: AF_UNIX paths are limited to 107 bytes, pytest's tmp_path may not be.
    folder = tempfile.mkdtemp(prefix="sdn", dir="/tmp")
    path = os.path.join(folder, "notify")
    sock = _receiver(path)
    monkeypatch.setenv("NOTIFY_SOCKET", path)
    yield sock
    sock.close()
    shutil.rmtree(folder)


@pytest.fixture
def abstract_socket(monkeypatch):
    name = f"bloxcam-test-{os.getpid()}-{time.monotonic_ns()}"
    sock = _receiver("\0" + name)
    monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
    yield sock
    sock.close()


def test_ready_sends_ready_and_one_line_status_from_this_pid(path_socket):
    assert sd.ready("watching table-1\ncamera ok") is True
    message, pid = _recv(path_socket)
    # A newline inside STATUS would start a bogus assignment; it is folded to a space.
    assert message == "READY=1\nSTATUS=watching table-1 camera ok"
    assert pid == os.getpid()


def test_status_stopping_extend_timeout_and_watchdog_ping(path_socket):
    assert sd.status("game 3, move 17")
    assert _recv(path_socket)[0] == "STATUS=game 3, move 17"
    assert sd.watchdog_ping()
    assert _recv(path_socket)[0] == "WATCHDOG=1"
    assert sd.extend_timeout(2.5)
    assert _recv(path_socket)[0] == "EXTEND_TIMEOUT_USEC=2500000"
    assert sd.stopping("saving the log")
    assert _recv(path_socket)[0] == "STOPPING=1\nSTATUS=saving the log"
    assert sd.notify("STATUS=a", "ERRNO=5")
    assert _recv(path_socket)[0] == "STATUS=a\nERRNO=5"


def test_abstract_namespace_socket(abstract_socket):
    assert sd.watchdog_ping() is True
    message, pid = _recv(abstract_socket)
    assert message == "WATCHDOG=1"
    assert pid == os.getpid()


def test_not_under_systemd_is_a_silent_no_op(monkeypatch, tmp_path):
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert sd.ready("x") is False
    assert sd.watchdog_ping() is False
    monkeypatch.setenv("NOTIFY_SOCKET", "vsock:2:1234")  # not a kind a Pi service gets
    assert sd.notify("READY=1") is False
    # A socket that went away must not take the referee down.
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "gone"))
    assert sd.notify("READY=1") is False


@pytest.mark.parametrize("bad", ["READY", "STATUS=a\nREADY=1"])
def test_malformed_state_is_refused(path_socket, bad):
    with pytest.raises(ValueError):
        sd.notify(bad)
    assert _drain(path_socket) == []


def test_watchdog_interval_honours_watchdog_pid(monkeypatch):
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    monkeypatch.delenv("WATCHDOG_USEC", raising=False)
    assert sd.watchdog_interval() is None
    monkeypatch.setenv("WATCHDOG_USEC", "30000000")
    assert sd.watchdog_interval() == 30.0
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()))
    assert sd.watchdog_interval() == 30.0
    # Inherited from a parent: the setting is not ours.
    monkeypatch.setenv("WATCHDOG_PID", str(os.getppid()))
    assert sd.watchdog_interval() is None
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()))
    for junk in ("", "0", "-5", "thirty"):
        monkeypatch.setenv("WATCHDOG_USEC", junk)
        assert sd.watchdog_interval() is None


def test_watchdog_is_inert_without_a_watchdog(monkeypatch):
    monkeypatch.delenv("WATCHDOG_USEC", raising=False)
    dog = sd.Watchdog(lambda: True)
    with dog:
        assert not dog.enabled and not dog.running
    monkeypatch.setenv("WATCHDOG_USEC", "200000")
    monkeypatch.setenv("WATCHDOG_PID", "1" if os.getpid() != 1 else "2")
    assert not sd.Watchdog(lambda: True).enabled


def test_watchdog_pings_only_while_healthy(path_socket, monkeypatch):
    """A hung loop (health False, or a health check that raises) withholds the pings so
    systemd's WatchdogSec= fires; pings resume if the loop recovers in time."""
    monkeypatch.setenv("WATCHDOG_USEC", "200000")  # 0.2 s: pings every 0.1 s
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()))
    state = {"mode": "healthy"}
    unhealthy_seen = threading.Event()

    def health() -> bool:
        if state["mode"] == "healthy":
            return True
        unhealthy_seen.set()
        if state["mode"] == "raises":
            raise RuntimeError("referee loop state unreadable")
        return False

    dog = sd.Watchdog(health)
    assert dog.interval == pytest.approx(0.2)
    with dog:
        assert dog.running
        assert [_recv(path_socket)[0] for _ in range(3)] == ["WATCHDOG=1"] * 3

        for mode in ("hung", "raises"):
            state["mode"] = mode
            unhealthy_seen.clear()
            assert unhealthy_seen.wait(2.0)
            # Checks and pings run in one thread, so once an unhealthy check has happened
            # every ping decided before it is already in the socket.
            _drain(path_socket)
            skipped_before = dog.skipped
            path_socket.settimeout(0.6)  # six ping periods
            with pytest.raises(socket.timeout):
                path_socket.recv(4096)
            assert dog.skipped >= skipped_before + 2

            state["mode"] = "healthy"
            path_socket.settimeout(2.0)
            assert _recv(path_socket)[0] == "WATCHDOG=1"
    assert not dog.running
    assert dog.pings >= 5


def test_heartbeat_ages_out():
    now = [100.0]
    beat = sd.Heartbeat(max_age=10.0, clock=lambda: now[0])
    assert beat()
    now[0] += 10.0
    assert beat()
    now[0] += 0.5
    assert not beat()
    beat.beat()
    assert beat() and beat.age() == 0.0
    with pytest.raises(ValueError):
        sd.Heartbeat(0)


# --------------------------------------------------------------------------------------
# Unit files


def _unit_entries(text: str) -> list[tuple[str, str, str]]:
    """(section, key, value) in file order; repeated keys (DeviceAllow=) stay separate."""
    entries, section = [], ""
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        entries.append((section, key.strip(), value.strip()))
    return entries


def _values(text: str, key: str) -> list[str]:
    return [v for _s, k, v in _unit_entries(text) if k == key]


def _exec_start_program(text: str) -> str:
    (command,) = _values(text, "ExecStart")
    return shlex.split(command.lstrip("@-:+!|"))[0]


def _system_unit_dir() -> Path:
    for d in (Path("/usr/lib/systemd/system"), Path("/lib/systemd/system")):
        if (d / "sysinit.target").exists():
            return d
    pytest.fail("systemd-analyze is installed but the distribution's units (sysinit.target) are not")


def _make_root(tmp: Path, units: dict[str, str], dropins: dict[str, str] | None = None,
               with_programs: bool = True) -> Path:
    root = tmp / "root"
    # The distribution's units, so After=/Wants=/WantedBy= targets resolve inside the root.
    shutil.copytree(_system_unit_dir(), root / "usr/lib/systemd/system", symlinks=True)
    etc = root / "etc/systemd/system"
    etc.mkdir(parents=True)
    for name, text in units.items():
        (etc / name).write_text(text)
        if with_programs:
            program = root / _exec_start_program(text).lstrip("/")
            program.parent.mkdir(parents=True, exist_ok=True)
            program.write_text("#!/bin/sh\nexit 0\n")
            program.chmod(0o755)
    for relpath, text in (dropins or {}).items():
        (etc / relpath).parent.mkdir(parents=True, exist_ok=True)
        (etc / relpath).write_text(text)
    return root


def _verify(root: Path, *names: str) -> tuple[int, list[str]]:
    proc = subprocess.run(
        [SYSTEMD_ANALYZE, "verify", f"--root={root}", *names],
        capture_output=True, text=True, timeout=60,
    )
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    return proc.returncode, lines


def _unit_text(name: str) -> str:
    return (SYSTEMD_DIR / name).read_text()


@needs_analyze
@pytest.mark.parametrize("unit", UNITS)
def test_unit_passes_systemd_analyze_verify_without_a_single_warning(tmp_path, unit):
    root = _make_root(tmp_path, {unit: _unit_text(unit)})
    rc, lines = _verify(root, unit)
    assert lines == [], "systemd-analyze verify printed:\n" + "\n".join(lines)
    assert rc == 0


@needs_analyze
def test_iio_dropin_passes_systemd_analyze_verify(tmp_path):
    root = _make_root(
        tmp_path,
        {"bloxcam.service": _unit_text("bloxcam.service")},
        {"bloxcam.service.d/iio-accelerometer.conf": _unit_text("iio-accelerometer.conf")},
    )
    rc, lines = _verify(root, "bloxcam.service")
    assert lines == [] and rc == 0, "\n".join(lines)


@needs_analyze
def test_verify_harness_catches_what_the_exit_status_hides(tmp_path):
    """Negative control: the checks above would fail on a typo'd key (which leaves the
    exit status 0) and on a missing ExecStart program."""
    text = _unit_text("bloxcam.service").replace("[Service]\n", "[Service]\nWatchdogSecs=30\n", 1)
    rc, lines = _verify(_make_root(tmp_path / "typo", {"bloxcam.service": text}), "bloxcam.service")
    assert rc == 0
    assert any("Unknown key 'WatchdogSecs'" in ln for ln in lines), lines
    dropin = {"bloxcam.service.d/x.conf": "[Service]\nDeviceAlow=char-iio r\n"}
    root = _make_root(tmp_path / "dropin", {"bloxcam.service": _unit_text("bloxcam.service")}, dropin)
    assert any("Unknown key 'DeviceAlow'" in ln for ln in _verify(root, "bloxcam.service")[1])
    root = _make_root(tmp_path / "noprog", {"bloxcam.service": _unit_text("bloxcam.service")}, with_programs=False)
    rc, lines = _verify(root, "bloxcam.service")
    assert any(VENV_BLOXCAM in ln and "not executable" in ln for ln in lines), lines


@needs_analyze
@pytest.mark.parametrize("unit", UNITS)
def test_unit_exposure_stays_low(tmp_path, unit):
    """systemd-analyze's own hardening score (0 = locked down, 10 = unprotected); a lost
    hardening line raises it above 2 ("OK" ends at 3.9)."""
    root = _make_root(tmp_path, {unit: _unit_text(unit)})
    proc = subprocess.run(
        [SYSTEMD_ANALYZE, "security", "--offline=true", f"--root={root}", "--no-pager", unit],
        capture_output=True, text=True, timeout=60,
    )
    m = re.search(rf"Overall exposure level for {re.escape(unit)}: (\d+\.\d)", proc.stdout)
    assert m, proc.stdout + proc.stderr
    assert float(m.group(1)) <= 2.0, proc.stdout


def test_units_state_the_service_contract():
    table, hub = _unit_text("bloxcam.service"), _unit_text("bloxcam-hub.service")
    for text, command in ((table, "serve --config /etc/bloxcam/table.toml"),
                          (hub, "hub --config /etc/bloxcam/hub.toml")):
        assert _values(text, "ExecStart") == [f"{VENV_BLOXCAM} {command}"]
        for key, value in (("Type", "notify"), ("WatchdogSec", "30"), ("Restart", "on-failure"),
                           ("User", "bloxcam"), ("NoNewPrivileges", "yes"), ("CapabilityBoundingSet", ""),
                           ("ProtectSystem", "strict"), ("DevicePolicy", "closed"),
                           ("MemoryDenyWriteExecute", "yes"), ("ConfigurationDirectory", "bloxcam")):
            assert _values(text, key) == [value], key
    assert _values(table, "StateDirectory") == ["bloxcam"]
    assert _values(table, "SupplementaryGroups") == ["video i2c gpio"]
    assert sorted(_values(table, "DeviceAllow")) == sorted(
        ["char-video4linux rw", "char-media rw", "char-dma_heap rw", "/dev/i2c-1 rw"])
    assert _values(hub, "DeviceAllow") == [] and _values(hub, "PrivateDevices") == ["yes"]
    # install.sh must create the venv the units run from.
    assert f'PREFIX=/opt/bloxcam\nVENV="$PREFIX/.venv"' in INSTALL_SH.read_text()


def test_example_config_is_accepted_and_writes_only_where_the_unit_allows():
    from service.config import load_config

    config = load_config(SYSTEMD_DIR / "table.toml")
    assert config.source.kind == "picamera2"
    assert config.table.pin == "CHANGEME"  # the placeholder install.sh replaces
    # ProtectSystem=strict: the game log must live in the StateDirectory.
    (state_dir,) = _values(_unit_text("bloxcam.service"), "StateDirectory")
    assert config.table.log.parent == Path("/var/lib") / state_dir


_MDWE_PROBE = r"""
import ctypes, mmap, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(65, 1, 0, 0, 0) != 0:  # PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN (Linux 6.3+)
    sys.exit(77)
try:
    mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    sys.exit("W+X mapping was allowed: MDWE is not in force")
except OSError:
    pass
import numpy as np, cv2, sqlite3
img = np.random.default_rng(0).integers(0, 255, (240, 320, 3), dtype=np.uint8)
grey = cv2.resize(cv2.cvtColor(img, cv2.COLOR_BGR2GRAY), (96, 54))
cv2.aruco.ArucoDetector(cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_4X4_50)).detectMarkers(grey)
assert np.linalg.svd(np.eye(20) + 0.1).S[0] > 0
sqlite3.connect(":memory:").execute("select 1")
cb = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)(lambda a, b: 0)
libc.qsort((ctypes.c_int * 3)(3, 1, 2), 3, 4, cb)  # a libffi closure
from service.cli import build_parser
build_parser()
try:
    import fastapi, pydantic  # the status page's stack, where installed
except ImportError:
    pass
print("ok")
"""


def test_python_stack_runs_with_memory_deny_write_execute():
    """MemoryDenyWriteExecute=yes is only safe if nothing we load needs W+X memory (a JIT,
    old libffi trampolines, an executable-stack .so). The kernel's PR_SET_MDWE enforces
    the same rule as systemd's seccomp filter for it; run our import stack under it."""
    proc = subprocess.run([sys.executable, "-c", _MDWE_PROBE], capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    if proc.returncode == 77:
        pytest.skip("kernel has no PR_SET_MDWE (Linux < 6.3): cannot emulate MemoryDenyWriteExecute")
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr


# --------------------------------------------------------------------------------------
# install.sh


def test_install_script_parses():
    proc = subprocess.run(["bash", "-n", str(INSTALL_SH)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed (optional)")
def test_install_script_is_shellcheck_clean():
    proc = subprocess.run(["shellcheck", str(INSTALL_SH)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


_MUTATORS = ("apt-get", "groupadd", "useradd", "usermod", "install", "python3", "sed", "systemctl",
             "pip", "chown", "chmod", "cp", "mkdir", "rm")


def _dry_run(tmp_path: Path, *flags: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run install.sh --dry-run with every command that could change the system replaced
    by a stub that records its call, so a dry run that executes anything is caught."""
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    calls = tmp_path / "calls"
    for name in _MUTATORS:
        # systemctl is-active is a legitimate read-only probe: answer "inactive" (3).
        status = 3 if name == "systemctl" else 0
        (stubs / name).write_text(f'#!/bin/sh\necho "{name} $*" >> "{calls}"\nexit {status}\n')
        (stubs / name).chmod(0o755)
    env = dict(os.environ, PATH=f"{stubs}:{os.environ['PATH']}")
    proc = subprocess.run(["bash", str(INSTALL_SH), "--dry-run", *flags], capture_output=True,
                          text=True, env=env, timeout=60)
    executed = calls.read_text().splitlines() if calls.exists() else []
    return proc, executed


def _plan(stdout: str) -> list[str]:
    # printf %q escapes; undo it for readable assertions.
    return [ln[2:].replace("\\", "") for ln in stdout.splitlines() if ln.startswith("+ ")]


def test_install_dry_run_prints_every_step_and_runs_none(tmp_path):
    proc, executed = _dry_run(tmp_path, "--hub", "--iio")
    assert proc.returncode == 0, proc.stderr
    assert [c for c in executed if not c.startswith("systemctl is-active")] == []
    out, plan = proc.stdout, _plan(proc.stdout)
    assert "dry run: nothing will be changed" in out

    def index(pattern: str, alternative: str | None = None) -> int:
        for i, line in enumerate(plan):
            if re.fullmatch(pattern, line):
                return i
        if alternative is not None and alternative in out:
            return -1  # already done on this machine
        pytest.fail(f"dry run lacks a step matching {pattern!r}:\n{out}")

    # Each step is either planned or reported as already satisfied on this machine.
    index(r"useradd --system .*--shell /usr/sbin/nologin .*bloxcam", "user bloxcam exists")
    for group in ("video", "i2c", "gpio"):
        index(rf"usermod --append --groups {group} bloxcam", f"bloxcam is in {group}")
    venv = str(Path(VENV_BLOXCAM).parent.parent)
    index(rf"/usr/bin/python3 -m venv --system-site-packages {venv}", f"reusing {venv}")
    # numpy<2 only where the system's (apt-built picamera2) NumPy is 1.x.
    pip = index(rf"{venv}/bin/pip install --upgrade {re.escape(str(REPO))}\[pi\]( numpy<2)?")
    index(r"install -m 0640 -o root -g bloxcam \S+/systemd/table.toml /etc/bloxcam/table.toml",
          "keeping existing /etc/bloxcam/table.toml")
    for unit in UNITS:
        index(rf"install -m 0644 \S+/systemd/{unit} /etc/systemd/system/{unit}", f"{unit} unchanged")
    index(r"install -m 0644 \S+/iio-accelerometer.conf /etc/systemd/system/bloxcam.service.d/\S+",
          "IIO drop-in unchanged")
    reload = index(r"systemctl daemon-reload")
    enables = [index(rf"systemctl enable (--now )?{re.escape(unit)}") for unit in UNITS]
    assert pip < reload < min(enables)


def test_install_without_hub_leaves_the_hub_alone(tmp_path):
    proc, _ = _dry_run(tmp_path, "--no-apt")
    assert proc.returncode == 0, proc.stderr
    assert "bloxcam-hub" not in proc.stdout
    assert not any("apt-get" in line for line in _plan(proc.stdout))


def test_install_refuses_unknown_options_and_non_root_runs():
    proc = subprocess.run(["bash", str(INSTALL_SH), "--frobnicate"], capture_output=True, text=True)
    assert proc.returncode == 2 and "unknown option" in proc.stderr
    cmd = ["bash", str(INSTALL_SH)]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot try a non-root run safely")
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1 and "run as root" in proc.stderr, proc.stdout + proc.stderr
