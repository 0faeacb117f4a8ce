"""A fake Linux IIO accelerometer: a sysfs-like directory and a "character device"
file holding packed scans, laid out exactly as the kernel does (see
:func:`device.accel.iio.scan_layout`)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from device.accel.iio import parse_scan_type, scan_layout


def make_iio_tree(
    root: Path,
    *,
    name: str = "iio:device0",
    driver_name: str = "adxl345",
    scale: float = 0.038312,
    offsets: tuple[int, int, int] = (0, 0, 0),
    raw: tuple[int, int, int] = (0, 0, 256),
    sampling_frequency: float = 400.0,
    scan_type: str = "le:s13/16>>0",
    indices: tuple[int, int, int] = (0, 1, 2),
    timestamp: bool = True,
    per_axis_scale: bool = False,
) -> Path:
    """Create ``root/<name>`` with channels, scan_elements and buffer attributes."""
    d = root / name
    (d / "scan_elements").mkdir(parents=True)
    (d / "buffer").mkdir()
    (d / "name").write_text(driver_name + "\n")
    if per_axis_scale:
        for a in "xyz":
            (d / f"in_accel_{a}_scale").write_text(f"{scale:.9f}\n")
    else:
        (d / "in_accel_scale").write_text(f"{scale:.9f}\n")
    for a, off, r in zip("xyz", offsets, raw):
        (d / f"in_accel_{a}_raw").write_text(f"{r}\n")
        if off:
            (d / f"in_accel_{a}_offset").write_text(f"{off}\n")
    (d / "sampling_frequency").write_text(f"{sampling_frequency:g}\n")
    for a, idx in zip("xyz", indices):
        (d / "scan_elements" / f"in_accel_{a}_en").write_text("0\n")
        (d / "scan_elements" / f"in_accel_{a}_index").write_text(f"{idx}\n")
        (d / "scan_elements" / f"in_accel_{a}_type").write_text(scan_type + "\n")
    if timestamp:
        (d / "scan_elements" / "in_timestamp_en").write_text("1\n")
        (d / "scan_elements" / "in_timestamp_index").write_text(f"{max(indices) + 1}\n")
        (d / "scan_elements" / "in_timestamp_type").write_text("le:s64/64>>0\n")
    (d / "buffer" / "enable").write_text("0\n")
    (d / "buffer" / "length").write_text("2\n")
    return d


def encode_value(value: int, type_text: str) -> bytes:
    st = parse_scan_type(type_text)
    mask = (1 << st.bits) - 1
    word = (value & mask) << st.shift
    return word.to_bytes(st.storage_bytes, "big" if st.big_endian else "little")


def pack_scans(
    counts: Iterable[tuple[int, int, int]],
    *,
    scan_type: str = "le:s13/16>>0",
    indices: tuple[int, int, int] = (0, 1, 2),
    timestamps: Iterable[int] | None = None,
) -> bytes:
    """Bytes of consecutive scans for the enabled x/y/z (and timestamp, if given)."""
    st = parse_scan_type(scan_type)
    elements = [(f"accel_{a}", i, st) for a, i in zip("xyz", indices)]
    ts_iter = iter(timestamps) if timestamps is not None else None
    if ts_iter is not None:
        elements.append(("timestamp", max(indices) + 1, parse_scan_type("le:s64/64>>0")))
    layout, size = scan_layout(elements)
    out = bytearray()
    for xyz in counts:
        scan = bytearray(size)
        vals = dict(zip(("accel_x", "accel_y", "accel_z"), xyz))
        if ts_iter is not None:
            vals["timestamp"] = next(ts_iter)
        for el in layout:
            text = "le:s64/64>>0" if el.name == "timestamp" else scan_type
            b = encode_value(vals[el.name], text)
            scan[el.offset : el.offset + len(b)] = b
        out += scan
    return bytes(out)
