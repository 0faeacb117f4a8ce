"""The markerless board finder (calibration/markerless.py): the Blox grid fit under the
conditions that defeat an outline alone, its guard against the grid's periodicity, and
its refusal when there is no board. Frames go through a JPEG file, as a recording would."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from calibration import markerless as ml
from calibration.kit import load_kit
from calibration.render import scene as sc
from calibration.render import states as st

KIT = load_kit()


def _frame(tmp_path, game: str, setup_seed: int, frame_seed: int, preset: str, model: str):
    setup = sc.sample_setup(KIT, game, setup_seed, model=model, markers=False)
    state = st.random_state(KIT, game, np.random.default_rng(frame_seed))
    cond = sc.sample_conditions(frame_seed, preset, area=KIT.area_mm(game), kit=KIT)
    p = tmp_path / "frame.jpg"
    cv2.imwrite(str(p), sc.render_frame(setup, state, cond, frame_seed).image, [cv2.IMWRITE_JPEG_QUALITY, 92])
    return cv2.imread(str(p)), setup


# Dim warm light on a dark table, and one-sided light whose bright patch of table
# joined the board's blob: both lost the outline-only finder (development seeds).
@pytest.mark.parametrize("setup_seed, frame_seed, preset", [(3100051, 3100053, "warm-dim"),
                                                            (3100061, 3100065, "one-sided")])
def test_blox_grid_fit_finds_corners_within_3px(tmp_path, setup_seed, frame_seed, preset):
    img, setup = _frame(tmp_path, "blox", setup_seed, frame_seed, preset, "cm3-wide")
    pose, corners = ml.find_board(img, KIT, "blox", setup.intr)
    truth = setup.view().project(KIT.area_corners("blox"))
    assert np.max(np.linalg.norm(corners - truth, axis=1)) < 3.0
    assert pose.method == "markerless" and 0 < pose.confidence <= ml.MAX_CONFIDENCE


@pytest.mark.parametrize("dx, dy", [(1, 0), (0, -1)])
def test_grid_one_space_off_is_registered_back(tmp_path, dx, dy):
    """A start one space off fits n of the n+1 lines perfectly (the grid repeats); the
    shifted hypotheses must bring it back to the true registration."""
    img, setup = _frame(tmp_path, "blox", 4400001, 4400002, "neutral", "webcam")
    K, D = setup.intr.K, setup.intr.D
    und = cv2.undistort(img, K, D)
    rv, tv = cv2.Rodrigues(setup.R)[0].ravel(), setup.t.astype(float)
    n, s = KIT.grid("blox")
    start = tv + setup.R @ np.array([dx * s, dy * s, 0.0])
    feat = ml._grid_feature(und)
    quad = cv2.projectPoints(KIT.area_corners("blox"), rv, tv, K, np.zeros(5))[0].reshape(-1, 2)
    side_px = float(np.mean(np.linalg.norm(quad - np.roll(quad, 1, axis=0), axis=1)))
    r2, t2, score = ml._fit_registered(feat, K, rv, start, n, s, side_px / n, ml._step_reference(feat, quad))
    got = cv2.projectPoints(KIT.area_corners("blox"), r2, t2, K, D)[0].reshape(-1, 2)
    truth = setup.view().project(KIT.area_corners("blox"))
    assert np.max(np.linalg.norm(got - truth, axis=1)) < 2.0
    assert score > 0.6


def test_plain_table_is_not_a_board():
    setup = sc.sample_setup(KIT, "blox", 4400011, model="webcam", markers=False)
    table = np.zeros((setup.intr.height, setup.intr.width, 3), np.uint8)
    table[:] = sc.TABLE_COLOURS[setup.table][::-1]
    noise = np.random.default_rng(4).normal(0, 2.0, table.shape)
    img = np.clip(table + noise, 0, 255).astype(np.uint8)
    with pytest.raises(ml.BoardNotFound):
        ml.find_board(img, KIT, "blox", setup.intr)
