"""Opening the Block Out! base's accelerometer from a configuration, and streaming it.

:class:`SensorConfig` names the chip and how to reach it; :func:`open_sensor` builds the
driver behind a :class:`~device.accel.ResilientAccel`. With ``emulate`` set to a
``t,ax,ay,az`` trace, the same driver talks to a register-level emulator of the chip
that plays the trace on the given clock: demos and tests of the whole service run
without the hardware, through the real driver code. smbus2 is imported only when a real
I2C bus is opened.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from device.accel import ResilientAccel, open_smbus

SENSORS = ("none", "mpu6050", "adxl345", "iio")
#: the kit's I2C addresses (table-kit.md) and the drivers' default rates and ranges
DEFAULT_ADDRESS = {"mpu6050": 0x68, "adxl345": 0x53}
DEFAULT_RATE_HZ = {"mpu6050": 500.0, "adxl345": 400.0}
DEFAULT_RANGE_G = {"mpu6050": 8, "adxl345": 16}


@dataclass(frozen=True)
class SensorConfig:
    """The base's accelerometer. ``kind`` ``none``: no sensor at this table."""

    kind: str = "none"
    bus: int = 1
    address: int | None = None
    rate_hz: float | None = None
    range_g: int | None = None
    iio_device: str = "/sys/bus/iio/devices/iio:device0"
    iio_dev: str | None = None
    #: seconds between FIFO reads (the FIFOs hold about 0.5 s at the default rates)
    poll_s: float = 0.02
    #: a recorded or simulated trace that an emulated chip plays instead of the hardware
    emulate: str = ""

    def __post_init__(self) -> None:
        if self.kind not in SENSORS:
            raise ValueError(f"sensor kind {self.kind!r} is not one of {list(SENSORS)}")
        if self.emulate and self.kind not in DEFAULT_ADDRESS:
            raise ValueError("an emulated sensor is an mpu6050 or an adxl345")
        if self.poll_s <= 0:
            raise ValueError("the sensor's poll interval must be positive")

    @property
    def i2c_address(self) -> int:
        return self.address if self.address is not None else DEFAULT_ADDRESS[self.kind]


@dataclass
class Sensor:
    """An opened sensor: the resilient reader, and the emulated bus and chip when emulated."""

    reader: ResilientAccel
    config: SensorConfig
    bus: Any = None
    chip: Any = None


def open_sensor(config: SensorConfig, *, clock: Callable[[], float] = time.monotonic,
                sleep: Callable[[float], None] = time.sleep) -> Sensor:
    """The sensor of ``config``, its samples timed from now on ``clock``."""
    if config.kind == "none":
        raise ValueError("no sensor is configured")
    bus = chip = None
    if config.emulate:
        bus, chip = _emulated(config, clock)
    epoch = clock()
    sensor = Sensor(None, config, bus, chip)  # type: ignore[arg-type]

    def make_driver() -> Any:
        if config.kind == "iio":
            from device.accel.iio import IioAccel

            return IioAccel(config.iio_device, dev_path=config.iio_dev, rate_hz=config.rate_hz, clock=clock, epoch=epoch)
        if sensor.bus is None or getattr(sensor.bus, "closed", False):
            sensor.bus = open_smbus(config.bus)
        rate = config.rate_hz or DEFAULT_RATE_HZ[config.kind]
        range_g = config.range_g or DEFAULT_RANGE_G[config.kind]
        if config.kind == "mpu6050":
            from device.accel.mpu6050 import Mpu6050

            return Mpu6050(sensor.bus, config.i2c_address, rate_hz=rate, range_g=range_g, clock=clock, sleep=sleep,
                           epoch=epoch)
        from device.accel.adxl345 import Adxl345

        return Adxl345(sensor.bus, config.i2c_address, rate_hz=rate, range_g=range_g, clock=clock, sleep=sleep,
                       epoch=epoch)

    sensor.reader = ResilientAccel(make_driver, clock=clock)
    return sensor


def _emulated(config: SensorConfig, clock: Callable[[], float]) -> tuple[Any, Any]:
    import numpy as np

    from device.accelcsv import read_csv
    from device.emulators import TraceSignal
    from device.emulators.smbus import EmulatedBus

    rows = np.asarray(list(read_csv(config.emulate)))
    if not len(rows):
        raise ValueError(f"{config.emulate}: no samples")
    start = clock()
    signal = TraceSignal(rows[:, 0] - rows[0, 0], rows[:, 1:])
    bus = EmulatedBus(lambda: clock() - start)
    if config.kind == "mpu6050":
        from device.emulators.mpu6050 import Mpu6050Emulator

        chip = bus.attach(Mpu6050Emulator(signal, lambda: clock() - start, config.i2c_address, world_time=True))
    else:
        from device.emulators.adxl345 import Adxl345Emulator

        chip = bus.attach(Adxl345Emulator(signal, lambda: clock() - start, config.i2c_address, world_time=True))
    return bus, chip


def stream(sensor: Sensor, *, stopped: Callable[[], bool] = lambda: False,
           sleep: Callable[[float], None] = time.sleep) -> Iterator[tuple[float, float, float, float] | dict[str, Any]]:
    """Samples as ``(t, ax, ay, az)`` and the reader's ``fault`` events, until ``stopped()``."""
    try:
        while not stopped():
            samples, events = sensor.reader.poll()
            yield from events
            for s in samples:
                yield (s.t, s.ax, s.ay, s.az)
            sleep(sensor.config.poll_s)
    finally:
        sensor.reader.close()
