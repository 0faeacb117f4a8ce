"""Committed rendered fixtures follow observation.md, and sequences render from a truth.jsonl."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import pytest

from calibration.kit import load_kit
from calibration.render import scene as sc
from calibration.render.build import SCENES, SETUPS
from calibration.render.fixtures import render_sequence
from calibration.render.states import empty_state

FIX = Path(__file__).parent / "fixtures"
KIT = load_kit()


@pytest.mark.parametrize("name", sorted(SCENES))
def test_committed_scene_is_complete(name):
    d = FIX / name
    meta = json.loads((d / "meta.json").read_text())
    for key in ("game", "edition", "kit", "setup", "frames", "made_by"):
        assert key in meta
    for key in ("intrinsics", "pose", "print_drift", "camera_model"):
        assert key in meta["setup"]
    truth = [json.loads(line) for line in (d / "truth.jsonl").read_text().splitlines()]
    assert len(truth) == len(meta["frames"]) >= 1
    for row, frame in zip(truth, meta["frames"]):
        assert set(row) == {"game", "frame", "t", "stable", "occluded", "confidence", "state"}
        img = cv2.imread(str(d / frame["file"]))
        assert img is not None and img.shape[:2] == (meta["setup"]["intrinsics"]["height"],
                                                     meta["setup"]["intrinsics"]["width"])
        assert row["stable"] == (not frame["conditions"]["hands"])
    assert (d / "calibration" / "board.jpg").exists()  # the set-up's calibration frames


@pytest.mark.parametrize("name", sorted(SETUPS))
def test_committed_setups_have_calibration_frames(name):
    cal = FIX / name / "calibration"
    meta = json.loads((cal / "meta.json").read_text())
    assert len(list(cal.glob("lens_*.jpg"))) == SETUPS[name][3] == len(meta["frames"])
    assert meta["board"]["truth"]["stable"] is True


def test_sequence_renders_from_stable_observations(tmp_path):
    setup = sc.sample_setup(KIT, "blox", 7401, model="webcam")
    s0 = empty_state(KIT, "blox")
    s1 = json.loads(json.dumps(s0))
    s1["cells"][2][3] = {"figure": "green"}
    s2 = json.loads(json.dumps(s1))
    s2["cells"][2][3] = None
    s2["cells"][2][6] = {"figure": "green"}
    rows = [{"game": "blox", "stable": True, "state": s} for s in (s0, s0, s1, s2)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = render_sequence(tmp_path / "in.jsonl", setup, tmp_path / "seq", 7402, stable_frames=2, hand_frames=3)
    truth = [json.loads(line) for line in (out / "truth.jsonl").read_text().splitlines()]
    assert len(truth) == 3 * 2 + 2 * 3  # three distinct states, two transitions
    assert [t["frame"] for t in truth] == list(range(len(truth)))
    stable = [t for t in truth if t["stable"]]
    assert [t["state"] for t in stable] == [s0, s0, s1, s1, s2, s2]
    moving = [t for t in truth if not t["stable"]]
    assert len(moving) == 6 and any([2, 3] in t["occluded"] or [2, 4] in t["occluded"] for t in moving)
    assert all(t["occluded"] == [] for t in stable)
    frames = sorted((out / "frames").glob("*.jpg"))
    assert len(frames) == len(truth) and cv2.imread(str(frames[0])) is not None
    meta = json.loads((out / "meta.json").read_text())
    assert len(meta["frames"]) == len(truth) and meta["fps"] == 4.0
