"""``bloxcam stability`` and ``bloxcam record-accel`` (through the emulated chips)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from device.accelcsv import read_csv
from service.cli import main

FIX = Path(__file__).parent / "fixtures" / "blockout" / "fall-during-count"


def test_stability_prints_events_as_json_lines(capsys):
    assert main(["stability", str(FIX / "accel.csv")]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    truth = [json.loads(x) for x in (FIX / "truth.jsonl").read_text().splitlines()]
    assert [e["event"] for e in lines] == [e["event"] for e in truth]
    assert all(e["kind"] == "stability" for e in lines)


def test_stability_accepts_a_fixture_folder_and_overrides(capsys):
    assert main(["stability", str(FIX), "--set", "count_s=1.5"]) == 0
    ev = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    c = [e for e in ev if e["event"] == "counting"][0]
    s = [e for e in ev if e["event"] == "stood"]
    assert s and s[0]["t"] == pytest.approx(c["t"] + 1.5)


@pytest.mark.parametrize("argv,msg", [
    (["stability", "/nonexistent.csv"], "no such file"),
    (["stability", str(FIX), "--set", "bogus=1"], "NAME=VALUE"),
    (["stability", str(FIX), "--set", "count_s=x"], "not a number"),
])
def test_stability_user_errors(argv, msg, capsys):
    assert main(argv) == 2
    assert msg in capsys.readouterr().err


def test_stability_rejects_a_bad_csv(tmp_path, capsys):
    p = tmp_path / "a.csv"
    p.write_text("time,x,y,z\n0,0,0,9.8\n")
    assert main(["stability", str(p)]) == 2
    assert "header" in capsys.readouterr().err


@pytest.mark.parametrize("sensor,rate", [("mpu6050", 500.0), ("adxl345", 400.0)])
def test_record_accel_against_the_emulated_chip(tmp_path, capsys, sensor, rate):
    out = tmp_path / "rec.csv"
    argv = ["record-accel", str(out), "--sensor", sensor, "--seconds", "4", "--emulate", str(FIX / "accel.csv"),
            "--inject", "eio@1.0:1", "--inject", "silent@2.0:0.3", "--inject", "overflow@3.0"]
    assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    faults = [json.loads(x) for x in err if x.startswith("{")]
    kinds = [f["fault"] for f in faults]
    assert "io-error" in kinds and "no-answer" in kinds and "recovered" in kinds and "fifo-overflow" in kinds
    assert out.read_text().startswith("t,ax,ay,az\n")
    rows = list(read_csv(out))
    assert rate * 3.0 < len(rows) < rate * 4.0  # the outage and overflow lost some
    ts = [r[0] for r in rows]
    assert all(b > a for a, b in zip(ts, ts[1:])) and ts[-1] <= 4.0
    src = list(read_csv(FIX / "accel.csv"))
    assert abs(rows[10][3] - src[0][3]) < 0.3  # it is the trace's gravity reading


def test_record_accel_user_errors(tmp_path, capsys):
    assert main(["record-accel", str(tmp_path / "x.csv"), "--inject", "eio@1"]) == 2
    assert main(["record-accel", str(tmp_path / "x.csv"), "--emulate", str(FIX / "accel.csv"),
                 "--inject", "melt@1"]) == 2
    assert main(["record-accel", str(tmp_path / "x.csv"), "--sensor", "iio",
                 "--emulate", str(FIX / "accel.csv")]) == 2


def test_record_accel_from_a_fake_iio_device(tmp_path, capsys):
    from device.emulators.iio import make_iio_tree, pack_scans

    d = make_iio_tree(tmp_path, timestamp=False)
    dev = tmp_path / "chardev"
    dev.write_bytes(pack_scans([(0, 0, 256)] * 40))
    out = tmp_path / "iio.csv"
    assert main(["record-accel", str(out), "--sensor", "iio", "--iio-device", str(d), "--iio-dev", str(dev),
                 "--seconds", "0.05", "--poll", "0.01"]) == 0
    rows = list(read_csv(out))
    assert rows and all(abs(r[3] - 256 * 0.038312) < 1e-3 for r in rows)
