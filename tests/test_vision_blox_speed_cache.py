"""Blox recogniser (issue 8, speed): what is cached per pose is rebuilt when the pose changes.

The recogniser keeps, per pose (``BoardView.version``), the probe geometry and what the
scoring reads from it (the own-square subsets, the side probes' face orientations, the
cells seen nearly straight down, the spaces' expected colours), the chip readers' pixels
and the hand detector's low-resolution grid with its light-field basis. A board bumped
between frames must be read with the new pose's tables: a recogniser that saw the
first pose reads the moved board exactly as a fresh one does.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from calibration.kit import load_kit
from calibration.render import scene as sc
from calibration.render import states as st
from calibration.render.fixtures import write_setup
from vision.blox import Recognizer
from vision.evaluate import calibration_from_dir

SEED = 8_471_000  # development seeds only


@pytest.fixture(scope="module")
def two_poses(tmp_path_factory):
    """A calibration, frames of its board, and frames of the same board moved by about a
    centimetre under the same camera (a bumped table; the tracker re-finds it)."""
    kit = load_kit()
    setup = sc.sample_setup(kit, "blox", SEED, model="cm3")
    root = tmp_path_factory.mktemp("speed-cache")
    write_setup(setup, root, SEED, lens_frames=6)
    cal = calibration_from_dir(root / "calibration", "blox")
    moved = dataclasses.replace(setup, t=np.asarray(setup.t, float) + np.array([10.0, 5.0, 0.0]).reshape(
        np.shape(setup.t)), _view=None)
    state = st.blox_state(kit, np.random.default_rng(SEED), towers=10, figures=3)
    cond = sc.sample_conditions(SEED, "neutral", area=kit.area_mm("blox"), kit=kit)
    first = sc.render_frame(setup, state, cond, SEED).image
    second = sc.render_frame(moved, state, cond, SEED + 1).image
    return cal, first, second


def _geometry_tables(rec: Recognizer) -> dict[str, np.ndarray]:
    g = rec.geometry()
    return {"px": g.px, "edge_in_own": g.edge_in_own, "body_in_own": g.body_in_own,
            "table_maybe_hidden": g.table_maybe_hidden, "side_orient": g.side_orient,
            "space_expected": g.space_expected, **{f"steep{deg}": v for deg, v in g.steep.items()},
            "hand_basis": rec.hand_detector._geo.basis, "hand_inside": rec.hand_detector._geo.inside_idx}


def test_a_moved_board_is_read_as_a_fresh_recogniser_reads_it(two_poses):
    cal, first, second = two_poses
    rec = Recognizer(cal)
    for i in range(3):
        rec.process(first, 0.5 * i, i)
    version = rec.view.version
    before = _geometry_tables(rec)
    fresh = Recognizer(cal)
    # A re-found pose is taken on its second sighting: a few frames of the moved board.
    for i in range(4):
        obs = rec.process(second, 10.0 + 0.5 * i, 10 + i)
        obs_fresh = fresh.process(second, 10.0 + 0.5 * i, 10 + i)
    assert rec.view.version != version  # the pose did change ...
    assert np.allclose(rec.view.pose.tvec, fresh.view.pose.tvec)  # ... to the one a fresh recogniser finds
    after, want = _geometry_tables(rec), _geometry_tables(fresh)
    assert not np.array_equal(before["px"], after["px"])
    for name, value in want.items():
        assert np.array_equal(after[name], value), name
    assert rec.hand_detector._geo.version == rec.view.version
    assert obs["state"] == obs_fresh["state"]
    assert obs["occluded"] == obs_fresh["occluded"]
    towers = sum(1 for row in obs["state"]["cells"] for v in row if v and "tower" in v)
    assert towers >= 8  # the moved board is really read (not an empty or lost reading)
