"""The board pose after an arm over the markers (vision.board, calibration.pose).

An arm that covers the markers and much of the board has an outline of its own: a pose
taken from it on one sighting put the markers where they are not, and since they were
then looked for only there, the referee stayed blind with that pose on every hand-free
frame after. Now an outline pose must agree with the pose held or with the last frame's
outline, and while an outline pose is held the markers are looked for in the whole
frame, so the first hand-free frame restores the pose.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from calibration.kit import load_kit
from calibration.render import scene as sc
from calibration.render import states as st
from calibration.render.fixtures import write_scene, write_setup
from vision import make_recognizer
from vision.board import BoardView
from vision.evaluate import calibration_from_dir, read_image

SEED = 8_980_000  # development seed (the final evaluation uses another range)


@pytest.fixture(scope="module")
def arm_scene(tmp_path_factory):
    """A random camera over a Blox board in the "everything" conditions: frame 0 with two
    arms over markers and a quarter of the board (the outline found there is the arms',
    about 100 px off), frame 1 the same board without them. Returns
    (calibration, frames, truths)."""
    kit = load_kit()
    root = tmp_path_factory.mktemp("pose")
    setup = sc.sample_setup(kit, "blox", SEED)
    write_setup(setup, root / "setup", SEED, lens_frames=6)
    state = st.random_state(kit, "blox", np.random.default_rng(SEED + 1))
    arm = sc.sample_conditions(SEED + 2, "everything", area=kit.area_mm("blox"), kit=kit)
    free = dataclasses.replace(sc.sample_conditions(SEED, "everything", area=kit.area_mm("blox"), kit=kit), hands=[])
    d = write_scene(setup, [state, state], [arm, free], [SEED + 1, SEED + 1], root / "scene", setup_dir=root / "setup")
    cal = calibration_from_dir(d / "calibration", "blox")
    frames = [read_image(d / "frames" / f"{i:06d}.jpg") for i in range(2)]
    truths = [json.loads(line) for line in (d / "truth.jsonl").read_text().splitlines()]
    return cal, frames, truths


def _marker_error_px(view: BoardView, cal) -> float:
    """Largest distance between where the view's pose and the calibration's put a marker corner."""
    corners = np.concatenate(list(view.kit.marker_corners("blox").values()))
    return float(np.max(np.linalg.norm(view.pose.project(corners, view.intr) - cal.pose.project(corners, cal.camera),
                                       axis=1)))


def test_the_scene_is_an_arm_whose_outline_is_not_the_board(arm_scene):
    cal, frames, truths = arm_scene
    from calibration.markerless import find_board

    assert len(truths[0]["occluded"]) >= 20 and truths[1]["occluded"] == []
    pose, _ = find_board(frames[0], cal.kit, "blox", cal.camera)
    view = BoardView(cal)
    view.tracker.set_pose(pose)
    assert _marker_error_px(view, cal) > 20.0


def test_one_arm_frame_keeps_the_pose_and_the_next_hand_free_frame_is_verified(arm_scene):
    cal, frames, _ = arm_scene
    view = BoardView(cal)
    assert view.update(frames[1]).status.value == "ok"
    view.update(frames[0])
    assert view.status == "lost"  # markers gone, an outline seen once: not taken
    assert view.pose.method == "markers" and _marker_error_px(view, cal) < 1.0
    view.update(frames[1])
    assert view.status == "ok"
    assert _marker_error_px(view, cal) < 1.0


def test_an_arm_held_still_whose_outline_is_taken_is_dropped_on_the_first_hand_free_frame(arm_scene):
    cal, frames, _ = arm_scene
    view = BoardView(cal)
    view.update(frames[0])
    view.update(frames[0])  # the same outline twice: taken
    assert view.pose.method == "markerless" and _marker_error_px(view, cal) > 20.0
    check = view.update(frames[1])  # markers searched in the whole frame, taken at once
    assert check.status.value == "moved" and view.pose.method == "markers"
    assert _marker_error_px(view, cal) < 1.0
    assert view.update(frames[1]).status.value == "ok"


def test_the_blox_referee_reads_the_board_after_the_arm_as_without_it(arm_scene):
    cal, frames, _ = arm_scene
    rec = make_recognizer("blox", cal)
    rec.process(frames[1], 0.0, 0)
    rec.process(frames[0], 0.5, 1)
    obs = rec.process(frames[1], 1.0, 2)
    never = make_recognizer("blox", cal)  # the same frames without the arm between them
    never.process(frames[1], 0.0, 0)
    never.process(frames[1], 0.5, 1)
    plain = never.process(frames[1], 1.0, 2)
    assert obs["occluded"] == plain["occluded"] == []
    assert obs["state"] == plain["state"]
