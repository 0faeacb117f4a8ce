"""Analog Devices ADXL345 accelerometer over I2C, read through its 32-level FIFO.

Register map and scales from the ADXL345 data sheet (Rev. E). Full-resolution mode
keeps 3.9 mg/LSB in every range. Data registers DATAX0..DATAZ1 are little-endian;
reading all six in one multi-byte transfer pops one FIFO entry.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from device.accel import STANDARD_GRAVITY, AccelSample, ChipNotFound, FifoOverflow

DEFAULT_ADDRESS = 0x53

DEVID = 0x00
BW_RATE = 0x2C
POWER_CTL = 0x2D
INT_SOURCE = 0x30
DATA_FORMAT = 0x31
DATAX0 = 0x32
FIFO_CTL = 0x38
FIFO_STATUS = 0x39

DEVID_VALUE = 0xE5
POWER_MEASURE = 0x08
DATA_FULL_RES = 0x08
INT_OVERRUN = 0x01
FIFO_MODE_STREAM = 0x80
FIFO_DEPTH = 32
SCALE_G_PER_LSB = 0.0039  # full resolution, typical scale factor

# BW_RATE rate code (bits 3:0) by output data rate in Hz; bandwidth is ODR / 2.
RATE_CODES = {100.0: 0x0A, 200.0: 0x0B, 400.0: 0x0C, 800.0: 0x0D, 1600.0: 0x0E, 3200.0: 0x0F}
RANGES_G = {2: 0, 4: 1, 8: 2, 16: 3}


class Adxl345:
    """ADXL345 in stream FIFO mode (oldest entries are overwritten when full; the
    Overrun bit of INT_SOURCE then reports the loss). Default +-16 g in full
    resolution: same 3.9 mg/LSB as +-2 g, and landing impacts do not clip."""

    def __init__(
        self,
        bus: Any,
        address: int = DEFAULT_ADDRESS,
        *,
        rate_hz: float = 400.0,
        range_g: int = 16,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        epoch: float | None = None,
    ) -> None:
        if float(rate_hz) not in RATE_CODES:
            raise ValueError(f"rate_hz must be one of {sorted(RATE_CODES)}")
        if range_g not in RANGES_G:
            raise ValueError(f"range_g must be one of {sorted(RANGES_G)}")
        self.bus = bus
        self.address = address
        self.rate_hz = float(rate_hz)
        self.bandwidth_hz = self.rate_hz / 2
        self.range_g = range_g
        self.scale = SCALE_G_PER_LSB * STANDARD_GRAVITY
        self._clock = clock
        self._sleep = sleep
        self.epoch = clock() if epoch is None else epoch
        self._anchor = 0.0
        self._count = 0
        self._last_t = float("-inf")

    def _w(self, reg: int, value: int) -> None:
        self.bus.write_byte_data(self.address, reg, value)

    def _r(self, reg: int) -> int:
        return self.bus.read_byte_data(self.address, reg)

    def open(self) -> None:
        devid = self._r(DEVID)
        if devid != DEVID_VALUE:
            raise ChipNotFound(f"ADXL345 DEVID at 0x{self.address:02x} is 0x{devid:02x}, expected 0xe5")
        self._w(POWER_CTL, 0)  # standby while configuring
        self._w(BW_RATE, RATE_CODES[self.rate_hz])
        self._w(DATA_FORMAT, DATA_FULL_RES | RANGES_G[self.range_g])
        self._restart_fifo()
        self._w(POWER_CTL, POWER_MEASURE)

    def _restart_fifo(self) -> None:
        self._w(FIFO_CTL, 0)  # bypass mode empties the FIFO
        # Reading the data registers clears a stale Overrun (e.g. from before a reopen).
        self.bus.read_i2c_block_data(self.address, DATAX0, 6)
        self._w(FIFO_CTL, FIFO_MODE_STREAM | 16)  # watermark at half depth
        self._anchor = self._clock() - self.epoch
        self._count = 0

    def read(self) -> list[AccelSample]:
        overrun = bool(self._r(INT_SOURCE) & INT_OVERRUN)
        entries = self._r(FIFO_STATUS) & 0x3F
        if overrun:
            # Older samples were overwritten: what is left are the newest ``entries``;
            # re-anchor the sample clock so the loss shows as a gap, not squeezed time.
            # Never before what was already reported: time only runs forward.
            self._anchor = max(self._clock() - self.epoch - entries / self.rate_hz, self._last_t)
            self._count = 0
        out = []
        s = self.scale
        for _ in range(entries):
            raw = self.bus.read_i2c_block_data(self.address, DATAX0, 6)
            x = int.from_bytes(bytes(raw[0:2]), "little", signed=True)
            y = int.from_bytes(bytes(raw[2:4]), "little", signed=True)
            z = int.from_bytes(bytes(raw[4:6]), "little", signed=True)
            self._count += 1
            out.append(AccelSample(self._anchor + self._count / self.rate_hz, x * s, y * s, z * s))
        if out:
            self._last_t = out[-1].t
        if overrun:
            raise FifoOverflow("ADXL345 FIFO overrun (32 entries); older samples lost", out)
        return out

    def close(self) -> None:
        try:
            self._w(POWER_CTL, 0)
        except OSError:
            pass
