"""Block Out! stack recogniser (vision/blockout.py) against rendered ground truth.

Issue 10: where the camera watches the stack, a fall is confirmed by the stack's height.
Scenes are rendered into tmp_path at test time (calibration.render), each camera set-up
calibrated the way a user's is (from its calibration/ frames), on seeds of the
development range (the held-out figures of bench/vision_blockout.py use 9_400_000+).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from calibration.kit import load_kit
from calibration.render import scene as sc
from calibration.render import states as st
from calibration.render.fixtures import write_scene, write_setup
from vision import blockout as vb
from vision import make_recognizer
from vision.evaluate import calibration_from_dir, evaluate_fixture, load_fixture

FIXTURES = Path(__file__).parent / "fixtures" / "blockout"
PRESETS_NO_HANDS = [p for p in sc.PRESETS if p not in ("hands", "everything")]


def _stack(kit, seed: int, n: int) -> dict:
    return st.blockout_state(kit, np.random.default_rng([seed, 11]), blocks=n)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> list[tuple[object, list[dict], list[np.ndarray]]]:
    """Two camera set-ups (steep and nearly overhead), each with its lens calibrated from
    four ChArUco frames, five frames each across the conditions presets, stacks of 0..9
    blocks."""
    kit = load_kit()
    root = tmp_path_factory.mktemp("blockout")
    out = []
    plan = [(7_830_001, "cm3", 32.0), (7_830_003, "webcam", 8.0)]
    for k, (seed, model, tilt) in enumerate(plan):
        setup = sc.sample_setup(kit, "blockout", seed, model=model, tilt_deg=tilt)
        write_setup(setup, root / f"setup-{seed}", seed, lens_frames=4)
        heights = [(seed + 3 * j + k) % 10 for j in range(5)]
        states = [_stack(kit, seed * 10 + j, n) for j, n in enumerate(heights)]
        conds = [sc.sample_conditions(seed * 10 + j, PRESETS_NO_HANDS[(k * 5 + j) % len(PRESETS_NO_HANDS)],
                                      area=kit.area_mm("blockout"), kit=kit) for j in range(5)]
        d = write_scene(setup, states, conds, [seed * 10 + j for j in range(5)], root / f"scene-{seed}",
                        setup_dir=root / f"setup-{seed}")
        fx = load_fixture(d)
        cal = calibration_from_dir(d / "calibration", "blockout")
        out.append((cal, fx.truth, [img for _, img in fx.frames()]))
    return out


def test_score_metrics():
    a = {"color": "red", "size": "small"}
    b = {"color": "black", "size": "large"}
    c = {"color": "yellow", "size": "medium"}
    truth = {"occluded": [], "state": {"stack": [a, b, c]}}
    assert vb.score(truth, {"occluded": [], "state": {"stack": [a, b, c]}}) == {
        "stack_height": (0, 1), "block_color": (0, 3), "block_size": (0, 3), "stack_hidden": (0, 1),
        "occlusion_missed": (0, 0)}
    m = vb.score(truth, {"occluded": [], "state": {"stack": [a, {"color": "black", "size": "small"}]}})
    assert m["stack_height"] == (1, 1) and m["block_color"] == (1, 3) and m["block_size"] == (2, 3)
    m = vb.score(truth, {"occluded": ["stack"], "state": {"stack": []}})
    assert m["stack_hidden"] == (1, 1) and m["stack_height"] == (0, 0)
    m = vb.score({"occluded": ["stack"], "state": {"stack": [a]}}, {"occluded": [], "state": {"stack": [a]}})
    assert m["occlusion_missed"] == (1, 1)


@pytest.mark.parametrize("name", ["neutral", "one-sided"])
def test_committed_fixtures(name):
    """The committed single scenes (1 and 9 blocks) through `bloxcam evaluate`'s path."""
    report = evaluate_fixture(FIXTURES / name, keep_details=True)
    (row,) = report.details
    assert row["metrics"]["stack_height"] == (0, 1)
    truth = row["truth"]["state"]["stack"]
    obs = row["observation"]
    assert obs["state"]["height_blocks"] == len(truth)
    assert obs["stable"] is True and obs["occluded"] == []
    assert row["metrics"]["block_color"][0] <= len(truth) // 3


