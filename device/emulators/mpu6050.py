"""Register-level MPU-6050 emulator (accelerometer path and FIFO).

Implements what a FIFO driver touches: WHO_AM_I, PWR_MGMT_1 reset/sleep, SMPLRT_DIV
and CONFIG (sample rate = 8 kHz or 1 kHz / (1 + SMPLRT_DIV)), ACCEL_CONFIG range,
FIFO_EN accel bit, USER_CTRL FIFO enable/reset, INT_STATUS with FIFO_OFLOW (cleared on
read), FIFO_COUNT and FIFO_R_W burst reads, ACCEL_*OUT registers. Like the chip, a full
1024-byte FIFO keeps accepting bytes by discarding the oldest ones, so after an
overflow the byte stream is misaligned; only a FIFO reset cures it.
"""

from __future__ import annotations

from collections import deque
from typing import Callable

from device.accel import STANDARD_GRAVITY
from device.accel import mpu6050 as reg
from device.emulators import TraceSignal
from device.emulators._chip import SampledChip, to_counts


class Mpu6050Emulator(SampledChip):
    def __init__(
        self,
        signal: TraceSignal,
        clock: Callable[[], float],
        address: int = reg.DEFAULT_ADDRESS,
        *,
        who_am_i: int = reg.WHO_AM_I_VALUE,
        trace_offset: float = 0.0,
        world_time: bool = False,
    ) -> None:
        super().__init__(address, signal, clock, trace_offset, world_time)
        self.who_am_i = who_am_i
        self.fifo: deque[int] = deque()
        self.overflows = 0
        self._reset()

    def _reset(self) -> None:
        self.regs = bytearray(256)
        self.regs[reg.PWR_MGMT_1] = 0x40  # SLEEP after reset
        self.regs[reg.WHO_AM_I] = self.who_am_i
        self.fifo.clear()
        self.restart_sampling()

    # -- sampling ---------------------------------------------------------------
    def odr(self) -> float:
        return reg.gyro_output_rate_hz(self.regs[reg.CONFIG] & 7) / (1 + self.regs[reg.SMPLRT_DIV])

    def measuring(self) -> bool:
        return not self.regs[reg.PWR_MGMT_1] & 0x40

    def lsb(self) -> float:
        afs = (self.regs[reg.ACCEL_CONFIG] >> 3) & 3
        return STANDARD_GRAVITY / (16384.0 / (1 << afs))

    def push_sample(self, ax: float, ay: float, az: float) -> None:
        lsb = self.lsb()
        data = b"".join(to_counts(v, lsb).to_bytes(2, "big", signed=True) for v in (ax, ay, az))
        self.regs[0x3B:0x41] = data
        if self.regs[reg.USER_CTRL] & reg.USER_FIFO_EN and self.regs[reg.FIFO_EN] & reg.FIFO_EN_ACCEL:
            self.fifo.extend(data)
            if len(self.fifo) > reg.FIFO_SIZE:
                while len(self.fifo) > reg.FIFO_SIZE:
                    self.fifo.popleft()
                self.regs[reg.INT_STATUS] |= reg.INT_FIFO_OFLOW
                self.overflows += 1

    def force_overflow(self) -> None:
        """Fill the FIFO past its 1024 bytes now, as a host that fell behind would."""
        self.advance()
        while not self.regs[reg.INT_STATUS] & reg.INT_FIFO_OFLOW:
            self.push_sample(0.0, 0.0, STANDARD_GRAVITY)

    # -- registers ----------------------------------------------------------------
    def read_register(self, r: int) -> int:
        self.advance()
        if r == reg.INT_STATUS:
            v = self.regs[r]
            self.regs[r] = 0
            return v
        if r == reg.FIFO_COUNTH:
            return (len(self.fifo) >> 8) & 0xFF
        if r == reg.FIFO_COUNTH + 1:
            return len(self.fifo) & 0xFF
        if r == reg.FIFO_R_W:
            return self.fifo.popleft() if self.fifo else 0xFF
        return self.regs[r]

    def write_register(self, r: int, value: int) -> None:
        self.advance()
        if r == reg.PWR_MGMT_1:
            if value & reg.PWR_DEVICE_RESET:
                self._reset()
                return
            was = self.measuring()
            self.regs[r] = value
            if was != self.measuring():
                self.restart_sampling()
            return
        if r == reg.USER_CTRL:
            if value & reg.USER_FIFO_RESET:
                self.fifo.clear()
            self.regs[r] = value & ~reg.USER_FIFO_RESET & 0xFF
            return
        if r in (reg.WHO_AM_I, reg.INT_STATUS, reg.FIFO_COUNTH, reg.FIFO_COUNTH + 1):
            return  # read-only
        if r in (reg.CONFIG, reg.SMPLRT_DIV):
            self.regs[r] = value
            self.restart_sampling()
            return
        if r == reg.FIFO_R_W:
            return
        self.regs[r] = value

    def read_block(self, r: int, length: int) -> list[int]:
        if r == reg.FIFO_R_W:
            # Burst reads of FIFO_R_W keep returning successive FIFO bytes.
            self.advance()
            return [self.fifo.popleft() if self.fifo else 0xFF for _ in range(length)]
        return [self.read_register((r + i) & 0xFF) for i in range(length)]
