"""Shared sampling machinery for the emulated accelerometers."""

from __future__ import annotations

from typing import Callable

from device.emulators import TraceSignal


class SampledChip:
    """Produces samples at the chip's current output data rate as the clock advances.

    Sample ``k`` after measurement starts is taken at ``start + k / odr`` from the
    trace (trace time 0 = when measuring started, or ``trace_offset`` later). With
    ``world_time`` the trace runs on the clock instead (trace time = clock time +
    ``trace_offset``): the base moves whether or not the chip is measuring, as when a
    service opens the sensor a moment after the game began.
    """

    MAX_BACKLOG = 100_000  # samples generated per access at most (a clock jump of hours)

    def __init__(self, address: int, signal: TraceSignal, clock: Callable[[], float], trace_offset: float = 0.0,
                 world_time: bool = False):
        self.address = address
        self.signal = signal
        self.clock = clock
        self.trace_offset = trace_offset
        self.world_time = world_time
        self._start: float | None = None
        self._k = 0
        self._odr = 1.0
        self._first_start: float | None = None
        self.generated = 0

    def odr(self) -> float:
        raise NotImplementedError

    def measuring(self) -> bool:
        raise NotImplementedError

    def push_sample(self, ax: float, ay: float, az: float) -> None:
        raise NotImplementedError

    def restart_sampling(self) -> None:
        """(Re)start the sample clock now, e.g. after a rate change or leaving sleep."""
        self._start = None
        self._k = 0
        if self.measuring():
            self.advance()

    def advance(self) -> None:
        now = self.clock()
        if not self.measuring():
            self._start = None
            return
        if self._first_start is None:
            self._first_start = now
        if self._start is None:
            self._start = now
            self._k = 0
            self._odr = self.odr()
            return
        odr = self._odr
        due = int((now - self._start) * odr + 1e-9)
        if due - self._k > self.MAX_BACKLOG:
            self._k = due - self.MAX_BACKLOG
        while self._k < due:
            self._k += 1
            since = self._start if self.world_time else self._start - self._first_start
            t = self.trace_offset + since + self._k / odr
            self.push_sample(*self.signal.at(t))
            self.generated += 1


def to_counts(value_ms2: float, lsb_ms2: float, bits: int = 16) -> int:
    lim = (1 << (bits - 1)) - 1
    return max(-lim - 1, min(lim, round(value_ms2 / lsb_ms2)))
