"""InvenSense MPU-6050 accelerometer over I2C, read through its FIFO.

Register map and scales from the MPU-6000/6050 Register Map and Product
Specification (RM-MPU-6000A, PS-MPU-6000A). Only the accelerometer is used: the FIFO
carries ACCEL_XOUT_H..ACCEL_ZOUT_L, six big-endian bytes per sample.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from device.accel import STANDARD_GRAVITY, AccelSample, ChipNotFound, FifoOverflow

DEFAULT_ADDRESS = 0x68

SMPLRT_DIV = 0x19
CONFIG = 0x1A
ACCEL_CONFIG = 0x1C
FIFO_EN = 0x23
INT_ENABLE = 0x38
INT_STATUS = 0x3A
USER_CTRL = 0x6A
PWR_MGMT_1 = 0x6B
FIFO_COUNTH = 0x72
FIFO_R_W = 0x74
WHO_AM_I = 0x75

WHO_AM_I_VALUE = 0x68
PWR_DEVICE_RESET = 0x80
PWR_CLKSEL_PLL_XGYRO = 0x01  # SLEEP cleared; gyro PLL is the recommended clock
FIFO_EN_ACCEL = 0x08
USER_FIFO_EN = 0x40
USER_FIFO_RESET = 0x04
INT_FIFO_OFLOW = 0x10
FIFO_SIZE = 1024
BYTES_PER_SAMPLE = 6
# SMBus block transfers carry at most 32 bytes; 30 keeps whole samples per transfer.
CHUNK = 30

# AFS_SEL (ACCEL_CONFIG bits 4:3) -> LSB per g.
RANGES_G = {2: (0, 16384.0), 4: (1, 8192.0), 8: (2, 4096.0), 16: (3, 2048.0)}
# DLPF_CFG (CONFIG bits 2:0) -> accelerometer bandwidth in Hz.
DLPF_ACCEL_BANDWIDTH_HZ = {0: 260.0, 1: 184.0, 2: 94.0, 3: 44.0, 4: 21.0, 5: 10.0, 6: 5.0}


def gyro_output_rate_hz(dlpf_cfg: int) -> float:
    """Sample rate = gyro output rate / (1 + SMPLRT_DIV); 8 kHz without the DLPF, else 1 kHz."""
    return 8000.0 if dlpf_cfg in (0, 7) else 1000.0


def divider_for(rate_hz: float, dlpf_cfg: int) -> int:
    base = gyro_output_rate_hz(dlpf_cfg)
    return max(0, min(255, round(base / rate_hz) - 1))


class Mpu6050:
    """MPU-6050 accelerometer through the FIFO.

    ``bus`` is anything with smbus2's ``read_byte_data``/``write_byte_data``/
    ``read_i2c_block_data``/``write_i2c_block_data``. Sample times come from a sample
    counter at the configured rate, anchored to ``clock()`` when the FIFO is (re)started,
    so they are evenly spaced and a FIFO reset shows up as a gap. Default +-8 g: a
    block landing on the base reaches several g (a 2 g range would clip it).
    """

    def __init__(
        self,
        bus: Any,
        address: int = DEFAULT_ADDRESS,
        *,
        rate_hz: float = 500.0,
        range_g: int = 8,
        dlpf_cfg: int = 1,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        epoch: float | None = None,
    ) -> None:
        if range_g not in RANGES_G:
            raise ValueError(f"range_g must be one of {sorted(RANGES_G)}")
        if dlpf_cfg not in DLPF_ACCEL_BANDWIDTH_HZ:
            raise ValueError("dlpf_cfg must be 0..6")
        self.bus = bus
        self.address = address
        self.range_g = range_g
        self.dlpf_cfg = dlpf_cfg
        self.divider = divider_for(rate_hz, dlpf_cfg)
        self.rate_hz = gyro_output_rate_hz(dlpf_cfg) / (1 + self.divider)
        self.bandwidth_hz = DLPF_ACCEL_BANDWIDTH_HZ[dlpf_cfg]
        self.scale = STANDARD_GRAVITY / RANGES_G[range_g][1]  # m/s^2 per LSB
        self._clock = clock
        self._sleep = sleep
        self.epoch = clock() if epoch is None else epoch
        self._anchor = 0.0
        self._count = 0

    def _w(self, reg: int, value: int) -> None:
        self.bus.write_byte_data(self.address, reg, value)

    def _r(self, reg: int) -> int:
        return self.bus.read_byte_data(self.address, reg)

    def open(self) -> None:
        who = self._r(WHO_AM_I)
        if who != WHO_AM_I_VALUE:
            raise ChipNotFound(f"MPU-6050 WHO_AM_I at 0x{self.address:02x} is 0x{who:02x}, expected 0x68")
        self._w(PWR_MGMT_1, PWR_DEVICE_RESET)
        self._sleep(0.1)  # the reset takes up to 100 ms
        self._w(PWR_MGMT_1, PWR_CLKSEL_PLL_XGYRO)
        self._w(CONFIG, self.dlpf_cfg)
        self._w(SMPLRT_DIV, self.divider)
        self._w(ACCEL_CONFIG, RANGES_G[self.range_g][0] << 3)
        self._w(INT_ENABLE, INT_FIFO_OFLOW)
        self._w(FIFO_EN, FIFO_EN_ACCEL)
        self._restart_fifo()

    def _restart_fifo(self) -> None:
        self._w(USER_CTRL, 0)
        self._w(USER_CTRL, USER_FIFO_RESET)
        self._w(USER_CTRL, USER_FIFO_EN)
        self._r(INT_STATUS)  # reading clears a stale overflow flag
        self._anchor = self._clock() - self.epoch
        self._count = 0

    def fifo_count(self) -> int:
        hi, lo = self.bus.read_i2c_block_data(self.address, FIFO_COUNTH, 2)
        return (hi << 8) | lo

    def read(self) -> list[AccelSample]:
        """Drain whole samples from the FIFO. Raises FifoOverflow after resetting it."""
        if self._r(INT_STATUS) & INT_FIFO_OFLOW:
            self._restart_fifo()
            raise FifoOverflow("MPU-6050 FIFO overflowed (1024 bytes); FIFO reset, samples lost")
        count = self.fifo_count()
        if count > FIFO_SIZE:
            self._restart_fifo()
            raise FifoOverflow(f"MPU-6050 FIFO count {count} out of range; FIFO reset")
        usable = count - count % BYTES_PER_SAMPLE
        raw = bytearray()
        while len(raw) < usable:
            n = min(CHUNK, usable - len(raw))
            raw.extend(self.bus.read_i2c_block_data(self.address, FIFO_R_W, n))
        return self._decode(raw)

    def _decode(self, raw: bytes | bytearray) -> list[AccelSample]:
        out = []
        s = self.scale
        for i in range(0, len(raw) - len(raw) % BYTES_PER_SAMPLE, BYTES_PER_SAMPLE):
            x = int.from_bytes(raw[i : i + 2], "big", signed=True)
            y = int.from_bytes(raw[i + 2 : i + 4], "big", signed=True)
            z = int.from_bytes(raw[i + 4 : i + 6], "big", signed=True)
            self._count += 1
            out.append(AccelSample(self._anchor + self._count / self.rate_hz, x * s, y * s, z * s))
        return out

    def close(self) -> None:
        try:
            self._w(USER_CTRL, 0)
            self._w(PWR_MGMT_1, 0x40)  # SLEEP
        except OSError:
            pass
