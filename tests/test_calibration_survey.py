"""Colour survey of the empty board, and the per-table calibration file."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from calibration.camera import Intrinsics
from calibration.colour import delta_e, kelvin_tint, srgb_to_lab
from calibration.kit import load_kit
from calibration.pose import estimate_pose
from calibration.render import scene as sc
from calibration.render.states import empty_state
from calibration.render.textures import default_blox_colors
from calibration.store import Calibration, CalibrationError, load_calibration, save_calibration
from calibration.survey import SurveyError, survey

FIX = Path(__file__).parent / "fixtures"
KIT = load_kit()


def _board(setup: str = "blox/setup-cm3"):
    cal = FIX / setup / "calibration"
    meta = json.loads((cal / "meta.json").read_text())
    intr = Intrinsics.from_json(meta["setup"]["intrinsics"])
    img = cv2.imread(str(cal / "board.jpg"))
    return img, intr, meta


def test_survey_names_every_space_and_balances_white():
    img, intr, meta = _board()
    pose = estimate_pose(img, KIT, "blox", intr, min_markers=4)
    data = survey(img, KIT, "blox", pose, intr)
    assert data["spaces"]["names"] == meta["board"]["truth"]["state"]["colors"]
    gains = np.array(data["white_balance"]["gains"])
    assert np.all(gains > 0)
    # After balancing, the surveyed colours are close to nominal (print drift <= 10%).
    for name, rgb in KIT.blox.colors.items():
        assert delta_e(np.array(data["colors"][name]), srgb_to_lab(np.array(rgb, float))) < 12
    assert data["pieces"]["block:purple"]["lab"] == data["colors"]["purple"]
    assert data["pieces"]["figure:green"]["source"] == "kit nominal"


def test_survey_survives_warm_dim_light(tmp_path):
    """The same board under 2700 K dim light gives (nearly) the same balanced colours."""
    setup = sc.sample_setup(KIT, "blox", 1001, model="cm3")  # the committed set-up's seed
    img, intr, _ = _board()
    ref = survey(img, KIT, "blox", estimate_pose(img, KIT, "blox", intr), intr)
    cond = sc.sample_conditions(7201, "warm-dim", kit=KIT)
    r = sc.render_frame(setup, empty_state(KIT, "blox"), cond, 7201)
    p = tmp_path / "warm.jpg"
    cv2.imwrite(str(p), r.image)
    warm = cv2.imread(str(p))
    data = survey(warm, KIT, "blox", estimate_pose(warm, KIT, "blox", intr), intr)
    assert data["spaces"]["names"] == ref["spaces"]["names"]
    raw_white = np.array(data["white_balance"]["gains"])
    assert raw_white[2] > raw_white[0]  # warm light: blue must be boosted more than red
    for name in KIT.blox.colors:
        assert delta_e(np.array(data["colors"][name]), np.array(ref["colors"][name])) < 8


def test_survey_refuses_a_wrong_colour_map():
    img, intr, _ = _board()
    pose = estimate_pose(img, KIT, "blox", intr)
    wrong = [list(reversed(row)) for row in default_blox_colors()]
    with pytest.raises(SurveyError, match="do not match their colour"):
        survey(img, KIT, "blox", pose, intr, board_names=wrong)


def test_kelvin_tint_is_warm_at_low_temperature():
    warm, cool = kelvin_tint(2700), kelvin_tint(6500)
    assert warm[0] > 1 > warm[2] and np.allclose(cool, 1, atol=0.03)


def test_calibration_file_round_trip_and_errors(tmp_path):
    img, intr, _ = _board()
    pose = estimate_pose(img, KIT, "blox", intr)
    data = survey(img, KIT, "blox", pose, intr)
    cal = Calibration(game="blox", camera=intr, camera_model="cm3", kit=KIT, pose=pose, survey=data, table="kitchen")
    path = save_calibration(cal, tmp_path / "t" / "calibration.json")
    back = load_calibration(path)
    assert back.camera == intr and back.table == "kitchen" and back.survey == json.loads(json.dumps(data))
    assert np.allclose(back.pose.rvec, pose.rvec) and back.kit.blox.space_mm == 38
    with pytest.raises(CalibrationError, match="not found"):
        load_calibration(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(CalibrationError, match="not valid JSON"):
        load_calibration(bad)
    newer = json.loads(path.read_text())
    newer["version"] = 99
    bad.write_text(json.dumps(newer))
    with pytest.raises(CalibrationError, match="newer bloxcam"):
        load_calibration(bad)
    bad.write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(CalibrationError, match="not a bloxcam calibration"):
        load_calibration(bad)
    broken = json.loads(path.read_text())
    del broken["camera"]["fx"]
    bad.write_text(json.dumps(broken))
    with pytest.raises(CalibrationError, match="damaged"):
        load_calibration(bad)
