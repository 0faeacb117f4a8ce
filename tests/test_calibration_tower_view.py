"""The calibration's check that the camera pose shows enough of the Blox towers' sides
to read the blocks under a tower's top (calibration/tower_view.py)."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest

from calibration.kit import load_kit
from calibration.pose import BoardPose
from calibration.render import scene as sc
from calibration.render.states import empty_state
from calibration.tower_view import MIN_SIDE_PX, tower_view
from service.cli import main

KIT = load_kit()


def _view(model: str, height_mm: float, tilt_deg: float):
    setup = sc.sample_setup(KIT, "blox", 4242, model=model, height_mm=height_mm, tilt_deg=tilt_deg)
    pose = BoardPose(cv2.Rodrigues(setup.R)[0].ravel(), np.asarray(setup.t, float).ravel(), 0.0)
    return setup, pose, tower_view(KIT, pose, setup.intr)


@pytest.mark.parametrize("model,height_mm,tilt_deg", [("cm3", 850, 3.0), ("cm3-wide", 600, 5.0)])
def test_a_camera_nearly_straight_above_is_flagged(model, height_mm, tilt_deg):
    _, _, view = _view(model, height_mm, tilt_deg)
    assert not view.readable and view.short_share > 0.3
    assert "Tilt the camera" in view.warning()


@pytest.mark.parametrize("model,height_mm,tilt_deg", [("cm3", 850, 30.0), ("cm3", 650, 35.0), ("cm3-wide", 520, 32.0)])
def test_an_oblique_camera_passes(model, height_mm, tilt_deg):
    _, _, view = _view(model, height_mm, tilt_deg)
    assert view.readable and view.warning() is None
    assert view.side_px.min() >= MIN_SIDE_PX - 1


def test_side_faces_grow_with_tilt_and_toward_the_near_edge():
    """The camera leans back over the near edge (table-kit.md: tilted toward the far edge),
    so the rays to the far rows lean most and show the most of a tower's side."""
    medians = [_view("cm3", 750, tilt)[2].median_px for tilt in (0.0, 10.0, 20.0, 30.0, 40.0)]
    assert medians == sorted(medians) and medians[-1] > 2 * medians[1]
    side = _view("cm3", 750, 25.0)[2].side_px
    assert side[0].mean() > side[-1].mean()


def _calibrate_board(tmp_path, capsys, model: str, height: float, tilt: float, seed: int):
    """``bloxcam calibrate board`` on a photo of the empty board from that camera: the
    true tower view, what the command printed and the calibration file."""
    setup, _, view = _view(model, height, tilt)
    cond = sc.sample_conditions(seed, "neutral", area=KIT.area_mm("blox"), kit=KIT)
    frame = sc.render_frame(setup, empty_state(KIT, "blox"), cond, seed).image
    board = tmp_path / "board.jpg"
    cv2.imwrite(str(board), frame, [cv2.IMWRITE_JPEG_QUALITY, 95])
    cal = tmp_path / "calibration.json"
    assert main(["calibrate", "board", str(board), "-c", str(cal), "--camera-model", model]) == 0
    return view, capsys.readouterr().out, cal


def test_calibrate_board_warns_about_a_camera_straight_above(tmp_path, capsys):
    view, out, cal = _calibrate_board(tmp_path, capsys, "cm3-wide", 600, 2.0, 4242)
    assert "tower view: a block's side face shows" in out
    assert "warning: the camera sees the board too nearly from straight above" in out
    saved = json.loads(cal.read_text())
    assert any("straight above" in w for w in saved["survey"]["warnings"])
    # The pose found from the frame (default lens, not the true one) tells the same story.
    shown = float(out.split("shows ")[1].split(" px")[0])
    assert abs(shown - view.median_px) < 0.5


def test_calibrate_board_on_an_oblique_camera_does_not_warn(tmp_path, capsys):
    _, out, _ = _calibrate_board(tmp_path, capsys, "cm3", 800, 30.0, 4243)
    assert "tower view:" in out and "straight above" not in out
