"""``bloxcam print-kit`` output at true scale, and the calibrate commands."""

from __future__ import annotations

import re
import shutil
import zlib
from pathlib import Path

import cv2
import numpy as np

from calibration.kit import load_kit
from calibration.lens import charuco_detector
from service.cli import main

FIX = Path(__file__).parent / "fixtures"
KIT = load_kit()
PX_PER_MM = 300 / 25.4


def test_print_kit_files_at_true_scale(tmp_path, capsys):
    assert main(["print-kit", "--out", str(tmp_path)]) == 0
    pdf = (tmp_path / "bloxcam-kit.pdf").read_bytes()
    assert pdf.startswith(b"%PDF-1.4") and pdf.rstrip().endswith(b"%%EOF")
    boxes = [tuple(float(v) for v in m) for m in re.findall(rb"/MediaBox \[0 0 ([\d.]+) ([\d.]+)\]", pdf)]
    assert len(boxes) == 2
    assert abs(boxes[0][0] - 595.28) < 0.5 and abs(boxes[0][1] - 841.89) < 0.5  # A4 portrait, in points
    assert abs(boxes[1][0] - 841.89) < 0.5 and abs(boxes[1][1] - 595.28) < 0.5  # A4 landscape
    # The embedded rasters decompress to the declared size.
    m = re.search(rb"/Width (\d+) /Height (\d+) .*?/Length (\d+) >>\nstream\n", pdf)
    w, h, n = (int(v) for v in m.groups())
    assert len(zlib.decompress(pdf[m.end():m.end() + n])) == w * h

    png = (tmp_path / "markers.png").read_bytes()
    i = png.index(b"pHYs")
    assert int.from_bytes(png[i + 4:i + 8], "big") == round(300 / 0.0254)
    img = cv2.imread(str(tmp_path / "markers.png"), cv2.IMREAD_GRAYSCALE)
    det = cv2.aruco.ArucoDetector(cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_4X4_50))
    corners, ids, _ = det.detectMarkers(img)
    assert sorted(ids.ravel().tolist()) == [0, 1, 2, 3]
    for c in corners:
        side = np.linalg.norm(c[0][1] - c[0][0])
        assert abs(side - 40 * PX_PER_MM) < 2  # 40 mm at 300 dpi

    sheet = cv2.imread(str(tmp_path / "charuco.png"), cv2.IMREAD_GRAYSCALE)
    ch, ch_ids, _, _ = charuco_detector(KIT).detectBoard(sheet)
    assert len(ch_ids) == 24  # (7-1) x (5-1) inner corners
    pts = dict(zip(ch_ids.ravel().tolist(), ch.reshape(-1, 2)))
    assert abs(np.linalg.norm(pts[1] - pts[0]) - 30 * PX_PER_MM) < 1.5  # 30 mm squares
    assert "100 mm ruler" in capsys.readouterr().out


def test_calibrate_lens_and_board_commands(tmp_path, capsys):
    cal = tmp_path / "calibration.json"
    frames = sorted(str(p) for p in (FIX / "blox/setup-cm3/calibration").glob("lens_*.jpg"))
    assert main(["calibrate", "lens", *frames, "-c", str(cal)]) == 0
    out = capsys.readouterr().out
    assert "reprojection error" in out and cal.exists()
    board = FIX / "blox/setup-cm3/calibration/board.jpg"
    assert main(["calibrate", "board", str(board), "-c", str(cal)]) == 0
    out = capsys.readouterr().out
    assert "lens calibration from" in out and "white balance" in out

    # Without a lens calibration the default lens is used and the report says so.
    cal2 = tmp_path / "other.json"
    assert main(["calibrate", "board", str(board), "-c", str(cal2), "--camera-model", "cm3"]) == 0
    assert "no lens calibration, using the default cm3 lens" in capsys.readouterr().out


def test_calibrate_board_reports_missing_markers(tmp_path, capsys):
    board = cv2.imread(str(FIX / "blox/setup-cm3/calibration/board.jpg"))
    h = board.shape[0]
    board[int(h * 0.55):] = 30  # near half of the frame lost
    p = tmp_path / "half.png"
    cv2.imwrite(str(p), board)
    assert main(["calibrate", "board", str(p), "-c", str(tmp_path / "c.json")]) == 2
    err = capsys.readouterr().err
    assert "near-right" in err and "near-left" in err and "far-left" not in err.split("found")[1]
    assert main(["calibrate", "board", str(tmp_path / "none.png")]) == 2
    assert "cannot read image" in capsys.readouterr().err
    shutil.rmtree(tmp_path)
