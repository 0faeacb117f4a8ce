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


def test_a_pose_that_puts_the_board_behind_the_camera_or_far_above_it_is_refused(tmp_path):
    """find_board's last check (ml.implausible): the outline fit to an arm across the
    board once gave a pose 56 m away with the board behind the camera, which projects
    its corners onto the quadrilateral all the same. The true pose passes; that pose,
    one with the camera below the table and one far above any mount are refused."""
    from calibration.pose import BoardPose

    setup = sc.sample_setup(KIT, "blox", 3_100_051, model="cm3-wide", markers=False)  # development seed
    outline, _ = ml._outline_mm(KIT, "blox")
    true = BoardPose(cv2.Rodrigues(setup.R)[0].ravel(), np.ravel(setup.t), 0.0, "markerless")
    assert ml.implausible(true, KIT, outline) is None
    seen = BoardPose(np.array([-63.966, -58.1, -200.423]), np.array([56513.8, -28866.1, -5592.4]), 0.0, "markerless")
    assert "behind the camera" in ml.implausible(seen, KIT, outline)
    # The board turned over (camera under the table, looking up at it).
    flipped = cv2.Rodrigues(np.diag([1.0, -1.0, -1.0]) @ setup.R)[0].ravel()
    below = BoardPose(flipped, np.ravel(setup.t), 0.0, "markerless")
    assert ml.implausible(below, KIT, outline) is not None
    far = BoardPose(true.rvec, np.ravel(setup.t) * 4.0, 0.0, "markerless")
    assert "mm above the board" in ml.implausible(far, KIT, outline)
