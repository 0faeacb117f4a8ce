"""Accelerometers exposed by the Linux IIO subsystem.

Two ways in, both with configurable paths so tests can use a fake tree:

- sysfs channels (``in_accel_x_raw`` ...), one sample per read, value
  ``(raw + offset) * scale`` in m/s^2 (the IIO ABI's unit for acceleration);
- the buffered character device ``/dev/iio:deviceN``: channels enabled through
  ``scan_elements/*_en``, laid out by ``*_index`` and decoded by ``*_type``
  (``[be|le]:[s|u]bits/storagebits[Xrepeat][>>shift]``), each element aligned to its
  own storage size, as the kernel's buffer code does.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from device.accel import AccelSample, DeviceFault

AXES = ("x", "y", "z")
_TYPE_RE = re.compile(r"^(be|le):([su])(\d+)/(\d+)(?:X(\d+))?>>(\d+)$")


@dataclass(frozen=True)
class ScanType:
    """A decoded ``scan_elements/*_type`` string."""

    big_endian: bool
    signed: bool
    bits: int
    storage_bits: int
    shift: int
    repeat: int = 1

    @property
    def storage_bytes(self) -> int:
        return self.storage_bits // 8

    def decode(self, raw: bytes) -> int:
        value = int.from_bytes(raw, "big" if self.big_endian else "little", signed=False)
        value >>= self.shift
        value &= (1 << self.bits) - 1
        if self.signed and value & (1 << (self.bits - 1)):
            value -= 1 << self.bits
        return value


def parse_scan_type(text: str) -> ScanType:
    m = _TYPE_RE.match(text.strip())
    if not m:
        raise ValueError(f"unrecognised IIO scan type {text!r}")
    endian, sign, bits, storage, repeat, shift = m.groups()
    st = ScanType(endian == "be", sign == "s", int(bits), int(storage), int(shift), int(repeat or 1))
    if st.storage_bits % 8 or st.bits > st.storage_bits or st.storage_bits == 0:
        raise ValueError(f"inconsistent IIO scan type {text!r}")
    return st


@dataclass(frozen=True)
class ScanElement:
    name: str  # e.g. "accel_x", "timestamp"
    index: int
    type: ScanType
    offset: int  # byte offset inside one scan


def scan_layout(elements: list[tuple[str, int, ScanType]]) -> tuple[list[ScanElement], int]:
    """Byte offsets of enabled elements in index order, each naturally aligned; the
    scan is padded to a multiple of its largest element."""
    offset = 0
    largest = 1
    out = []
    for name, index, st in sorted(elements, key=lambda e: e[1]):
        size = st.storage_bytes * st.repeat
        align = st.storage_bytes
        largest = max(largest, align)
        offset = (offset + align - 1) // align * align
        out.append(ScanElement(name, index, st, offset))
        offset += size
    total = (offset + largest - 1) // largest * largest
    return out, total


def _read_text(path: Path) -> str:
    return path.read_text().strip()


def _read_float(path: Path, default: float | None = None) -> float:
    try:
        return float(_read_text(path))
    except FileNotFoundError:
        if default is None:
            raise
        return default


class IioAccel:
    """An IIO accelerometer, ``device_dir`` being e.g. ``/sys/bus/iio/devices/iio:device0``.

    ``read()`` uses the buffered character device when ``buffered`` is true (``dev_path``
    defaults to ``/dev/<name of device_dir>``), else one sysfs sample per call.
    """

    def __init__(
        self,
        device_dir: str | os.PathLike[str],
        *,
        buffered: bool = True,
        dev_path: str | os.PathLike[str] | None = None,
        rate_hz: float | None = None,
        buffer_length: int = 256,
        clock: Callable[[], float] = time.monotonic,
        epoch: float | None = None,
    ) -> None:
        self.dir = Path(device_dir)
        self.buffered = buffered
        self.dev_path = Path(dev_path) if dev_path else Path("/dev") / self.dir.name
        self.requested_rate = rate_hz
        self.buffer_length = buffer_length
        self._clock = clock
        self.epoch = clock() if epoch is None else epoch
        self.rate_hz = 0.0
        self.scales: dict[str, float] = {}
        self.offsets: dict[str, float] = {}
        self._fd: int | None = None
        self._layout: list[ScanElement] = []
        self._scan_bytes = 0
        self._pending = b""
        self._count = 0
        self._anchor = 0.0

    # -- sysfs attributes ---------------------------------------------------------
    def _attr(self, *names: str) -> Path | None:
        for n in names:
            p = self.dir / n
            if p.exists():
                return p
        return None

    def _write(self, path: Path, value: str) -> None:
        path.write_text(value)

    def open(self) -> None:
        if not self.dir.is_dir():
            raise DeviceFault(f"no IIO device at {self.dir}")
        for axis in AXES:
            scale = self._attr(f"in_accel_{axis}_scale", "in_accel_scale")
            if scale is None or self._attr(f"in_accel_{axis}_raw") is None and not self.buffered:
                raise DeviceFault(f"{self.dir} has no accel {axis} channel")
            self.scales[axis] = _read_float(scale)
            off = self._attr(f"in_accel_{axis}_offset", "in_accel_offset")
            self.offsets[axis] = _read_float(off) if off else 0.0
        freq = self._attr("in_accel_sampling_frequency", "sampling_frequency")
        if freq is not None and self.requested_rate is not None:
            try:
                self._write(freq, f"{self.requested_rate:g}")
            except OSError:
                pass  # some drivers offer fixed rates; we read back what applies
        self.rate_hz = _read_float(freq, 0.0) if freq else 0.0
        if self.buffered:
            self._open_buffer()
        self._anchor = self._clock() - self.epoch
        self._count = 0

    def _open_buffer(self) -> None:
        scan = self.dir / "scan_elements"
        if not scan.is_dir():
            raise DeviceFault(f"{self.dir} has no scan_elements (no buffer support)")
        buf = self.dir / "buffer"
        enable = buf / "enable"
        if enable.exists() and _read_text(enable) == "1":
            self._write(enable, "0")  # element changes are refused while enabled
        elements: list[tuple[str, int, ScanType]] = []
        for en in sorted(scan.glob("in_*_en")):
            name = en.name[3:-3]
            want = name in ("accel_x", "accel_y", "accel_z")
            self._write(en, "1" if want else "0")
            if want:
                index = int(_read_text(scan / f"in_{name}_index"))
                st = parse_scan_type(_read_text(scan / f"in_{name}_type"))
                elements.append((name, index, st))
        if len(elements) != 3:
            raise DeviceFault(f"{self.dir} buffer lacks accel x/y/z scan elements")
        self._layout, self._scan_bytes = scan_layout(elements)
        if (buf / "length").exists():
            self._write(buf / "length", str(self.buffer_length))
        if enable.exists():
            self._write(enable, "1")
        try:
            self._fd = os.open(self.dev_path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as exc:
            raise DeviceFault(f"cannot open {self.dev_path}: {exc}") from exc

    def _convert(self, axis: str, raw: float) -> float:
        return (raw + self.offsets[axis]) * self.scales[axis]

    def _next_t(self) -> float:
        self._count += 1
        if self.rate_hz > 0:
            return self._anchor + self._count / self.rate_hz
        return self._clock() - self.epoch

    def read(self) -> list[AccelSample]:
        if not self.buffered:
            vals = [self._convert(a, float(_read_text(self.dir / f"in_accel_{a}_raw"))) for a in AXES]
            return [AccelSample(self._next_t(), *vals)]
        assert self._fd is not None, "open() first"
        chunks = []
        while True:
            try:
                data = os.read(self._fd, 4096)
            except BlockingIOError:
                break
            if not data:
                break
            chunks.append(data)
            if len(data) < 4096:
                break
        data = self._pending + b"".join(chunks)
        n = len(data) // self._scan_bytes
        self._pending = data[n * self._scan_bytes :]
        out = []
        for i in range(n):
            scan = data[i * self._scan_bytes : (i + 1) * self._scan_bytes]
            vals = {}
            for el in self._layout:
                raw = scan[el.offset : el.offset + el.type.storage_bytes]
                vals[el.name[-1]] = self._convert(el.name[-1], el.type.decode(raw))
            out.append(AccelSample(self._next_t(), vals["x"], vals["y"], vals["z"]))
        return out

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        enable = self.dir / "buffer" / "enable"
        if self.buffered and enable.exists():
            try:
                self._write(enable, "0")
            except OSError:
                pass
