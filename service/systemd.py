"""A small sd_notify client: readiness, status and the watchdog, without libsystemd.

systemd passes a service started with ``Type=notify`` the address of a datagram socket in
``$NOTIFY_SOCKET``; the service sends newline-separated ``KEY=VALUE`` assignments to it
(``READY=1``, ``STATUS=...``, ``WATCHDOG=1``, ``STOPPING=1``). See sd_notify(3).
``$NOTIFY_SOCKET`` is either a filesystem path or, starting with ``@``, a name in the
Linux abstract socket namespace.

With ``WatchdogSec=`` set, systemd also passes ``$WATCHDOG_USEC`` (and ``$WATCHDOG_PID``,
the process the setting is meant for) and restarts the service when no ``WATCHDOG=1``
arrives within that time. :class:`Watchdog` sends those pings from a daemon thread, but
only while a health callback says the work is really progressing: a thread that pings
unconditionally would keep a hung referee loop alive for ever.

Everything here is a no-op (returning ``False`` / ``None``) outside systemd, so the same
code runs from a terminal, in tests and under the service manager. Sending never raises
on a socket error: a lost notification must not take the referee down, and systemd
already treats a missing ``READY=1`` or ping as a failure it can act on.

Typical use in a long-running command::

    heartbeat = Heartbeat(max_age=10.0)
    with Watchdog(heartbeat):
        ready("referee running")
        for frame in source:
            heartbeat.beat()
            ...
        stopping()
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from typing import Callable

__all__ = [
    "Heartbeat",
    "Watchdog",
    "extend_timeout",
    "notify",
    "ready",
    "status",
    "stopping",
    "watchdog_interval",
    "watchdog_ping",
]

log = logging.getLogger(__name__)


def _socket_address(raw: str) -> bytes | None:
    """The ``sendto`` address for ``$NOTIFY_SOCKET``, or None for a kind we do not speak.

    systemd 253+ may also hand out ``vsock:CID:PORT`` addresses (for VMs); a Pi service
    never gets one, so those are ignored rather than half-supported.
    """
    if raw.startswith("/"):
        return os.fsencode(raw)
    if raw.startswith("@") and len(raw) > 1:
        # Abstract namespace: the kernel name starts with a NUL byte instead of '@'.
        return b"\0" + os.fsencode(raw[1:])
    return None


def notify(*states: str) -> bool:
    """Send ``states`` (each ``KEY=VALUE``) as one datagram to ``$NOTIFY_SOCKET``.

    Returns True if the datagram was sent, False when not running under systemd (no or
    unsupported ``$NOTIFY_SOCKET``) or when sending failed (logged, never raised).
    A state containing a newline or lacking ``=`` is a programming error: ValueError.
    """
    for state in states:
        if "=" not in state or "\n" in state:
            raise ValueError(f"sd_notify state must be one KEY=VALUE line, got {state!r}")
    raw = os.environ.get("NOTIFY_SOCKET", "")
    address = _socket_address(raw) if raw else None
    if address is None or not states:
        return False
    message = "\n".join(states).encode("utf-8")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.sendto(message, address)
    except OSError as exc:
        log.warning("sd_notify to %s failed: %s", raw, exc)
        return False
    return True


def _one_line(text: str) -> str:
    # The protocol is line-based: a newline inside STATUS would start a bogus assignment.
    return " ".join(text.split())


def ready(status: str | None = None) -> bool:
    """Tell systemd start-up is complete (``READY=1``), optionally with a status line."""
    states = ["READY=1"]
    if status is not None:
        states.append(f"STATUS={_one_line(status)}")
    return notify(*states)


def stopping(status: str | None = None) -> bool:
    """Tell systemd a clean shutdown has begun (``STOPPING=1``)."""
    states = ["STOPPING=1"]
    if status is not None:
        states.append(f"STATUS={_one_line(status)}")
    return notify(*states)


def status(text: str) -> bool:
    """Set the one-line status ``systemctl status`` shows."""
    return notify(f"STATUS={_one_line(text)}")


def extend_timeout(seconds: float) -> bool:
    """Ask for ``seconds`` more before the start (or stop) timeout fires.

    For a slow start, e.g. a camera that takes a while to come up after boot.
    """
    if seconds <= 0:
        raise ValueError("extend_timeout needs a positive number of seconds")
    return notify(f"EXTEND_TIMEOUT_USEC={int(seconds * 1_000_000)}")


def watchdog_ping() -> bool:
    """Send one ``WATCHDOG=1`` keep-alive."""
    return notify("WATCHDOG=1")


def watchdog_interval() -> float | None:
    """The watchdog timeout in seconds (``$WATCHDOG_USEC``), or None if there is none.

    None as well when ``$WATCHDOG_PID`` names another process: the variables were
    inherited from a parent (e.g. a shell started by the service) and the pings would
    be credited to no one, as sd_watchdog_enabled(3) does.
    """
    raw_usec = os.environ.get("WATCHDOG_USEC", "")
    raw_pid = os.environ.get("WATCHDOG_PID", "")
    try:
        usec = int(raw_usec)
    except ValueError:
        return None
    if usec <= 0:
        return None
    if raw_pid:
        try:
            pid = int(raw_pid)
        except ValueError:
            return None
        if pid != os.getpid():
            return None
    return usec / 1_000_000


class Heartbeat:
    """A health callback for :class:`Watchdog`: healthy while ``beat()`` was called
    within the last ``max_age`` seconds.

    The referee loop calls ``beat()`` once per iteration; if it hangs (a stuck camera
    read, a deadlock), the heartbeat ages, the watchdog stops pinging and systemd
    restarts the service, which resumes the game from its log.
    """

    def __init__(self, max_age: float, clock: Callable[[], float] = time.monotonic) -> None:
        if max_age <= 0:
            raise ValueError("max_age must be positive")
        self.max_age = max_age
        self._clock = clock
        # A single float assignment is atomic under the GIL, so no lock is needed.
        self._last = clock()

    def beat(self) -> None:
        self._last = self._clock()

    def age(self) -> float:
        return self._clock() - self._last

    def __call__(self) -> bool:
        return self.age() <= self.max_age


class Watchdog:
    """Pings the systemd watchdog from a daemon thread while ``healthy()`` returns True.

    ``interval`` is the watchdog timeout in seconds; by default it comes from
    :func:`watchdog_interval`, and without one (not under systemd, or no
    ``WatchdogSec=``) the watchdog does nothing. Pings go out every ``interval / 2``,
    as sd_watchdog_enabled(3) recommends, so one late wake-up is not fatal.

    Before each ping the health callback is consulted; a False return or an exception
    skips that ping (logged once per unhealthy spell). Pings resume if health returns,
    so a stall shorter than the timeout costs nothing.

    Use as a context manager or with ``start()``/``stop()``. ``pings`` and ``skipped``
    count what happened, for status pages and tests.
    """

    def __init__(self, healthy: Callable[[], bool], interval: float | None = None) -> None:
        self._healthy = healthy
        self.interval = watchdog_interval() if interval is None else interval
        if self.interval is not None and self.interval <= 0:
            raise ValueError("watchdog interval must be positive")
        self.pings = 0
        self.skipped = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        return self.interval is not None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> "Watchdog":
        if self.interval is None or self.running:
            return self
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="sd-watchdog", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> "Watchdog":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _check(self) -> bool:
        try:
            return bool(self._healthy())
        except Exception:  # noqa: BLE001 - a failing health check means "not healthy"
            log.exception("watchdog health check raised")
            return False

    def _run(self) -> None:
        assert self.interval is not None
        period = self.interval / 2
        was_healthy = True
        while True:
            if self._check():
                if not was_healthy:
                    log.warning("watchdog: healthy again, pings resumed")
                was_healthy = True
                watchdog_ping()
                self.pings += 1
            else:
                if was_healthy:
                    log.error("watchdog: health check failing, withholding pings so systemd restarts us")
                was_healthy = False
                self.skipped += 1
            if self._stop.wait(period):
                return
