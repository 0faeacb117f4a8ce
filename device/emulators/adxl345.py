"""Register-level ADXL345 emulator (measurement, data format, FIFO).

Implements DEVID, BW_RATE rate codes, POWER_CTL measure bit, DATA_FORMAT (full
resolution 3.9 mg/LSB or 10-bit, range), DATAX0..DATAZ1 (little-endian; a six-byte
read pops one FIFO entry), FIFO_CTL modes (bypass, FIFO, stream, trigger treated as
stream), FIFO_STATUS entry count, INT_SOURCE DATA_READY/Overrun. In stream mode a
full 32-entry FIFO discards its oldest entry and sets Overrun; FIFO mode stops
collecting and sets Overrun. Reading data clears Overrun.
"""

from __future__ import annotations

from collections import deque
from typing import Callable

from device.accel import STANDARD_GRAVITY
from device.accel import adxl345 as reg
from device.emulators import TraceSignal
from device.emulators._chip import SampledChip, to_counts

_ODR_BY_CODE = {code: hz for hz, code in reg.RATE_CODES.items()}
_ODR_BY_CODE.update({0x09: 50.0, 0x08: 25.0, 0x07: 12.5, 0x06: 6.25})


class Adxl345Emulator(SampledChip):
    def __init__(
        self,
        signal: TraceSignal,
        clock: Callable[[], float],
        address: int = reg.DEFAULT_ADDRESS,
        *,
        devid: int = reg.DEVID_VALUE,
        trace_offset: float = 0.0,
        world_time: bool = False,
    ) -> None:
        super().__init__(address, signal, clock, trace_offset, world_time)
        self.regs = bytearray(256)
        self.regs[reg.DEVID] = devid
        self.regs[reg.BW_RATE] = 0x0A
        self.fifo: deque[bytes] = deque()
        self.latest = bytes(6)
        self.overruns = 0

    def odr(self) -> float:
        return _ODR_BY_CODE.get(self.regs[reg.BW_RATE] & 0x0F, 100.0)

    def measuring(self) -> bool:
        return bool(self.regs[reg.POWER_CTL] & reg.POWER_MEASURE)

    def lsb(self) -> float:
        fmt = self.regs[reg.DATA_FORMAT]
        if fmt & reg.DATA_FULL_RES:
            return reg.SCALE_G_PER_LSB * STANDARD_GRAVITY
        return reg.SCALE_G_PER_LSB * STANDARD_GRAVITY * (1 << (fmt & 3))

    def _bits(self) -> int:
        fmt = self.regs[reg.DATA_FORMAT]
        return 10 + (fmt & 3) if fmt & reg.DATA_FULL_RES else 10

    def _mode(self) -> int:
        return self.regs[reg.FIFO_CTL] >> 6

    def push_sample(self, ax: float, ay: float, az: float) -> None:
        lsb, bits = self.lsb(), self._bits()
        data = b"".join(to_counts(v, lsb, bits).to_bytes(2, "little", signed=True) for v in (ax, ay, az))
        mode = self._mode()
        self.regs[reg.INT_SOURCE] |= 0x80  # DATA_READY
        if mode == 0:
            if self.latest_unread:
                self.regs[reg.INT_SOURCE] |= reg.INT_OVERRUN
            self.latest = data
            self.latest_unread = True
            return
        if len(self.fifo) >= reg.FIFO_DEPTH:
            self.regs[reg.INT_SOURCE] |= reg.INT_OVERRUN
            self.overruns += 1
            if mode == 1:
                return  # FIFO mode: full FIFO stops collecting
            self.fifo.popleft()
        self.fifo.append(data)

    latest_unread = False

    def force_overflow(self) -> None:
        """Let the FIFO overrun now, as a host that fell behind would."""
        self.advance()
        for _ in range(reg.FIFO_DEPTH + 1):
            self.push_sample(0.0, 0.0, STANDARD_GRAVITY)

    def _pop(self) -> bytes:
        self.regs[reg.INT_SOURCE] &= ~(reg.INT_OVERRUN | 0x80) & 0xFF
        if self._mode() != 0 and self.fifo:
            self.latest = self.fifo.popleft()
        self.latest_unread = False
        return self.latest

    def read_register(self, r: int) -> int:
        self.advance()
        if r == reg.FIFO_STATUS:
            return min(len(self.fifo), 0x3F)
        if reg.DATAX0 <= r <= reg.DATAX0 + 5:
            data = self._pop() if r == reg.DATAX0 else self.latest
            return data[r - reg.DATAX0]
        return self.regs[r]

    def write_register(self, r: int, value: int) -> None:
        self.advance()
        if r in (reg.DEVID, reg.INT_SOURCE, reg.FIFO_STATUS) or reg.DATAX0 <= r <= reg.DATAX0 + 5:
            return  # read-only
        if r == reg.FIFO_CTL and value >> 6 == 0:
            self.fifo.clear()  # bypass mode empties the FIFO
        self.regs[r] = value
        if r in (reg.BW_RATE, reg.POWER_CTL):
            self.restart_sampling()

    def read_block(self, r: int, length: int) -> list[int]:
        self.advance()
        if r == reg.DATAX0 and length <= 6:
            return list(self._pop()[:length])
        return [self.read_register((r + i) & 0xFF) for i in range(length)]
