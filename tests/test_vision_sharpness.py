"""Blur measured on the board's edges and undone at the Blox probes (vision.sharpness, issue 8)."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from calibration.kit import load_kit
from calibration.render import scene as sc
from calibration.render import states as st
from calibration.render.fixtures import write_scene, write_setup
from vision import blox as blox_mod
from vision import make_recognizer
from vision.evaluate import Report, calibration_from_dir, evaluate_fixture, read_image
from vision.sharpness import BASE_SIGMA_PX, blur_sigma, edge_profiles, extra_blur, sharpen_samples

FIX = Path(__file__).resolve().parent / "fixtures" / "blox"


def _stripes(sigma: float) -> tuple[np.ndarray, object]:
    """A frame of dark and light vertical and horizontal bands (edges every 20 px, at
    whole pixels), blurred by ``sigma``, and profiles across 40 of its edges."""
    img = np.full((200, 200), 40, np.uint8)
    for k in range(0, 200, 40):
        img[:, k:k + 20] = 210
    img[100:, :] = 255 - img[100:, :]
    img[100:, :][img[100:, :] > 128] = 215  # (the lower half's bands run the other way too)
    frame = cv2.cvtColor(img, cv2.COLOR_GRAY2BGR).astype(np.float32)
    if sigma > 0:
        frame = cv2.GaussianBlur(frame, (0, 0), sigma)
    centres, dirs, fam = [], [], []
    for x in (20, 40, 60, 80, 100, 120, 140, 160):
        for y in (20, 50, 80, 130, 170):
            centres.append((x - 0.5, y))
            dirs.append((1.0, 0.0))
            fam.append(y < 100)
    return np.clip(np.rint(frame), 0, 255).astype(np.uint8), edge_profiles(np.array(centres), np.array(dirs),
                                                                           np.array(fam))


def test_blur_sigma_follows_the_blur_applied():
    base = blur_sigma(*_stripes(0.0))
    assert base is not None and base < 0.6  # a pixel-sharp step rises within a pixel
    for sigma in (0.8, 1.2, 1.6):
        measured = blur_sigma(*_stripes(sigma))
        assert measured == pytest.approx(np.hypot(sigma, base), abs=0.12)
    # Beyond the profiles' reach (+-5 px) the plateaus are not reached: it reads low
    # (sharpens less than it might), never high.
    assert np.hypot(2.0, base) - 0.5 < blur_sigma(*_stripes(2.2)) < np.hypot(2.2, base)


def test_blur_sigma_needs_clean_steps():
    frame, prof = _stripes(1.0)
    flat = np.full_like(frame, 128)  # no edge shows: nothing to measure
    assert blur_sigma(flat, prof) is None
    noise = np.random.default_rng(0).integers(0, 256, frame.shape, dtype=np.uint8)
    assert blur_sigma(noise, prof) is None  # no profile rises cleanly


def test_extra_blur_and_sharpening():
    assert extra_blur(None) == 0.0 and extra_blur(BASE_SIGMA_PX * 0.9) == 0.0
    assert extra_blur(1.0, base=0.6) == pytest.approx(0.8)
    s = np.array([[100, 100, 100], [10, 250, 128]], np.uint8)
    b = np.array([[100, 110, 90], [20, 240, 128]], np.uint8)
    out = sharpen_samples(s, b, amount=1.5)
    assert out.dtype == np.uint8
    assert out.tolist() == [[100, 85, 115], [0, 255, 128]]  # clipped to bytes


@pytest.mark.parametrize("name", ["neutral", "defocus", "wide-neutral"])
def test_blur_is_measured_on_the_board_of_the_committed_fixtures(name):
    """The committed scenes (real files decoded by OpenCV): the blur measured is the
    renderer's defocus (Gaussian sigma, meta.json) on top of a frame in focus."""
    d = FIX / name
    meta = json.loads((d / "meta.json").read_text("utf-8"))
    rec = make_recognizer("blox", calibration_from_dir(d / "calibration", "blox"))
    for i, f in enumerate(sorted((d / "frames").iterdir())):
        rec.process(read_image(f), 0.0, i)
        defocus = meta["frames"][i]["conditions"].get("defocus", 0.0)
        assert rec.last["blur_sigma"] == pytest.approx(np.hypot(defocus, BASE_SIGMA_PX), abs=0.2)


@pytest.fixture(scope="module")
def defocused_wide(tmp_path_factory):
    """A wide-lens set-up (its blocks' side faces 6 to 7 px tall), six boards each shown
    at a defocus of 1.2 and 1.6 px."""
    tmp = tmp_path_factory.mktemp("defocus")
    kit = load_kit()
    seed = 5_370_000  # development seeds
    setup = sc.sample_setup(kit, "blox", seed, model="cm3-wide", tilt_deg=33.0, height_mm=560.0)
    write_setup(setup, tmp / "setup", seed, lens_frames=6)
    states, conds, seeds = [], [], []
    for j in range(12):
        s = seed + 1 + j // 2
        states.append(st.random_state(kit, "blox", np.random.default_rng(s)))
        cond = sc.sample_conditions(s, "neutral", area=kit.area_mm("blox"), kit=kit)
        cond.defocus = (1.2, 1.6)[j % 2]
        conds.append(cond)
        seeds.append(s)
    return write_scene(setup, states, conds, seeds, tmp / "scene", setup_dir=tmp / "setup")


def test_defocused_frames_are_read_better_sharpened(defocused_wide, monkeypatch):
    def errors() -> list[int]:
        report = Report()
        evaluate_fixture(defocused_wide, report, keep_details=True)
        return [d["metrics"]["space"][0] for d in report.details]

    sharpened = errors()
    monkeypatch.setattr(blox_mod, "MIN_SHARPEN_SIGMA_PX", float("inf"))
    as_seen = errors()
    # Dev: 33 -> 24 and 32 -> 23 per-space errors on two such sets of 16 frames.
    assert sum(sharpened) < 0.85 * sum(as_seen), (sharpened, as_seen)


def test_crossing_is_interp_of_every_row():
    from vision.sharpness import _crossing

    rng = np.random.default_rng(1)
    x = np.arange(-5, 5.01, 0.5)
    v = np.sort(rng.random((200, len(x))), axis=1)
    v[:, 0], v[:, -1] = 0.0, 1.0
    for level in (0.1, 0.5, 0.9):
        expected = np.array([np.interp(level, row, x) for row in v])
        assert np.allclose(_crossing(v, x, level), expected)
