"""MPU-6050 / ADXL345 drivers against register-level emulators, and fault handling."""

from __future__ import annotations

import errno
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from device.accel import STANDARD_GRAVITY, ChipNotFound, FifoOverflow, ResilientAccel
from device.accel import adxl345 as adxl_regs
from device.accel import mpu6050 as mpu_regs
from device.accel.adxl345 import Adxl345
from device.accel.mpu6050 import Mpu6050
from device.emulators import TraceSignal, VirtualClock
from device.emulators.adxl345 import Adxl345Emulator
from device.emulators.mpu6050 import Mpu6050Emulator
from device.emulators.smbus import EmulatedBus


def _ramp_signal() -> TraceSignal:
    t = np.arange(0, 5, 0.0005)
    acc = np.stack([0.8 * np.sin(2 * np.pi * 3 * t), 0.5 * t - 1.0, 9.80665 + 0.2 * np.cos(2 * np.pi * 7 * t)], 1)
    return TraceSignal(t, acc)


def _rig(kind: str, signal: TraceSignal | None = None):
    clock = VirtualClock()
    bus = EmulatedBus(clock)
    signal = signal or _ramp_signal()
    if kind == "mpu6050":
        chip = bus.attach(Mpu6050Emulator(signal, clock))
        drv = Mpu6050(bus, clock=clock, sleep=clock.sleep, epoch=0.0)
    else:
        chip = bus.attach(Adxl345Emulator(signal, clock))
        drv = Adxl345(bus, clock=clock, sleep=clock.sleep, epoch=0.0)
    return clock, bus, chip, drv, signal


class RecordingBus(EmulatedBus):
    def __init__(self, clock):
        super().__init__(clock)
        self.log: list[tuple[str, int, int]] = []

    def write_byte_data(self, a, r, v, force=None):
        self.log.append(("w", r, v))
        super().write_byte_data(a, r, v)

    def read_i2c_block_data(self, a, r, n, force=None):
        self.log.append(("rb", r, n))
        return super().read_i2c_block_data(a, r, n)


def test_mpu6050_configures_rate_range_fifo():
    clock = VirtualClock()
    bus = RecordingBus(clock)
    chip = bus.attach(Mpu6050Emulator(_ramp_signal(), clock))
    drv = Mpu6050(bus, rate_hz=500, range_g=8, dlpf_cfg=1, clock=clock, sleep=clock.sleep)
    drv.open()
    writes = {r: v for op, r, v in bus.log if op == "w"}
    assert writes[mpu_regs.CONFIG] == 1  # DLPF 184 Hz -> 1 kHz base rate
    assert writes[mpu_regs.SMPLRT_DIV] == 1  # 1 kHz / (1 + 1) = 500 Hz
    assert writes[mpu_regs.ACCEL_CONFIG] == 2 << 3  # AFS_SEL 2 = +-8 g
    assert writes[mpu_regs.FIFO_EN] == mpu_regs.FIFO_EN_ACCEL
    assert chip.odr() == 500.0 and drv.rate_hz == 500.0
    assert drv.scale == pytest.approx(STANDARD_GRAVITY / 4096)
    clock.sleep(0.2)
    samples = drv.read()
    assert len(samples) == 100
    # bursts from FIFO_R_W stay within SMBus's 32 bytes and keep whole samples
    bursts = [n for op, r, n in bus.log if op == "rb" and r == mpu_regs.FIFO_R_W]
    assert bursts and max(bursts) <= 32 and all(n % 6 == 0 for n in bursts)


@pytest.mark.parametrize("kind", ["mpu6050", "adxl345"])
def test_driver_reads_the_trace_at_the_chip_rate(kind):
    clock, bus, chip, drv, signal = _rig(kind)
    drv.open()
    got = []
    for _ in range(50):
        clock.sleep(0.02)
        got += drv.read()
    rate = drv.rate_hz
    assert len(got) == pytest.approx(rate * 1.0, abs=2)
    t = np.array([s.t for s in got])
    assert np.allclose(np.diff(t), 1 / rate)
    lsb = drv.scale
    start = chip._first_start
    for s in got[::37]:
        want = signal.at(s.t - start)
        assert abs(s.ax - want[0]) <= lsb and abs(s.ay - want[1]) <= lsb and abs(s.az - want[2]) <= lsb


def test_adxl345_configures_full_resolution_and_stream_fifo():
    clock = VirtualClock()
    bus = RecordingBus(clock)
    chip = bus.attach(Adxl345Emulator(_ramp_signal(), clock))
    drv = Adxl345(bus, rate_hz=800, range_g=16, clock=clock, sleep=clock.sleep)
    drv.open()
    writes = {r: v for op, r, v in bus.log if op == "w"}
    assert writes[adxl_regs.BW_RATE] == 0x0D  # 800 Hz
    assert writes[adxl_regs.DATA_FORMAT] == adxl_regs.DATA_FULL_RES | 3
    assert writes[adxl_regs.FIFO_CTL] >> 6 == 2  # stream
    assert writes[adxl_regs.POWER_CTL] == adxl_regs.POWER_MEASURE
    assert chip.odr() == 800.0
    clock.sleep(0.03)
    assert len(drv.read()) == 24


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["mpu6050", "adxl345"]),
       st.lists(st.tuples(*[st.floats(-30, 30)] * 3), min_size=2, max_size=30))
