"""The Linux IIO accelerometer reader against a fake sysfs tree and character device."""

from __future__ import annotations

import os
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from device.accel import DeviceFault, ResilientAccel
from device.accel.iio import IioAccel, parse_scan_type, scan_layout
from device.emulators import VirtualClock
from device.emulators.iio import encode_value, make_iio_tree, pack_scans


def test_parse_scan_type_forms():
    st_ = parse_scan_type("le:s12/16>>4")
    assert (st_.big_endian, st_.signed, st_.bits, st_.storage_bits, st_.shift, st_.repeat) == (False, True, 12, 16, 4, 1)
    assert parse_scan_type("be:u10/16>>6").big_endian
    assert parse_scan_type("le:s16/32X3>>0").repeat == 3
    for bad in ("le:s12/12>>", "xx:s12/16>>4", "le:s17/16>>0", "le:s12/12>>0 junk"):
        with pytest.raises(ValueError):
            parse_scan_type(bad)


def test_decode_sign_extends_after_shift():
    st_ = parse_scan_type("le:s12/16>>4")
    assert st_.decode((0xFFF0).to_bytes(2, "little")) == -1
    assert st_.decode((0x7FF0 | 0x000F).to_bytes(2, "little")) == 2047  # low pad bits ignored
    assert parse_scan_type("be:u10/16>>6").decode((0x3FF << 6).to_bytes(2, "big")) == 1023


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["le:s12/16>>4", "be:s13/16>>3", "le:s16/16>>0", "le:s20/32>>4", "be:s10/16>>6"]),
       st.integers(-512, 511))
def test_encode_decode_roundtrip(type_text, value):
    st_ = parse_scan_type(type_text)
    assert st_.decode(encode_value(value, type_text)) == value


def test_layout_aligns_each_element_to_its_size():
    s16, s64 = parse_scan_type("le:s16/16>>0"), parse_scan_type("le:s64/64>>0")
    layout, size = scan_layout([("accel_x", 0, s16), ("accel_y", 1, s16), ("accel_z", 2, s16), ("timestamp", 3, s64)])
    assert [e.offset for e in layout] == [0, 2, 4, 8]
    assert size == 16
    layout, size = scan_layout([("accel_z", 2, s16), ("accel_x", 0, s16), ("accel_y", 1, s16)])
    assert [e.name for e in layout] == ["accel_x", "accel_y", "accel_z"] and size == 6


def test_sysfs_channels(tmp_path):
    d = make_iio_tree(tmp_path, raw=(10, -20, 256), offsets=(0, 5, 0), scale=0.0383)
    acc = IioAccel(d, buffered=False, clock=VirtualClock(), epoch=0.0)
    acc.open()
    s = acc.read()[0]
    assert (s.ax, s.ay, s.az) == pytest.approx((10 * 0.0383, -15 * 0.0383, 256 * 0.0383))
    assert acc.rate_hz == 400.0


def test_buffered_read_from_character_device_file(tmp_path):
    type_text = "le:s12/16>>4"
    d = make_iio_tree(tmp_path, scan_type=type_text, indices=(2, 0, 1), per_axis_scale=True, scale=0.0479)
    counts = [(i, -i, 200 + i) for i in range(50)]
    dev = tmp_path / "dev-iio0"
    dev.write_bytes(pack_scans(counts, scan_type=type_text, indices=(2, 0, 1), timestamps=range(50)))
    acc = IioAccel(d, dev_path=dev, rate_hz=400, clock=VirtualClock(), epoch=0.0)
    acc.open()
    assert (d / "buffer" / "enable").read_text().strip() == "1"
    assert (d / "scan_elements" / "in_accel_x_en").read_text().strip() == "1"
    assert (d / "scan_elements" / "in_timestamp_en").read_text().strip() == "0"  # we disabled it
    # The file holds scans with the timestamp (16 bytes); a kernel would now send 6-byte
    # scans, so write those the same way the kernel lays them out.
    dev.write_bytes(pack_scans(counts, scan_type=type_text, indices=(2, 0, 1)))
    acc.close()
    acc.open()
    got = acc.read()
    assert len(got) == 50
    for (x, y, z), s in zip(counts, got):
        assert (s.ax, s.ay, s.az) == pytest.approx((x * 0.0479, y * 0.0479, z * 0.0479))
    assert [round(s.t, 6) for s in got[:3]] == [0.0025, 0.005, 0.0075]
    acc.close()
    assert (d / "buffer" / "enable").read_text().strip() == "0"


def test_buffered_read_through_a_fifo_keeps_partial_scans(tmp_path):
    d = make_iio_tree(tmp_path, timestamp=False)
    fifo = tmp_path / "iio-fifo"
    os.mkfifo(fifo)
    data = pack_scans([(1, 2, 3), (4, 5, 6), (7, 8, 9)])
    writer_ready = threading.Event()

    def writer():
        fd = os.open(fifo, os.O_WRONLY)  # blocks until the reader opens
        writer_ready.set()
        os.write(fd, data[:8])  # a scan and a third
        second.wait(5)
        os.write(fd, data[8:])
        os.close(fd)

    second = threading.Event()
    th = threading.Thread(target=writer)
    th.start()
    acc = IioAccel(d, dev_path=fifo, clock=VirtualClock(), epoch=0.0)
    acc.open()
    writer_ready.wait(5)
    first = []
    for _ in range(200):
        first = acc.read()
        if first:
            break
        threading.Event().wait(0.005)
    assert len(first) == 1 and first[0].ax == pytest.approx(1 * 0.038312)
    second.set()
    th.join(5)
    rest = acc.read()
    assert [round(s.az / 0.038312) for s in rest] == [6, 9]
    acc.close()


def test_missing_device_is_a_fault_not_a_crash(tmp_path):
    clock = VirtualClock()
    reader = ResilientAccel(lambda: IioAccel(tmp_path / "iio:device9", clock=clock), clock=clock)
    samples, events = reader.poll()
    assert samples == [] and events[0]["fault"] == "reopen-failed"
    with pytest.raises(DeviceFault):
        IioAccel(tmp_path / "nope").open()
