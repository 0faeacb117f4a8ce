"""Accelerometers: drivers, the IIO reader and the resilient reader.

Every driver exposes the same small interface (:class:`AccelDriver`): ``open()``
configures the chip, ``read()`` drains what the chip has buffered and returns
:class:`AccelSample` values in m/s^2, ``close()``. Drivers raise ``OSError`` on bus
trouble and :class:`FifoOverflow` when samples were lost; :class:`ResilientAccel` turns
both into ``fault`` events, retries, reopens with backoff and never raises.
"""

from __future__ import annotations

import time
from typing import Any, Callable, NamedTuple, Protocol

from device.events import fault_event

STANDARD_GRAVITY = 9.80665  # m/s^2 per g, the value datasheet "g" means


class AccelSample(NamedTuple):
    """One accelerometer sample: ``t`` seconds since the reader started, m/s^2 per axis."""

    t: float
    ax: float
    ay: float
    az: float


class DeviceFault(Exception):
    """A device-level problem the resilient reader reports as a ``fault`` event."""

    fault = "device-fault"


class ChipNotFound(DeviceFault):
    """The identity register did not hold the expected value (wrong chip or no chip)."""

    fault = "no-answer"


class FifoOverflow(DeviceFault):
    """The chip's FIFO overflowed; the driver has reset it and samples were lost."""

    fault = "fifo-overflow"

    def __init__(self, message: str, samples: list[AccelSample] | None = None) -> None:
        super().__init__(message)
        self.samples = samples or []


class AccelDriver(Protocol):
    rate_hz: float

    def open(self) -> None: ...

    def read(self) -> list[AccelSample]: ...

    def close(self) -> None: ...


def open_smbus(bus: int) -> Any:
    """Open a real I2C bus; ``smbus2`` is imported here only, never at module import."""
    try:
        from smbus2 import SMBus  # noqa: PLC0415 - lazy by design
    except ImportError as exc:  # pragma: no cover - depends on the machine
        raise DeviceFault("smbus2 is not installed (pip install 'bloxcam[i2c]')") from exc
    return SMBus(bus)


class ResilientAccel:
    """Keeps samples flowing from a driver whatever the bus does.

    ``poll()`` returns ``(samples, events)``. An ``OSError`` (EIO, a chip that stops
    answering) is retried ``retries`` times at once; if it persists the driver is closed
    and reopened later with exponential backoff (``backoff_s`` doubling up to
    ``max_backoff_s``). A FIFO overflow is reported and reading continues. A
    ``recovered`` event follows every outage. Nothing here raises, so a sensor problem
    never takes the service down; the game state is not this class's business.
    """

    def __init__(
        self,
        make_driver: Callable[[], AccelDriver],
        *,
        clock: Callable[[], float] = time.monotonic,
        retries: int = 2,
        backoff_s: float = 0.05,
        max_backoff_s: float = 2.0,
    ) -> None:
        self._make_driver = make_driver
        self._clock = clock
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._driver: AccelDriver | None = None
        self._down_since: float | None = None
        self._next_attempt = 0.0
        self._delay = backoff_s
        self.faults = 0
        self.lost_overflows = 0

    @property
    def is_up(self) -> bool:
        return self._driver is not None

    def _now(self) -> float:
        return self._clock()

    def _try_open(self, events: list[dict[str, Any]]) -> None:
        now = self._now()
        if now < self._next_attempt:
            return
        driver = None
        try:
            driver = self._make_driver()
            driver.open()
        except (OSError, DeviceFault) as exc:
            self._safe_close(driver)
            self.faults += 1
            events.append(fault_event("accel", "reopen-failed", now, _describe(exc), retry_in=self._delay))
            self._next_attempt = now + self._delay
            self._delay = min(self._delay * 2, self.max_backoff_s)
            return
        self._driver = driver
        if self._down_since is not None:
            events.append(fault_event("accel", "recovered", now, f"down {now - self._down_since:.3f} s"))
        self._down_since = None
        self._delay = self.backoff_s

    def _go_down(self, exc: BaseException, events: list[dict[str, Any]]) -> None:
        now = self._now()
        self._safe_close(self._driver)
        self._driver = None
        self._down_since = now
        self._next_attempt = now + self._delay
        events.append(fault_event("accel", "no-answer", now, _describe(exc), retry_in=self._delay))
        self._delay = min(self._delay * 2, self.max_backoff_s)

    @staticmethod
    def _safe_close(driver: AccelDriver | None) -> None:
        if driver is None:
            return
        try:
            driver.close()
        except Exception:  # noqa: BLE001 - closing a broken device must not raise
            pass

    def poll(self) -> tuple[list[AccelSample], list[dict[str, Any]]]:
        events: list[dict[str, Any]] = []
        if self._driver is None:
            self._try_open(events)
            if self._driver is None:
                return [], events
        attempt = 0
        while True:
            try:
                return self._driver.read(), events
            except FifoOverflow as exc:
                self.faults += 1
                self.lost_overflows += 1
                events.append(fault_event("accel", "fifo-overflow", self._now(), str(exc)))
                return exc.samples, events
            except (OSError, DeviceFault) as exc:
                self.faults += 1
                attempt += 1
                if attempt > self.retries:
                    self._go_down(exc, events)
                    return [], events
                events.append(fault_event("accel", "io-error", self._now(), _describe(exc), attempt=attempt))

    def close(self) -> None:
        self._safe_close(self._driver)
        self._driver = None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.errno is not None:
        return f"{type(exc).__name__} errno {exc.errno}: {exc.strerror or exc}"
    return f"{type(exc).__name__}: {exc}"