def test_conversion_roundtrip_within_one_lsb(kind, values):
    """Any acceleration in range comes back within one LSB of the datasheet scale."""
    acc = np.array(values)
    t = np.arange(len(acc)) * 0.5  # slow trace: each value held long enough
    signal = TraceSignal(t, acc)
    clock, bus, chip, drv, _ = _rig(kind, signal)
    drv.open()
    clock.sleep(0.004)
    s = drv.read()[-1]
    want = signal.at(s.t - chip._first_start)
    assert abs(s.ax - want[0]) <= drv.scale and abs(s.ay - want[1]) <= drv.scale and abs(s.az - want[2]) <= drv.scale


@pytest.mark.parametrize("kind,cls", [("mpu6050", Mpu6050), ("adxl345", Adxl345)])
def test_wrong_identity_is_reported(kind, cls):
    clock = VirtualClock()
    bus = EmulatedBus(clock)
    if kind == "mpu6050":
        bus.attach(Mpu6050Emulator(TraceSignal.still(), clock, who_am_i=0x70))
    else:
        bus.attach(Adxl345Emulator(TraceSignal.still(), clock, devid=0x00))
    with pytest.raises(ChipNotFound):
        cls(bus, clock=clock, sleep=clock.sleep).open()


@pytest.mark.parametrize("kind", ["mpu6050", "adxl345"])
def test_fifo_overflow_is_detected_and_recovered(kind):
    clock, bus, chip, drv, _ = _rig(kind)
    drv.open()
    clock.sleep(0.01)
    drv.read()
    chip.force_overflow()
    with pytest.raises(FifoOverflow):
        drv.read()
    clock.sleep(0.04)
    after = drv.read()  # FIFO aligned again: values are sane
    assert after and all(abs(s.az - 9.8) < 0.5 for s in after)


@pytest.mark.parametrize("kind", ["mpu6050", "adxl345"])
def test_mpu_host_falling_behind_overflows_like_the_chip(kind):
    clock, bus, chip, drv, _ = _rig(kind)
    drv.open()
    clock.sleep(5.0)  # 2500 samples: far past either FIFO
    with pytest.raises(FifoOverflow):
        drv.read()
    assert (chip.overflows if kind == "mpu6050" else chip.overruns) > 0


@pytest.mark.parametrize("kind", ["mpu6050", "adxl345"])
def test_resilient_reader_survives_eio_silence_and_overflow(kind):
    clock, bus, chip, _, _ = _rig(kind)
    cls = Mpu6050 if kind == "mpu6050" else Adxl345
    reader = ResilientAccel(lambda: cls(bus, clock=clock, sleep=clock.sleep, epoch=0.0), clock=clock)
    samples, events = [], []

    def step(n=1):
        for _ in range(n):
            clock.sleep(0.02)
            s, e = reader.poll()
            samples.extend(s)
            events.extend(e)

    step(10)
    bus.fail_next(1)  # one EIO glitch: retried at once, no samples lost
    step(5)
    assert [e["fault"] for e in events] == ["io-error"]
    assert events[0]["kind"] == "fault" and "errno 5" in events[0]["detail"]
    before = len(samples)
    bus.stop_answering(chip.address, seconds=0.5)  # the chip stops answering
    step(60)
    kinds = [e["fault"] for e in events]
    assert "no-answer" in kinds and kinds[-1] == "recovered"
    assert "reopen-failed" in kinds
    assert len(samples) > before  # it came back and reads again
    chip.force_overflow()
    step(3)
    assert events[-1]["fault"] == "fifo-overflow"
    step(5)
    assert reader.is_up
    assert all(e["kind"] == "fault" and e["source"] == "accel" for e in events)
    assert all(np.isfinite([s.ax, s.ay, s.az]).all() for s in samples)


def test_resilient_reader_with_no_chip_never_raises():
    clock = VirtualClock()
    bus = EmulatedBus(clock)  # nothing attached
    reader = ResilientAccel(lambda: Mpu6050(bus, clock=clock, sleep=clock.sleep), clock=clock, max_backoff_s=0.4)
    attempts = []
    for _ in range(100):
        clock.sleep(0.05)
        s, e = reader.poll()
        assert s == []
        attempts += [x for x in e if x["fault"] == "reopen-failed"]
    delays = [a["retry_in"] for a in attempts]
    assert delays[:4] == [0.05, 0.1, 0.2, 0.4] and max(delays) == 0.4  # capped backoff


def test_bus_errors_use_linux_errnos():
    clock = VirtualClock()
    bus = EmulatedBus(clock)
    with pytest.raises(OSError) as e:
        bus.read_byte_data(0x68, 0x75)
    assert e.value.errno == errno.EREMOTEIO
    bus.attach(Mpu6050Emulator(TraceSignal.still(), clock))
    bus.fail_next()
    with pytest.raises(OSError) as e:
        bus.read_byte_data(0x68, 0x75)
    assert e.value.errno == errno.EIO
    assert bus.read_byte_data(0x68, 0x75) == 0x68


def test_hardware_libraries_are_not_imported_eagerly():
    code = (
        "import sys, device, device.accel, device.accel.mpu6050, device.accel.adxl345, device.accel.iio, "
        "device.camera, device.stability, device.tracesim, device.emulators.picamera2, "
        "service.commands.record_accel, service.commands.stability;"
        "print('smbus2' in sys.modules, 'picamera2' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
