"""Emulators for tests and the bench: no hardware, real protocols.

- :class:`VirtualClock`: a clock whose ``sleep`` advances time instantly, shared by an
  emulated chip and the driver under test so bursts and backoff run at full speed.
- :mod:`.smbus`: an SMBus-like bus with injectable faults (EIO, no answer).
- :mod:`.mpu6050`, :mod:`.adxl345`: register-level chip emulators fed by a trace.
- :mod:`.picamera2`: a stand-in for ``picamera2.Picamera2``.
- :mod:`.iio`: builds a fake IIO sysfs tree and character device.
"""

from __future__ import annotations

import bisect
from typing import Sequence

import numpy as np


class VirtualClock:
    """``time()`` and ``sleep(dt)``; sleeping only moves the clock."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = float(start)

    def time(self) -> float:
        return self.now

    __call__ = time

    def sleep(self, dt: float) -> None:
        if dt > 0:
            self.now += dt

    def advance(self, dt: float) -> None:
        self.sleep(dt)


class TraceSignal:
    """An acceleration trace (m/s^2) the emulated chip "feels", linearly interpolated.

    Before the first sample it reads the first value, after the last the last value
    (or wraps round when ``loop``), as a chip left on a still table would.
    """

    def __init__(self, t: Sequence[float], acc: np.ndarray, *, loop: bool = False) -> None:
        self.t = np.asarray(t, dtype=float)
        self.acc = np.asarray(acc, dtype=float).reshape(-1, 3)
        if len(self.t) != len(self.acc) or len(self.t) == 0:
            raise ValueError("trace needs matching, non-empty t and acc")
        self.loop = loop
        self._tl = self.t.tolist()

    @classmethod
    def still(cls, ax: float = 0.0, ay: float = 0.0, az: float = 9.80665) -> "TraceSignal":
        return cls([0.0], np.array([[ax, ay, az]]))

    @property
    def duration(self) -> float:
        return float(self.t[-1] - self.t[0])

    def at(self, t: float) -> tuple[float, float, float]:
        if self.loop and self.duration > 0:
            t = self.t[0] + (t - self.t[0]) % self.duration
        i = bisect.bisect_right(self._tl, t)
        if i <= 0:
            return tuple(self.acc[0])  # type: ignore[return-value]
        if i >= len(self._tl):
            return tuple(self.acc[-1])  # type: ignore[return-value]
        t0, t1 = self._tl[i - 1], self._tl[i]
        w = (t - t0) / (t1 - t0) if t1 > t0 else 0.0
        a = self.acc[i - 1] * (1 - w) + self.acc[i] * w
        return float(a[0]), float(a[1]), float(a[2])