def test_rendered_heights_and_colours(rendered):
    """Height exact on rendered frames of two camera set-ups and most conditions (the
    held-out bench, 9_400_000+: 90% exact, 83% colours, 81% sizes, supports these levels)."""
    h = [0, 0]
    col = [0, 0]
    top = [0, 0]
    sure_wrong = []  # what the referee acts on (confidence >= 0.8) must be right
    for cal, truths, frames in rendered:
        rec = vb.Recognizer(cal)
        for i, (truth, img) in enumerate(zip(truths, frames)):
            obs = rec.process(img, 10.0 * i, i)
            m = vb.score(truth, obs)
            h[0] += m["stack_height"][0]
            h[1] += m["stack_height"][1]
            col[0] += m["block_color"][0]
            col[1] += m["block_color"][1]
            ts, os_ = truth["state"]["stack"], obs["state"]["stack"]
            if ts and len(os_) == len(ts):
                top[1] += 1
                top[0] += int(os_[-1] != ts[-1])
            if obs["confidence"] >= 0.8 and m["stack_height"][0]:
                sure_wrong.append((len(ts), len(os_), obs["confidence"]))
            assert len(obs["state"]["block_confidence"]) == len(os_)
            assert 0.0 <= obs["confidence"] <= 1.0
    assert h[1] == 10
    assert h[0] <= 2, f"height wrong on {h[0]} of {h[1]} frames"
    assert not sure_wrong, f"confident readings of the wrong height (true, read, confidence): {sure_wrong}"
    assert col[0] <= 0.3 * col[1], f"colour wrong on {col[0]} of {col[1]} blocks"
    assert top[0] <= max(1, top[1] // 5), f"top block wrong on {top[0]} of {top[1]} stacks"


def test_fall_reads_shorter(tmp_path):
    """R-BLOCKOUT-3's count ends with `fell` when the stack falls: the camera must read
    the remains as shorter than the stack before (and an empty base as 0)."""
    kit = load_kit()
    setup = sc.sample_setup(kit, "blockout", 7_830_010, model="cm3", tilt_deg=22.0)
    write_setup(setup, tmp_path / "setup", 7_830_010, lens_frames=0)
    full = _stack(kit, 7_830_011, 7)
    states = [full, {"stack": full["stack"][:3]}, {"stack": []}]
    conds = [sc.sample_conditions(7_830_012 + j, "neutral", area=kit.area_mm("blockout"), kit=kit) for j in range(3)]
    d = write_scene(setup, states, conds, [7_830_012 + j for j in range(3)], tmp_path / "scene",
                    setup_dir=tmp_path / "setup")
    fx = load_fixture(d)
    rec = make_recognizer("blockout", calibration_from_dir(d / "calibration", "blockout"))
    heights = [rec.process(img, 10.0 * i, i)["state"]["height_blocks"] for i, img in fx.frames()]
    assert heights[0] >= 6 and heights[1] <= heights[0] - 3 and heights[2] == 0


def test_hand_over_stack_is_occluded_and_not_stable(tmp_path):
    """A hand over the stack: occluded, nothing guessed, never stable; once it has gone
    and the scene has been still for stable_seconds, the stack is read and stable."""
    kit = load_kit()
    setup = sc.sample_setup(kit, "blockout", 7_830_020, model="cm3", tilt_deg=18.0)
    write_setup(setup, tmp_path / "setup", 7_830_020, lens_frames=0)
    state = _stack(kit, 7_830_021, 4)
    w, h = kit.area_mm("blockout")
    hand = sc.sample_conditions(7_830_022, "neutral", area=(w, h), kit=kit)
    hand.hands = [sc.Hand(target=(w / 2, h / 2 + 10), height=110.0, side="near")]
    calm = sc.sample_conditions(7_830_023, "neutral", area=(w, h), kit=kit)
    d = write_scene(setup, [state, state], [hand, calm], [7_830_022, 7_830_023], tmp_path / "scene",
                    setup_dir=tmp_path / "setup")
    fx = load_fixture(d)
    assert fx.truth[0]["occluded"] == ["stack"]
    frames = [img for _, img in fx.frames()]
    rec = vb.Recognizer(calibration_from_dir(d / "calibration", "blockout"), stable_seconds=1.0)
    o1 = rec.process(frames[0], 0.0, 0)
    o2 = rec.process(frames[0], 2.0, 1)
    for o in (o1, o2):
        assert o["occluded"] == ["stack"] and o["stable"] is False
        assert o["state"]["stack"] == [] and o["state"]["height_blocks"] is None
    o3 = rec.process(frames[1], 3.0, 2)  # the hand has gone: the scene changed
    rec.process(frames[1], 3.5, 3)  # still from here
    o4 = rec.process(frames[1], 4.6, 4)
    assert o3["stable"] is False and o4["stable"] is True
    assert o4["state"]["height_blocks"] == 4
    out = rec.overlay(frames[1], o4)
    assert out.shape == frames[1].shape and not np.array_equal(out, frames[1])
