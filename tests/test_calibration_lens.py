"""Lens calibration from the committed ChArUco frames of a camera set-up."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import pytest

from calibration.camera import CAMERA_MODELS, Intrinsics, default_intrinsics
from calibration.kit import load_kit
from calibration.lens import LensError, calibrate_lens

FIX = Path(__file__).parent / "fixtures"
KIT = load_kit()


def _frames(setup: str) -> tuple[list[tuple[str, object]], Intrinsics]:
    cal = FIX / setup / "calibration"
    meta = json.loads((cal / "meta.json").read_text())
    frames = [(p.name, cv2.imread(str(p))) for p in sorted(cal.glob("lens_*.jpg"))]
    return frames, Intrinsics.from_json(meta["setup"]["intrinsics"])


@pytest.mark.parametrize("setup", ["blox/setup-cm3", "blox/setup-wide"])
def test_focal_length_within_one_percent(setup):
    frames, truth = _frames(setup)
    assert len(frames) >= 5
    res = calibrate_lens(frames, KIT)
    assert abs(res.intrinsics.fx / truth.fx - 1) < 0.01
    assert abs(res.intrinsics.fy / truth.fy - 1) < 0.01
    assert abs(res.intrinsics.cx - truth.cx) < 15 and abs(res.intrinsics.cy - truth.cy) < 15
    assert res.rms_px < 0.6
    assert res.intrinsics.source == "lens-calibration" and not res.intrinsics.is_default
    assert "reprojection error" in res.report()


def test_bad_frames_are_rejected_with_a_reason():
    frames, truth = _frames("blox/setup-cm3")
    board = cv2.imread(str(FIX / "blox/setup-cm3/calibration/board.jpg"))
    small = cv2.resize(frames[0][1], (640, 360))
    res = calibrate_lens(frames + [("board.jpg", board), ("small.jpg", small)], KIT)
    rejected = {f.name: f.reason for f in res.frames if not f.accepted}
    assert "no sheet markers found" in rejected["board.jpg"]
    assert "resolution 640x360" in rejected["small.jpg"]
    assert abs(res.intrinsics.fx / truth.fx - 1) < 0.01


def test_too_few_frames():
    frames, _ = _frames("blox/setup-cm3")
    with pytest.raises(LensError, match="only 2 usable frames"):
        calibrate_lens(frames[:2], KIT)
    with pytest.raises(LensError, match="no frames"):
        calibrate_lens([], KIT)


def test_default_camera_models():
    for name in ("cm3", "cm3-wide", "webcam"):
        assert name in CAMERA_MODELS
    cm3 = default_intrinsics("cm3")
    assert (cm3.width, cm3.height) == (2304, 1296) and cm3.is_default and cm3.source == "default:cm3"
    half = default_intrinsics("cm3", 1152, 648)
    assert abs(half.fx - cm3.fx / 2) < 1e-9 and abs(half.cx - ((cm3.cx + 0.5) / 2 - 0.5)) < 1e-9
    assert default_intrinsics("cm3-wide").fx < cm3.fx  # wider lens, shorter focal length
    with pytest.raises(ValueError, match="unknown camera model"):
        default_intrinsics("nikon")
