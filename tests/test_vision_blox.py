"""Blox recognition (issue 8) against ground truth: committed fixtures (real OpenCV
decoding of their files), a freshly rendered set, hands, confidence and the CLI.

The thresholds here are regression guards at what the recogniser reaches on these
frames; the issue's targets (per-space error < 0.1%, ...) are measured by
bench/vision_blox.py on unseen seeds and reported there.
"""

from __future__ import annotations

import dataclasses

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from calibration.kit import load_kit
from calibration.render import scene as sc
from calibration.render import states as st
from calibration.render.fixtures import write_scene, write_setup
from calibration.store import save_calibration
from vision import make_recognizer
from vision.blox import score
from vision.evaluate import Report, calibration_from_dir, evaluate_fixture, find_fixtures, read_image

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "blox"


def _rate(report: Report, name: str) -> float:
    e, t = report.totals().get(name, (0, 0))
    return e / t if t else 0.0


@pytest.fixture(scope="module")
def single_scenes() -> Report:
    report = Report()
    for path in find_fixtures([FIX]):
        if path.name == "camera-game":
            continue
        evaluate_fixture(path, report, keep_details=True)
    print("\n" + report.format())
    return report


def test_committed_scenes_against_truth(single_scenes):
    r = single_scenes
    assert r.frames >= 13
    assert _rate(r, "space") < 0.04
    assert _rate(r, "tower_height") < 0.08
    assert _rate(r, "figure_colour") < 0.05
    assert _rate(r, "colors") == 0.0  # the surveyed board map
    # Nothing is guessed under a hand, and no frame with a hand is committed.
    assert _rate(r, "occlusion_missed") < 0.05
    assert r.totals()["commit_false"][0] == 0


def test_hand_frames_are_never_stable_and_report_occluded_cells(single_scenes):
    hand_frames = [d for d in single_scenes.details if d["truth"]["occluded"]]
    assert len(hand_frames) >= 2  # hands and everything presets
    for d in hand_frames:
        obs = d["observation"]
        assert not obs["stable"]
        truth_occ = {tuple(x) for x in d["truth"]["occluded"]}
        seen_occ = {tuple(x) for x in obs["occluded"]}
        assert len(truth_occ & seen_occ) >= 0.9 * len(truth_occ)
        for r, c in seen_occ:
            assert obs["state"]["cells"][r][c] is None and obs["cell_confidence"][r][c] is None


def test_confidence_is_reported_per_cell(single_scenes):
    for d in single_scenes.details:
        obs = d["observation"]
        confs = [v for row in obs["cell_confidence"] for v in row if v is not None]
        assert all(0.0 <= v <= 1.0 for v in confs)
        if not confs:  # every cell occluded: nothing is claimed
            assert obs["confidence"] == 0.0 and not obs["stable"]
            continue
        assert obs["confidence"] == pytest.approx(min(confs), abs=1e-4)
    # Wrong cells should mostly be the doubtful ones: their median confidence is lower.
    right, wrong = [], []
    for d in single_scenes.details:
        t, o = d["truth"]["state"]["cells"], d["observation"]["state"]["cells"]
        occ = {tuple(x) for x in d["observation"]["occluded"]} | {tuple(x) for x in d["truth"]["occluded"]}
        for r in range(9):
            for c in range(9):
                if (r, c) in occ:
                    continue
                (right if t[r][c] == o[r][c] else wrong).append(d["observation"]["cell_confidence"][r][c])
    assert wrong and np.median(wrong) < np.median(right)


def test_camera_game_sequence_commits_nothing_under_hands():
    # Three still frames at 4 fps between hands: a 0.25 s gate can commit the last one.
    report = evaluate_fixture(FIX / "camera-game", stable_seconds=0.25)
    print("\n" + report.format())
    tot = report.totals()
    assert tot["commit_false"][0] == 0
    assert tot["commit_missed"][0] < tot["commit_missed"][1]  # still frames do get committed
    assert _rate(report, "space") < 0.03
    assert _rate(report, "occlusion_missed") < 0.02


def test_freshly_rendered_scenes(tmp_path):
    kit = load_kit()
    seed = 5_310_000  # development seeds (the final evaluation uses another range)
    setup = sc.sample_setup(kit, "blox", seed, model="cm3", tilt_deg=30.0)
    write_setup(setup, tmp_path / "setup", seed, lens_frames=6)
    report = Report()
    for k, preset in enumerate(("neutral", "cool-bright", "hands")):
        s = seed + 10 + k
        state = st.random_state(kit, "blox", np.random.default_rng(s))
        cond = sc.sample_conditions(s, preset, area=kit.area_mm("blox"), kit=kit)
        d = write_scene(setup, [state], [cond], [s], tmp_path / preset, setup_dir=tmp_path / "setup")
        evaluate_fixture(d, report)
    print("\n" + report.format())
    assert report.frames == 3
    assert _rate(report, "space") < 0.05
    assert report.totals()["commit_false"][0] == 0
    assert report.by_condition["hands"]["commit_false"][1] == 1  # the hand frame was not committed


def test_every_still_scene_of_a_fixture_is_committed(tmp_path):
    """A fixture of several independent scenes: each is shown as a camera would see it put
    in front of it and held still for stable_seconds, so each is committed, not only the
    first (the cut from one scene to the next is motion and restarts the gate's clock)."""
    kit = load_kit()
    seed = 5_320_000  # development seeds
    setup = sc.sample_setup(kit, "blox", seed, model="cm3", tilt_deg=30.0)
    write_setup(setup, tmp_path / "setup", seed, lens_frames=6)
    seeds = [seed + 1 + k for k in range(3)]
    states = [st.random_state(kit, "blox", np.random.default_rng(s)) for s in seeds]
    conds = [sc.sample_conditions(s, "neutral", area=kit.area_mm("blox"), kit=kit) for s in seeds]
    d = write_scene(setup, states, conds, seeds, tmp_path / "scenes", setup_dir=tmp_path / "setup")
    report = evaluate_fixture(d)
    assert report.frames == 3
    assert tuple(report.totals()["commit_missed"]) == (0, 3)


def test_score_counts_each_kind_of_error():
    cells = [[None] * 9 for _ in range(9)]
    cells[0][0] = {"tower": ["grey", "white"]}
    cells[1][1] = {"figure": "green"}
    truth = {"stable": True, "occluded": [[5, 5]], "state": {"cells": cells}}
    seen = [[None] * 9 for _ in range(9)]
    seen[0][0] = {"tower": ["grey", "black", "white"]}
    seen[1][1] = {"figure": "blue"}
    obs = {"occluded": [[2, 2]], "state": {"cells": seen}}
    m = score(truth, obs)
    assert m["tower_height"] == (1, 1) and m["block_colour"] == (1, 2) and m["figure_colour"] == (1, 1)
    assert m["occlusion_missed"] == (1, 1) and m["occlusion_extra"] == (1, 80)
    assert m["space"] == (2, 79) and m["board_exact"] == (1, 1)


# ------------------------------------------------------------------------------ CLI


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "service.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def cal_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("cal") / "calibration.json"
    save_calibration(calibration_from_dir(FIX / "setup-cm3" / "calibration", "blox"), p)
    return p


def test_recognize_cli_prints_the_observation(cal_file, tmp_path):
    image = FIX / "neutral" / "frames" / "000000.jpg"
    overlay = tmp_path / "overlay.png"
    res = _cli("recognize", "blox", str(image), "--calibration", str(cal_file), "--overlay", str(overlay))
    assert res.returncode == 0, res.stderr
    obs = json.loads(res.stdout)
    truth = json.loads((FIX / "neutral" / "truth.jsonl").read_text().splitlines()[0])
    assert obs["game"] == "blox" and obs["stable"] is True and obs["occluded"] == []
    m = score(truth, obs)
    assert m["space"][0] <= 1 and m["space"][1] == 81
    assert read_image(overlay).shape == read_image(image).shape


def test_recognize_cli_errors(cal_file, tmp_path):
    res = _cli("recognize", "blox", str(tmp_path / "nope.jpg"), "--calibration", str(cal_file))
    assert res.returncode == 2 and "image not found" in res.stderr
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(b"this is not a jpeg")
    res = _cli("recognize", "blox", str(bad), "--calibration", str(cal_file))
    assert res.returncode == 2 and "cannot decode image" in res.stderr
    image = FIX / "neutral" / "frames" / "000000.jpg"
    res = _cli("recognize", "blox", str(image), "--calibration", str(tmp_path / "missing.json"))
    assert res.returncode == 2 and "calibration file not found" in res.stderr
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    res = _cli("recognize", "blox", str(image), "--calibration", str(broken))
    assert res.returncode == 2 and "not valid JSON" in res.stderr
    res = _cli("recognize", "blockers", str(image), "--calibration", str(cal_file))
    assert res.returncode == 2 and "calibration for blox" in res.stderr


def test_evaluate_cli_breaks_down_by_condition(tmp_path):
    out = tmp_path / "figures.json"
    res = _cli("evaluate", str(FIX / "neutral"), str(FIX / "hands"), "--json", str(out))
    assert res.returncode == 0, res.stderr
    for word in ("space", "board_exact", "tower_height", "block_colour", "figure_colour", "occlusion_missed",
                 "neutral", "hands", "ALL"):
        assert word in res.stdout
    data = json.loads(out.read_text())
    assert data["frames"] == 2 and set(data["by_condition"]) == {"neutral", "hands"}
    res = _cli("evaluate", str(tmp_path / "nothing"))
    assert res.returncode == 2 and "no such folder" in res.stderr


def test_recognizer_rejects_bad_frames(cal_file):
    from calibration.store import load_calibration

    rec = make_recognizer("blox", load_calibration(cal_file))
    with pytest.raises(ValueError, match="BGR colour frame"):
        rec.process(np.zeros((720, 1280), np.uint8), 0.0, 0)
    with pytest.raises(ValueError, match="aspect"):
        rec.process(np.zeros((500, 500, 3), np.uint8), 0.0, 0)


def test_motion_is_watched_over_the_whole_frame_where_the_apron_cannot_be_projected(cal_file, monkeypatch):
    """A corner of the motion apron outside what the lens model projects (a wide lens)
    makes the low-resolution motion gate watch the whole frame, not a hull of garbage."""
    from calibration.store import load_calibration

    rec = make_recognizer("blox", load_calibration(cal_file))
    frame = read_image(FIX / "neutral" / "frames" / "000000.jpg")
    rec.process(frame, 0.0, 0)
    assert not rec._lores_roi[1].all()  # the board and its apron, not the whole frame
    project = rec.view.project

    def with_a_lost_corner(points):
        out = project(points)
        out[0] = np.nan
        return out

    monkeypatch.setattr(rec.view, "project", with_a_lost_corner)
    rec._lores_roi = None
    rec._motion(frame, 0.25, None, blocked=False)
    assert rec._lores_roi[1].all()


# ------------------------------------------------------------------ pieces hiding pieces, glare, probe weights


def test_a_cell_hidden_behind_a_tall_tower_does_not_stop_the_commit(tmp_path):
    """An oblique camera sees nothing of a space right behind a tall tower. That cell is
    read from what is left of it; when that does not decide it but points to an empty
    space (the priors, when nothing is seen), it is reported empty at a confidence no one
    acts on, and otherwise occluded (the referee keeps a doubtful or occluded cell's
    committed content). The frame is still committed (no hand, no motion): a tower
    standing for good in front of a space must not stop the game."""
    from vision.blox import HIDDEN_GUESS_CONF
    from calibration.render.textures import default_blox_colors

    kit = load_kit()
    seed = 5_320_000  # development seeds
    setup = sc.sample_setup(kit, "blox", seed, model="cm3", tilt_deg=38.0, height_mm=650.0)
    write_setup(setup, tmp_path / "setup", seed, lens_frames=6)
    cells = [[None] * 9 for _ in range(9)]
    cells[7][2] = {"tower": ["grey", "white", "purple", "black", "white"]}
    cells[7][6] = {"tower": ["white", "white", "grey", "white", "purple"]}
    cells[3][4] = {"tower": ["purple"]}
    state = {"colors": default_blox_colors(), "cells": cells}
    cond = sc.sample_conditions(seed + 1, "neutral", area=kit.area_mm("blox"), kit=kit)
    d = write_scene(setup, [state], [cond], [seed + 1], tmp_path / "scene", setup_dir=tmp_path / "setup")
    cal = calibration_from_dir(d / "calibration", "blox")
    rec = make_recognizer("blox", cal)
    image = read_image(d / "frames" / "000000.jpg")
    rec.process(image, 0.0, 0)
    obs = rec.process(image, 1.5, 1)
    assert obs["stable"]
    occ = {tuple(x) for x in obs["occluded"]}
    conf = obs["cell_confidence"]
    # Nothing the camera saw well is occluded: the towers themselves are read.
    assert (7, 2) not in occ and (7, 6) not in occ and (3, 4) not in occ
    assert obs["state"]["cells"][3][4] == {"tower": ["purple"]}
    for r, c in occ:  # whatever is occluded is claimed by nothing
        assert obs["state"]["cells"][r][c] is None and conf[r][c] is None
    # Only spaces some tower stands in front of may be occluded or guessed (a row or two
    # behind them; a tower's own confidence may be as low for a level nothing shows).
    guessed = {(r, c) for r in range(9) for c in range(9) if conf[r][c] is not None and conf[r][c] <= HIDDEN_GUESS_CONF}
    behind = {(r, c) for r in (5, 6) for c in (1, 2, 3, 5, 6, 7)}
    assert occ <= behind and guessed - {(7, 2), (7, 6)} <= behind
    for r, c in guessed - {(7, 2), (7, 6)}:  # a guess is an empty space, never a piece nothing shows
        assert obs["state"]["cells"][r][c] is None
    wrong = [(r, c) for r in range(9) for c in range(9)
             if (r, c) not in occ and obs["state"]["cells"][r][c] != cells[r][c]]
    assert len(wrong) <= 1


def test_glare_on_a_space_is_explained_but_another_colour_is_not():
    from vision.blox import _glare_sqdist, _shaded_sqdist
    from vision.colours import lab, lab_to_linear

    black = lab_to_linear(np.array([[18.0, 1.0, -1.0]]))[0]
    purple = lab_to_linear(np.array([[44.0, 36.0, -5.0]]))[0]
    white_light = np.ones(3) * 0.6
    refs = np.array([black, purple, purple], np.float32)
    # Black under a glare spot, purple under glare and shade, and a yellow chip on purple.
    obs = np.array([black + white_light, 0.7 * purple + 0.3 * white_light,
                    lab_to_linear(np.array([[80.0, 5.0, 60.0]]))[0]], np.float32)
    g2 = _glare_sqdist(obs, refs, lab(obs))
    s2 = _shaded_sqdist(lab(obs), lab(refs))
    assert g2[0] < 1.0 and g2[1] < 1.0  # a glare spot keeps the space's own colour underneath
    assert s2[0] > 400 and s2[1] > 100  # shading alone cannot explain it
    assert g2[2] > 900  # a chip's colour is no glare


def test_glare_clipped_by_the_sensor_is_explained_but_a_clipped_colour_is_not():
    from vision.blox import _glare_sqdist
    from vision.colours import lab, lab_to_linear

    clip = 0.95  # normalised linear light where the sensor's bytes run out
    spaces = lab_to_linear(np.array([[55.0, 10.0, 60.0], [30.0, 10.0, -40.0], [60.0, -30.0, 40.0]])).astype(np.float32)
    light = 0.9 * spaces + 0.8  # glare spots bright enough to clip one or two channels
    obs = np.minimum(light, clip).astype(np.float32)
    clipped = light >= clip
    assert clipped.any(axis=1).all() and not clipped.all(axis=1).any()
    blind = _glare_sqdist(obs, spaces, lab(obs))
    aware = _glare_sqdist(obs, spaces, lab(obs), clipped)
    # What was cut off was at least that bright: the glare fits far better (the glare
    # price in the recogniser is 2 * SIGMA**2 = 72), where read as it came it need not.
    assert np.all(aware <= blind + 1e-3) and aware.max() < 10.0
    assert blind.max() > 25.0 and aware.max() < blind.max() / 3
    # A yellow chip bright enough to clip its red and green, on a purple space: no glare.
    purple = lab_to_linear(np.array([[44.0, 36.0, -5.0]])).astype(np.float32)
    chip = lab_to_linear(np.array([[95.0, -5.0, 80.0]])).astype(np.float32)
    chip_obs = np.minimum(chip, clip).astype(np.float32)
    assert (chip >= clip).any()
    assert _glare_sqdist(chip_obs, purple, lab(chip_obs), chip >= clip)[0] > 900


def test_side_probes_are_weighted_by_how_robust_they_are_to_block_jitter(cal_file):
    from calibration.store import load_calibration
    from vision import _blox_geometry as geo
    from vision.board import BoardView

    view = BoardView(load_calibration(cal_file), "blox")
    g = geo.build(view)
    side = g.e_src == geo.BLK_SIDE
    assert np.all(g.e_w[~side] == 1.0)
    strong, weak = side & (g.e_w == 1.0), side & (g.e_w < 1.0)
    assert strong.any() and weak.any()
    assert np.allclose(g.e_w[weak], geo.WEAK_SIDE_WEIGHT)
    # A looser tolerance trusts more of them, a stricter one fewer.
    loose = geo.build(view, side_tol=0.3)
    strict = geo.build(view, side_tol=2.5)
    count = lambda gg: int(((gg.e_src == geo.BLK_SIDE) & (gg.e_w == 1.0)).sum())  # noqa: E731
    assert count(strict) < count(g) < count(loose)


def test_full_weight_side_probes_lie_clear_of_their_levels_edges_in_the_image(cal_file):
    """Seen at a grazing angle a tower level is a band a few pixels tall whose edges blur
    (defocus, motion, JPEG) into the next level's colour; on dev scenes the confident
    misreadings of clearly visible levels came from side probes within a pixel or two of
    such an edge. A side probe counts in full only at SIDE_MARGIN_PX or more from its
    level's top and bottom edges, measured here by casting its ray onto its face and
    projecting the level's edges above and below that point."""
    from calibration.store import load_calibration
    from vision import _blox_geometry as geo
    from vision.board import BoardView

    view = BoardView(load_calibration(cal_file), "blox")
    b = view.kit.blox
    half, bh, s, n = b.block.footprint_mm / 2, b.block.height_mm, b.space_mm, b.spaces
    C = view.camera_position()
    counts = []
    for margin in (0.0, geo.SIDE_MARGIN_PX, 4.0):
        g = geo.build(view, side_margin_px=margin)
        e = np.nonzero((g.e_src == geo.BLK_SIDE) & (g.e_w == 1.0))[0]
        counts.append(len(e))
        p = g.e_p[e]
        cell = g.e_group[e] // (geo.N_HYP * geo.N_GTYPES)
        level = g.e_group[e] % geo.N_GTYPES - geo.G_LEVEL0  # 0 = the bottom block
        cx, cy = (cell % n + 0.5) * s, (cell // n + 0.5) * s
        o = g.orient[p]  # 0..3: the face -y, +x, +y, -x
        plane = np.select([o == 0, o == 1, o == 2], [cy - half, cx + half, cy + half], cx - half)
        axis = np.where(o % 2 == 0, 1, 0)
        d = view.rays(g.px[p])
        hit = C[None] + d * ((plane - C[axis]) / d[np.arange(len(p)), axis])[:, None]
        assert np.all((-hit[:, 2] > level * bh) & (-hit[:, 2] < (level + 1) * bh))
        gap = []
        for z in (level * bh, (level + 1) * bh):
            edge = hit.copy()
            edge[:, 2] = -z
            gap.append(np.linalg.norm(view.project(edge) - g.px[p], axis=1))
        assert np.min(np.minimum(*gap)) >= 0.9 * margin
    # The margin is what leaves them out: the jitter tolerance alone trusts more of them.
    assert counts[0] > counts[1] > counts[2] > 0


def test_side_probes_of_a_thin_level_keep_clear_of_its_edges(tmp_path, monkeypatch):
    """From a camera tilted 18 degrees a level's band on a tower's side is 4 to 8 px tall.
    The two rows of side probes move toward the band's middle as it thins, so that they
    keep SIDE_MARGIN_PX from its edges and count in full: every level whose band leaves
    that room has full-weight probes. At the fixed heights used before (0.35 and 0.70 of
    the block) a quarter of the levels 5-6 px tall had none, and were read on weak probes
    alone (dev scenes at 18-27 degrees: the commonest error, a lower level read wrong)."""
    from vision import _blox_geometry as geo
    from vision.board import BoardView

    kit = load_kit()
    seed = 5_350_000  # development seeds
    setup = sc.sample_setup(kit, "blox", seed, model="cm3", tilt_deg=18.0, height_mm=780.0)
    write_setup(setup, tmp_path / "setup", seed, lens_frames=6)
    view = BoardView(calibration_from_dir(tmp_path / "setup" / "calibration", "blox"), "blox")

    def levels_with_full_probes(g):
        hmax = g.level_band_px.shape[1]
        cell = g.e_group // (geo.N_HYP * geo.N_GTYPES)
        hyp = (g.e_group // geo.N_GTYPES) % geo.N_HYP
        level = g.e_group % geo.N_GTYPES - geo.G_LEVEL0
        full = (g.e_src == geo.BLK_SIDE) & (g.e_w == 1.0) & (hyp == hmax)  # the tallest tower: every level
        out = np.zeros(g.level_band_px.shape, bool)
        out[cell[full], level[full]] = True
        return out

    g = geo.build(view)
    band = g.level_band_px
    room = 2 * (geo.SIDE_MARGIN_PX + geo.SIDE_ROW_SLACK_PX) / (1 - 2 * geo.MIN_SIDE_ROW_SPREAD)
    thin = (band >= room) & (band < room + 1.0)
    assert thin.sum() >= 30  # the case at issue is common here
    assert levels_with_full_probes(g)[band >= room].all()
    for b in (3.0, room, 8.0, 20.0):  # the rows, in px from the band's nearer edge
        lo, hi = geo._side_rows(b, geo.SIDE_MARGIN_PX)
        assert lo < 0.5 < hi and hi - 0.5 == pytest.approx(0.5 - lo)
        assert min(lo, 1 - hi) * b >= min(geo.SIDE_MARGIN_PX, (0.5 - geo.MIN_SIDE_ROW_SPREAD) * b) - 1e-9
    monkeypatch.setattr(geo, "_side_rows", lambda band_px, margin_px: (0.35, 0.7))
    assert levels_with_full_probes(geo.build(view))[thin].mean() < 0.9


def test_a_thin_lower_levels_colour_is_reported_with_less_confidence():
    """The colour posterior of a level below a tower's top is tempered in proportion when
    its band is thinner than THIN_BAND_PX: blur mixes the next level into all its probes
    at once (dev scenes: such levels read wrong at confidence 0.9 and over). The top
    level (read on its top face), thick bands, figures and empty spaces keep
    COLOUR_TEMPERATURE."""
    from vision._blox_geometry import G_FIG, G_LEVEL0, N_GTYPES
    from vision.blox import COLOUR_TEMPERATURE, THIN_BAND_PX, colour_temperature

    band = np.array([[5.0, 5.0, 5.0, 5.0, 5.0],
                     [2 * THIN_BAND_PX] * 5,
                     [5.0] * 5,
                     [5.0] * 5])
    decision = np.array([3, 3, 6, 0])  # towers of 3 (thin bands, thick bands), a figure, empty
    t = colour_temperature(decision, band)
    assert t.shape == (4, N_GTYPES)
    assert t[0, G_LEVEL0] == t[0, G_LEVEL0 + 1] == pytest.approx(COLOUR_TEMPERATURE * THIN_BAND_PX / 5.0)
    assert t[0, G_LEVEL0 + 2] == COLOUR_TEMPERATURE  # its top level
    assert np.all(t[1] == COLOUR_TEMPERATURE) and np.all(t[2:] == COLOUR_TEMPERATURE)
    assert t[0, G_FIG] == COLOUR_TEMPERATURE
    assert np.all(colour_temperature(decision, None) == COLOUR_TEMPERATURE)


def _random_cost_table(rec, g, rng):
    """A cost table as _probe_costs fills it, with random costs: per source, (probes,) for
    a source with one candidate colour, (4, probes) for one with four. Returns the table
    and the costs by source."""
    from vision._blox_geometry import N_SRC, UNKNOWN
    from vision._blox_score import SINGLE_SOURCES
    from vision.blox import UNKNOWN_COST

    ix = g.score_index
    T = ix.new_table()
    costs = {}
    for src in range(N_SRC):
        rows = len(g.src_probes[src])
        if src == UNKNOWN:
            costs[src] = np.full(rows, UNKNOWN_COST, np.float32)
        elif src in SINGLE_SOURCES:
            costs[src] = rng.uniform(0, 4.5, rows).astype(np.float32)
        else:
            costs[src] = rng.uniform(0, 4.5, (4, rows)).astype(np.float32)
        ix.fill(T, src, costs[src])
    return T, costs


def _direct_score(rec, g, costs, visible):
    """The scoring written out entry by entry (the definition the indexed sums must
    meet): every visible entry adds its probe's costs for its source times its weight to
    its group, or, a side probe that may see the neighbouring level, a cost per pair of
    colours of its two levels to that pair. ``visible`` may weigh a probe (a nearer piece
    may cover it): an entry's weight is then the lower of its own and its probe's."""
    from vision._blox_geometry import ALT_DOWN, ALT_UP, FIGURE, G_CHIP, G_FIG, G_LEVEL0, G_OWN, G_UNKNOWN
    from vision._blox_geometry import N_GTYPES, N_HYP
    from vision.blox import ADJACENT_PENALTY, _chain_min

    nn = rec.n * rec.n
    size = nn * N_HYP * N_GTYPES
    v = np.asarray(visible, float)[g.e_p]
    sel = np.nonzero(v)[0]
    w = np.minimum(g.e_w, v)
    q = np.zeros((len(g.e_p), 4))
    for src, c in costs.items():
        m = g.e_src == src
        pos = np.searchsorted(g.src_probes[src], g.e_p[m])
        q[m] = c[pos][:, None] if c.ndim == 1 else c[:, pos].T
    pair = np.isin(g.e_alt, (ALT_UP, ALT_DOWN))
    single = sel[~pair[sel]]
    S = np.stack([np.bincount(g.e_group[single], weights=q[single, j] * w[single], minlength=size)
                  for j in range(4)], axis=1).reshape(nn, N_HYP, N_GTYPES, 4)
    cnt = np.bincount(g.e_group[sel], weights=w[sel], minlength=size).reshape(nn, N_HYP, N_GTYPES)
    # A pair entry adds, for colours (a, b) of (lower, upper) level, its weight times the
    # lower of its own level's colour and the other's plus the price.
    pe = sel[pair[sel]]
    level = (g.e_group[pe] % N_GTYPES).astype(int) - G_LEVEL0
    lower = np.where(g.e_alt[pe] == ALT_DOWN, level - 1, level)
    qa, qb = q[pe][:, :, None], q[pe][:, None, :]
    own_is_lower = (g.e_alt[pe] == ALT_UP)[:, None, None]
    val = np.where(own_is_lower, np.minimum(qa, qb + ADJACENT_PENALTY), np.minimum(qb, qa + ADJACENT_PENALTY))
    P = np.zeros((nn, N_HYP, 4, 4, 4))
    idx = ((g.e_group[pe] // N_GTYPES).astype(int) * 4 + lower)[:, None, None] * 16 + np.arange(16).reshape(4, 4)
    np.add.at(P.reshape(-1), idx, val * w[pe][:, None, None])
    cost = S[:, :, G_UNKNOWN, 0] + S[:, :, G_OWN, 0] + S[:, :, G_CHIP, 0] + S[:, :, G_FIG, :].min(axis=2)
    cost[:, 1:FIGURE] += _chain_min(S[:, 1:FIGURE, G_LEVEL0:, :], P[:, 1:FIGURE])
    return cost + rec._hyp_prior[None, :], S, cnt, P


def test_indexed_scoring_equals_the_direct_sum_over_entries(cal_file):
    """The scoring reads a per-pose index (vision._blox_score: a cost table per frame,
    group sums as segment sums over entries sorted by group, pairs of levels likewise);
    its hypothesis costs, group sums, visible weights and pair sums must equal summing
    every visible entry directly, and rescoring a few cells from a previous result must
    equal scoring them afresh."""
    from calibration.store import load_calibration

    rec = make_recognizer("blox", load_calibration(cal_file))
    rec.process(read_image(FIX / "neutral" / "frames" / "000000.jpg"), 0.0, 0)
    g = rec.geometry()
    rng = np.random.default_rng(3)
    T, costs = _random_cost_table(rec, g, rng)
    visible = rng.random(len(g.px)) > 0.2
    got = rec._score(T, visible, g)
    want = _direct_score(rec, g, costs, visible)
    assert np.any(want[3] != 0)  # pairs of levels are scored
    for a, b in zip(got, want):
        assert np.allclose(a, b, rtol=1e-6, atol=1e-4)
    visible2 = visible.copy()
    cells = np.array([0, 40, 80])
    visible2[np.isin(g.cell, cells)] = True
    visible2[g.cell == 40] = False
    part = rec._score(T, visible2, g, cells, got)
    for a, b in zip(part, _direct_score(rec, g, costs, visible2)):
        assert np.allclose(a, b, rtol=1e-6, atol=1e-4)


def test_scoring_index_is_rebuilt_when_the_pose_changes(cal_file, monkeypatch):
    """Everything the scoring reads is cached per pose (BoardView.version): after the
    board moves, the geometry, its scoring index and the chip-rim pixels are built
    again for the new pose, and the index still meets the direct sum."""
    from calibration.store import load_calibration

    rec = make_recognizer("blox", load_calibration(cal_file))
    image = read_image(FIX / "neutral" / "frames" / "000000.jpg")
    rec.process(image, 0.0, 0)
    g1 = rec.geometry()
    assert rec.geometry() is g1  # the same pose: the same tables
    pose = rec.view.pose
    moved = dataclasses.replace(pose, tvec=np.asarray(pose.tvec, float) + np.array([[6.0], [-4.0], [0.0]]).reshape(
        np.shape(pose.tvec)))
    rec.view.tracker.set_pose(moved)
    rec.view._changed()
    g2 = rec.geometry()
    assert g2 is not g1 and g2.version == rec.view.version != g1.version
    assert g2.score_index is not g1.score_index
    assert not np.allclose(g2.px[:50], g1.px[:50])
    # The new index reads the new pose's probes.
    assert np.array_equal(g2.score_index.row_probe[g2.score_index.blocks[0]], g2.src_probes[0])
    rng = np.random.default_rng(4)
    T, costs = _random_cost_table(rec, g2, rng)
    visible = rng.random(len(g2.px)) > 0.1
    for a, b in zip(rec._score(T, visible, g2), _direct_score(rec, g2, costs, visible)):
        assert np.allclose(a, b, rtol=1e-6, atol=1e-4)
    import vision.blox as vb

    monkeypatch.setattr(vb, "RIM_MAX_VIEW_DEG", 90.0)  # every tower's rim is measured
    rec._chip_rim_costs(image, np.full(81, 2), np.zeros(81, bool))
    assert rec._chip_pixels[0] == rec.view.version and rec._chip_pixels[1]["rim"]


def test_readings_with_the_indexed_scoring_equal_the_direct_sum(cal_file, monkeypatch):
    """Whole frames (a plain scene and one with hands) read the same with the indexed
    scoring as with the scoring written out entry by entry: the same cells, occlusions,
    stability and confidences."""
    import vision.blox as vb
    from calibration.store import load_calibration
    from vision._blox_geometry import N_SRC
    from vision._blox_score import SINGLE_SOURCES

    cal = load_calibration(cal_file)
    frames = [read_image(FIX / name / "frames" / "000000.jpg") for name in ("neutral", "hands", "glare")]

    def run():
        rec = make_recognizer("blox", cal)
        return [rec.process(f, 1.5 * i, i) for i, f in enumerate(frames + frames)]

    fast = run()

    def direct(self, T, visible, g, cells=None, prev=None):
        ix = g.score_index
        costs = {src: T[1, ix.blocks[src]] if src in SINGLE_SOURCES else T[1:, ix.blocks[src]]
                 for src in range(N_SRC)}
        return _direct_score(self, g, costs, visible)

    monkeypatch.setattr(vb.Recognizer, "_score", direct)
    slow = run()
    for a, b in zip(fast, slow):
        assert a["state"] == b["state"] and a["occluded"] == b["occluded"] and a["stable"] == b["stable"]
        ca = np.array([[np.nan if v is None else v for v in row] for row in a["cell_confidence"]], float)
        cb = np.array([[np.nan if v is None else v for v in row] for row in b["cell_confidence"]], float)
        assert np.allclose(ca, cb, atol=2e-4, equal_nan=True)


def test_probes_are_normalised_per_cell_as_by_the_balance(cal_file):
    """The light field is evaluated once per cell (every probe is normalised at its
    cell's centre): the same values as FrameBalance.normalise at each probe's centre."""
    from calibration.store import load_calibration
    from vision.blox import _normalise_by_cell

    rec = make_recognizer("blox", load_calibration(cal_file))
    rec.process(read_image(FIX / "one-sided" / "frames" / "000000.jpg"), 0.0, 0)
    g = rec.geometry()
    balance = rec.last["balance"]
    assert np.ptp(balance.field(g.centre_xy)) > 0.01  # a light field that varies over the board
    lin = np.random.default_rng(7).random((len(g.px), 3)).astype(np.float32)
    assert np.array_equal(_normalise_by_cell(balance, lin, g.cell, g.cell_centres), balance.normalise(lin, g.centre_xy))


def test_probes_are_sampled_and_converted_as_by_sample_and_bgr_to_linear():
    """The probes are sampled with remap maps prepared once per pose (vision.blox._Sampler)
    and converted to linear light by a table: the same as vision.board.sample (bytes, as
    OpenCV's remap of a uint8 frame rounds; NaN outside the frame, here 0) and
    bgr_to_linear, also for points near and beyond the frame's edge."""
    from vision.blox import _bytes_to_linear, _Sampler
    from vision.board import sample
    from vision.colours import bgr_to_linear

    image = read_image(FIX / "neutral" / "frames" / "000000.jpg")
    H, W = image.shape[:2]
    rng = np.random.default_rng(6)
    px = np.concatenate([rng.uniform(-20, [W + 20, H + 20], (5000, 2)),
                         [[W - 1, 10], [W - 0.5, 10], [0, H - 1], [-0.01, 3], [W - 1.2, H - 1.1]]]).astype(np.float32)
    raw = sample(image, px)
    sampler = _Sampler(px, W, H)
    got = sampler.read(image)
    assert got.dtype == np.uint8 and sampler.outside.sum() > 100
    assert np.array_equal(sampler.outside, np.isnan(raw).any(axis=1))
    assert np.array_equal(got.astype(np.float32), np.nan_to_num(raw))
    assert np.array_equal(_bytes_to_linear(got), bgr_to_linear(np.nan_to_num(raw)))


def test_chain_of_levels_matches_brute_force():
    """The levels' colours are chosen jointly (pairs of adjacent levels): the lowest
    total and the per-level min-marginals equal trying every colouring."""
    import itertools

    from vision.blox import _chain_marginals, _chain_min

    rng = np.random.default_rng(5)
    U = rng.uniform(0, 5, (4, 5, 4))
    P = rng.uniform(0, 5, (4, 4, 4, 4))
    for k in range(4):
        best = np.full((5, 4), np.inf)
        for cs in itertools.product(range(4), repeat=5):
            tot = sum(U[k, lv, cs[lv]] for lv in range(5)) + sum(P[k, lv, cs[lv], cs[lv + 1]] for lv in range(4))
            for lv in range(5):
                best[lv, cs[lv]] = min(best[lv, cs[lv]], tot)
        assert _chain_min(U, P)[k] == pytest.approx(best.min())
        assert np.allclose(_chain_marginals(U, P)[k], best)


def test_under_a_hand_stands_at_most_one_block_more_than_was_read(cal_file):
    """A hand hides what it covers in the image by its own mask; for hiding the cells
    *behind* it, what stands under it is at most what was last read there plus one
    block (or a figure), not the tallest tower, so a hand does not blank the row behind
    it. Before anything has been read, the tallest tower is assumed."""
    from calibration.store import load_calibration

    rec = make_recognizer("blox", load_calibration(cal_file))
    b = rec.kit.blox
    tallest = b.block.max_tower * b.block.height_mm + b.chip.thickness_mm + 1
    assert np.all(rec._hand_cell_top() == tallest)
    truth = json.loads((FIX / "neutral" / "truth.jsonl").read_text("utf-8").splitlines()[0])
    image = read_image(FIX / "neutral" / "frames" / "000000.jpg")
    rec.process(image, 0.0, 0)
    obs = rec.process(image, 1.5, 1)
    top = rec._hand_cell_top().reshape(9, 9)
    occ = {tuple(x) for x in obs["occluded"]}
    checked = 0
    for r in range(9):
        for c in range(9):
            cell = truth["state"]["cells"][r][c]
            if (r, c) in occ or cell != obs["state"]["cells"][r][c]:
                continue
            if cell and "tower" in cell:
                was = len(cell["tower"]) * b.block.height_mm + b.chip.thickness_mm
            else:
                was = b.figure.height_mm if cell else 0.0
            grown = max(was + b.block.height_mm + (b.chip.thickness_mm if was == 0 else 0), b.figure.height_mm)
            assert top[r, c] == pytest.approx(min(grown + 1, tallest))
            checked += 1
    assert checked > 60
    assert (top < tallest).sum() > 60


def test_side_shading_is_not_swung_by_one_tower_with_few_probes(cal_file):
    """The side faces' shading per orientation is measured from the towers' top blocks.
    Many towers agreeing set it; a single tower seen by a few side probes (a face at the
    board's edge, a neighbour in the way) only nudges it from the usual shading."""
    from calibration.store import load_calibration
    from vision import _blox_geometry as geo
    from vision.blox import DEFAULT_SIDE_SHADE

    rec = make_recognizer("blox", load_calibration(cal_file))
    rec.process(read_image(FIX / "neutral" / "frames" / "000000.jpg"), 0.0, 0)
    g = rec.geometry()
    n2 = rec.n * rec.n

    def estimate(cells: np.ndarray, ratio: float) -> np.ndarray:
        decision = np.zeros(n2, int)
        decision[cells] = 1  # one-block towers
        lin = np.full((len(g.px), 3), 0.4, np.float32)
        side = (g.e_src == geo.BLK_SIDE) & (g.e_hyp == 1)
        lin[g.e_p[side]] = 0.4 * ratio
        rec.side_shade = np.full(4, DEFAULT_SIDE_SHADE)
        rec._estimate_side_shade(lin, np.ones(len(g.px), bool), decision, g)
        return rec.side_shade.copy()

    ent = g.shade_ent
    one_hyp = ent[g.e_hyp[ent] == 1]
    sides = one_hyp[g.e_src[one_hyp] == geo.BLK_SIDE]
    faces, counts = np.unique(g.e_cell[sides] * 4 + g.orient[g.e_p[sides]], return_counts=True)
    # The orientations this camera sees robustly: on many towers, with the 3 probes a face needs.
    towers = np.bincount(faces[counts >= 3] % 4, minlength=4)
    measured = towers >= 10
    assert measured.sum() >= 1
    everywhere = estimate(np.arange(n2), 0.7)
    assert np.all(np.abs(everywhere[measured] - 0.7) < 0.03)
    # One seen on a tower or two only: nudged from the usual shading toward it, no further.
    assert np.all((everywhere[~measured] >= DEFAULT_SIDE_SHADE - 1e-9) & (everywhere[~measured] <= 0.7 + 1e-9))
    # One tower whose sides look brighter than its top: pulled toward the usual shading.
    # (The tower whose measured face shows the fewest probes, at least the 3 a face needs.)
    k = int(faces[counts >= 3][np.argmin(counts[counts >= 3])] // 4)
    single = estimate(np.array([k]), 1.05)
    assert np.all(single < 0.85) and np.any(single > DEFAULT_SIDE_SHADE + 0.01)
    many = estimate(np.arange(n2), 1.05)  # many towers agreeing: believed, bright sides and all
    assert np.all(np.abs(many[measured] - 1.05) < 0.05)



def test_a_hidden_space_is_guessed_empty_only_when_the_evidence_points_there(tmp_path, monkeypatch):
    """Spaces right behind a row of tall towers (an oblique camera) are not decided by
    what is left of them. One whose evidence still points to an empty space with
    posterior ``HIDDEN_GUESS_MIN`` is reported empty at ``HIDDEN_GUESS_CONF`` (a guess,
    marked as one); one below it is reported occluded; a piece is never guessed, nor a
    space of which nothing is seen (observation.md: ``occluded`` is what could not be
    seen)."""
    import vision.blox as vb
    from calibration.render.textures import default_blox_colors

    kit = load_kit()
    seed = 5_320_000  # development seeds
    # (At 40 degrees of tilt the spaces behind the towers of the middle row show
    # enough of their squares beside them, through the substitute side probes, to be
    # read: none is left to guess.)
    setup = sc.sample_setup(kit, "blox", seed, model="cm3", tilt_deg=38.0, height_mm=520.0)
    write_setup(setup, tmp_path / "setup", seed, lens_frames=6)
    cells = [[None] * 9 for _ in range(9)]
    for c in range(0, 9, 2):
        cells[7][c] = {"tower": ["grey", "white", "purple", "black", "white"]}
        cells[4][c] = {"tower": ["white", "purple", "grey", "black", "purple"]}
    state = {"colors": default_blox_colors(), "cells": cells}
    cond = sc.sample_conditions(seed + 1, "neutral", area=kit.area_mm("blox"), kit=kit)
    d = write_scene(setup, [state], [cond], [seed + 1], tmp_path / "scene", setup_dir=tmp_path / "setup")
    cal = calibration_from_dir(d / "calibration", "blox")
    image = read_image(d / "frames" / "000000.jpg")

    def read(guess_min: float) -> tuple[dict, dict]:
        monkeypatch.setattr(vb, "HIDDEN_GUESS_MIN", guess_min)
        rec = make_recognizer("blox", cal)
        rec.process(image, 0.0, 0)
        return rec.process(image, 1.5, 1), rec.last

    strict, last = read(1.0)  # never guess: every undecided hidden cell is occluded
    assert strict["stable"]
    occ = {tuple(x) for x in strict["occluded"]}
    assert occ and all(last["hidden_cell"][r, c] for r, c in occ)
    empty_like = {(r, c) for r, c in occ if last["decision"][r, c] == 0 and last["square_visible"][r, c] > 0}
    assert empty_like
    loose, _ = read(0.0)  # guess every hidden cell whose evidence points to an empty space
    assert loose["stable"]
    assert {tuple(x) for x in loose["occluded"]} == occ - empty_like
    for r, c in empty_like:
        assert loose["state"]["cells"][r][c] is None
        assert 0.0 < loose["cell_confidence"][r][c] <= vb.HIDDEN_GUESS_CONF
    for r, c in occ - empty_like:  # a piece nothing shows clearly is not guessed
        assert loose["state"]["cells"][r][c] is None and loose["cell_confidence"][r][c] is None

    # A hand over the board: nothing is guessed while it is there (issue 8: nothing is
    # guessed for cells under a hand, and its edge is found only roughly).
    hand = sc.Hand(target=(170.0, 120.0), height=120.0, side="near", radius=38.0)
    hand_cond = dataclasses.replace(cond, hands=[hand])
    d2 = write_scene(setup, [state], [hand_cond], [seed + 2], tmp_path / "hand", setup_dir=tmp_path / "setup")
    hand_image = read_image(d2 / "frames" / "000000.jpg")
    monkeypatch.setattr(vb, "HIDDEN_GUESS_MIN", 0.0)
    rec = make_recognizer("blox", cal)
    obs = rec.process(hand_image, 0.0, 0)
    assert rec.last["hands"].any and not obs["stable"]
    guessed = [(r, c) for r in range(9) for c in range(9)
               if obs["cell_confidence"][r][c] is not None and obs["cell_confidence"][r][c] <= vb.HIDDEN_GUESS_CONF
               and rec.last["hidden_cell"][r, c]]
    assert not guessed
    assert empty_like & {tuple(x) for x in obs["occluded"]}  # the spaces guessed on the still board


# ------------------------------------------------------------------ chip radius (heights)


def test_chip_radius_in_plane_is_the_scaling_about_the_nadir(cal_file):
    """A chip's rim of an h-block tower, projected and cast back onto the plane of another
    height's chip top, is a circle of the radius chip_radius_in_plane predicts."""
    from calibration.store import load_calibration
    from vision import _blox_geometry as geo
    from vision.board import BoardView

    view = BoardView(load_calibration(cal_file), "blox")
    b = view.kit.blox
    C = view.camera_position()
    R = b.chip.diameter_mm / 2
    for (r, c), h, h_plane in (((4, 4), 5, 1), ((1, 7), 1, 4), ((7, 2), 3, 3)):
        a = np.linspace(0, 2 * np.pi, 40, endpoint=False)
        z = -(h * b.block.height_mm + b.chip.thickness_mm)
        rim = np.column_stack([(c + 0.5) * b.space_mm + R * np.cos(a), (r + 0.5) * b.space_mm + R * np.sin(a),
                               np.full(len(a), z)])
        d = view.rays(view.project(rim))
        zp = -(h_plane * b.block.height_mm + b.chip.thickness_mm)
        p = C[None] + d * ((zp - C[2]) / d[:, 2])[:, None]
        centre = p[:, :2].mean(axis=0)
        radius = np.hypot(*(p[:, :2] - centre).T)
        want = float(geo.chip_radius_in_plane(view, h_plane, np.array([h]))[0])
        assert np.allclose(radius, want, atol=0.02)
        assert (want > R) == (h > h_plane) and (want == pytest.approx(R)) == (h == h_plane)


def _rim_profiles(radius: float, centre: tuple[float, float], inside, outside, angles, radii, ramp: float = 0.5):
    """Synthetic radial profiles across a disc's rim (linear colour ramp ``ramp`` mm wide)."""
    x = np.cos(angles)[:, None] * radii[None, :]
    y = np.sin(angles)[:, None] * radii[None, :]
    dist = np.hypot(x - centre[0], y - centre[1]) - radius
    m = np.clip(0.5 - dist / ramp, 0, 1)[..., None]
    return m * np.asarray(inside, np.float32) + (1 - m) * np.asarray(outside, np.float32)


def _fit_rim_circle(prof, radii, angles, use=None):
    """One chip's (radius, error) by vision.blox.fit_rim_circles, None without a reading."""
    from vision.blox import fit_rim_circles

    radius, sigma = fit_rim_circles(prof[None], radii, angles, None if use is None else np.asarray(use)[None])
    return None if not np.isfinite(radius[0]) else (float(radius[0]), float(sigma[0]))


def test_fit_rim_circle_measures_an_off_centre_disc():
    from vision import _blox_geometry as geo
    from vision.blox import RIM_MIN_DIRECTIONS

    radii = geo.rim_radii(load_kit())
    angles = geo.rim_angles()
    chip, top = (0.7, 0.5, 0.1), (0.8, 0.8, 0.75)  # gold chip on a white block: linear RGB
    for radius, centre in ((10.0, (0.0, 0.0)), (10.35, (1.2, -0.8)), (9.7, (-0.5, 0.9))):
        fit = _fit_rim_circle(_rim_profiles(radius, centre, chip, top, angles, radii), radii, angles)
        assert fit is not None and abs(fit[0] - radius) < 0.03 and fit[1] < 0.2
    # A few profiles spoilt (a nearer piece's corner across them) are left out.
    prof = _rim_profiles(10.2, (0.5, 0.0), chip, top, angles, radii)
    prof[:4, 10:] = (0.1, 0.1, 0.1)
    fit = _fit_rim_circle(prof, radii, angles)
    assert fit is not None and abs(fit[0] - 10.2) < 0.05
    # Only the profiles allowed are read; too few, or no contrast: no reading.
    half = np.cos(angles) >= 0
    assert abs(_fit_rim_circle(_rim_profiles(10.1, (0, 0), chip, top, angles, radii), radii, angles, half)[0] - 10.1) < 0.03
    few = np.zeros(len(angles), bool)
    few[:RIM_MIN_DIRECTIONS - 1] = True
    assert _fit_rim_circle(_rim_profiles(10.1, (0, 0), chip, top, angles, radii), radii, angles, few) is None
    assert _fit_rim_circle(_rim_profiles(10.1, (0, 0), top, top, angles, radii), radii, angles) is None


def test_rim_circles_of_several_chips_are_fitted_as_one_at_a_time():
    """The chips' rims are fitted all at once (fit_rim_circles): each chip's radius and
    error are those of fitting it alone, whatever the others show (one without contrast,
    one with a few spoilt profiles, one with too few profiles allowed)."""
    from vision import _blox_geometry as geo
    from vision.blox import RIM_MIN_DIRECTIONS, fit_rim_circles

    radii = geo.rim_radii(load_kit())
    angles = geo.rim_angles()
    chip, top = (0.7, 0.5, 0.1), (0.8, 0.8, 0.75)
    spoilt = _rim_profiles(10.2, (0.5, 0.0), chip, top, angles, radii)
    spoilt[:4, 10:] = (0.1, 0.1, 0.1)
    prof = np.stack([_rim_profiles(10.35, (1.2, -0.8), chip, top, angles, radii),
                     _rim_profiles(10.1, (0, 0), top, top, angles, radii), spoilt,
                     _rim_profiles(9.7, (-0.5, 0.9), chip, top, angles, radii),
                     _rim_profiles(10.0, (0, 0), chip, top, angles, radii)])
    use = np.ones((5, len(angles)), bool)
    use[4, RIM_MIN_DIRECTIONS - 1:] = False
    radius, sigma = fit_rim_circles(prof, radii, angles, use)
    assert np.isnan(radius[[1, 4]]).all() and np.isfinite(radius[[0, 2, 3]]).all()
    for i in (0, 2, 3):
        alone = fit_rim_circles(prof[i:i + 1], radii, angles, use[i:i + 1])
        assert radius[i] == pytest.approx(alone[0][0], abs=1e-9) and sigma[i] == pytest.approx(alone[1][0], abs=1e-9)
    assert abs(radius[0] - 10.35) < 0.03 and abs(radius[2] - 10.2) < 0.05 and abs(radius[3] - 9.7) < 0.03


def test_chip_rim_costs_point_at_the_true_heights(monkeypatch):
    """On a committed scene, the chip's radius alone (sampled in the plane of each true
    height) prefers the true height or a neighbour for the towers whose rim it reads,
    and the exact one for most: the cue that decides towers straight under the camera.
    (This oblique scene's towers are measured with the steepness gate lifted; with it,
    only the towers seen within RIM_MAX_VIEW_DEG of straight down are.)"""
    import vision.blox as vb
    from vision.evaluate import load_fixture

    fx = load_fixture(FIX / "neutral")
    rec = make_recognizer("blox", calibration_from_dir(fx.path / "calibration", "blox"))
    i, image = next(iter(fx.frames()))
    rec.process(image, 0.0, i)
    truth = np.zeros(81, int)
    for r, row in enumerate(fx.truth[i]["state"]["cells"]):
        for c, v in enumerate(row):
            if v and "tower" in v:
                truth[r * 9 + c] = len(v["tower"])
    towers = np.nonzero(truth)[0]
    cam = rec.view.camera_position()
    s = rec.kit.blox.space_mm
    angle = np.degrees(np.arctan2(np.hypot((towers % 9 + 0.5) * s - cam[0], (towers // 9 + 0.5) * s - cam[1]), -cam[2]))
    gated = rec._chip_rim_costs(image, truth, np.zeros(81, bool))
    assert not gated[towers[angle > vb.RIM_MAX_VIEW_DEG]].any()
    monkeypatch.setattr(vb, "RIM_MAX_VIEW_DEG", 90.0)
    extra = rec._chip_rim_costs(image, truth, np.zeros(81, bool))
    read = towers[extra[towers].any(axis=1)]
    assert len(read) >= len(towers) / 2
    assert np.all(extra[np.setdiff1d(np.arange(81), towers)] == 0)  # only towers are measured
    assert np.all(extra[:, 0] == 0) and np.all(extra[:, 6] == 0)  # empty and figure untouched
    best = 1 + np.argmin(extra[read, 1:6], axis=1)
    assert np.mean(np.abs(best - truth[read]) <= 1) >= 0.8
    assert np.mean(best == truth[read]) > 0.5
    # Under a hand nothing is measured.
    assert not rec._chip_rim_costs(image, truth, np.ones(81, bool)).any()


@pytest.fixture(scope="module")
def nadir_scene(tmp_path_factory):
    """A camera straight above the board (tilt 0) and towers of every height on the
    spaces right under it and around: where the side faces show almost nothing of a
    tower's height. Returns (recogniser after reading the frame, image, true heights
    (81,), the truth state)."""
    from calibration.render.textures import default_blox_colors

    tmp = tmp_path_factory.mktemp("nadir")
    kit = load_kit()
    seed = 5_330_000  # development seeds
    setup = sc.sample_setup(kit, "blox", seed, model="cm3", tilt_deg=0.0)
    write_setup(setup, tmp / "setup", seed, lens_frames=6)
    cells = [[None] * 9 for _ in range(9)]
    colours = ["white", "grey", "purple", "black"]
    places = [(3, 3), (3, 4), (3, 5), (4, 3), (4, 4), (4, 5), (5, 3), (5, 4), (5, 5), (2, 4), (6, 4)]
    for i, (r, c) in enumerate(places):
        cells[r][c] = {"tower": [colours[(i + j) % 4] for j in range(i % 5 + 1)]}
    cells[4][6] = {"figure": "green"}
    state = {"colors": default_blox_colors(), "cells": cells}
    cond = sc.sample_conditions(seed + 1, "neutral", area=kit.area_mm("blox"), kit=kit)
    d = write_scene(setup, [state], [cond], [seed + 1], tmp / "scene", setup_dir=tmp / "setup")
    rec = make_recognizer("blox", calibration_from_dir(d / "calibration", "blox"))
    image = read_image(d / "frames" / "000000.jpg")
    obs = rec.process(image, 0.0, 0)
    heights = np.array([len(v["tower"]) if v and "tower" in v else 0 for row in cells for v in row])
    return rec, image, heights, state, obs


def test_chip_print_costs_point_at_the_true_heights(nadir_scene):
    """Straight above a tower its chip is seen face-on, and the value printed on it is
    the tower's height (the rules; a tower of 5 has no chip): read, it costs every other
    height, whichever height's plane the chip is rectified in (the scale between them is
    a few percent), and a figure. A figure's plain top has no print: a cell read as a figure costs nothing more
    where a figure stands, and points at the tower's height where a chip was taken for a
    figure's top. Nothing is read for an empty cell, nor under a hand."""
    import vision.blox as vb

    rec, image, heights, _, _ = nadir_scene
    towers = np.nonzero(heights)[0]
    steep = rec._steep_towers(heights, np.zeros(81, bool), vb.PRINT_MAX_VIEW_DEG)
    # A tower of 5 carries no chip (blox.txt: it can no longer be destroyed): nothing
    # printed is read on it (the assertions on the cells outside ``steep`` below).
    assert (heights[steep] == 5).sum() >= 2
    steep = steep[heights[steep] < 5]
    assert len(steep) >= 8  # the scene puts most towers under the camera
    for decided in (heights, np.where(heights > 0, np.minimum(heights + 1, 5), 0),
                    np.where(heights > 0, np.maximum(heights - 1, 1), 0)):
        extra = rec._chip_print_costs(image, decided, np.zeros(81, bool))
        read = steep[extra[steep].any(axis=1)]
        assert len(read) >= len(steep) - 1
        assert np.all(np.argmin(extra[read, 1:6], axis=1) + 1 == heights[read])
        assert np.all(extra[read, 1:6].max(axis=1) >= vb.PRINT_COST * 0.9)  # a clear print argues in full
        assert not extra[np.setdiff1d(np.arange(81), steep)].any()
        assert not extra[:, 0].any()  # empty untouched
        assert np.all(extra[read, 6] == vb.PRINT_COST)  # a printed chip is no figure
    assert not rec._chip_print_costs(image, heights, np.ones(81, bool)).any()
    assert set(steep) <= set(towers)
    # Every cell read as a figure (rectified in the plane of the tower whose chip top is
    # nearest the figure's top): the figure's top shows no print; the chips of the towers
    # whose tops are near that plane (those a figure may be taken for) show theirs.
    as_figures = np.full(81, 6)
    extra = rec._chip_print_costs(image, as_figures, np.zeros(81, bool))
    assert not extra[4 * 9 + 6].any()  # the green figure
    low = steep[heights[steep] <= 3]
    read = low[extra[low].any(axis=1)]
    assert len(low) >= 5 and len(read) >= len(low) - 1
    assert np.all(np.argmin(extra[read, 1:6], axis=1) + 1 == heights[read])
    assert np.all(extra[read, 6] == vb.PRINT_COST)


def test_towers_straight_under_the_camera_are_read_at_their_heights(nadir_scene):
    """End to end on the straight-down scene: every tower is read at its true height
    (the chip's print decides where the side faces cannot) and the rest of the board as
    it is."""
    _, _, heights, state, obs = nadir_scene
    got = [len(v["tower"]) if v and "tower" in v else 0 for row in obs["state"]["cells"] for v in row]
    assert got == heights.tolist()
    assert obs["state"]["cells"][4][6] == {"figure": "green"}


def test_board_probes_a_jittered_block_may_cover_are_not_the_board(cal_file):
    """A block may sit off centre and turned (the kit's offset and turn): the strip of
    its square it may then cover is the square or something unknown under a tower
    hypothesis (OWN_EDGE: a probe there costs at most what a probe of unknown prediction
    does), so a block a little off never argues for a taller tower, whose larger image
    covers that strip. The empty space's hypothesis reads those probes as the square."""
    from calibration.store import load_calibration
    from vision import _blox_geometry as geo
    from vision.board import BoardView

    view = BoardView(load_calibration(cal_file), "blox")
    g = geo.build(view)
    b = view.kit.blox
    half = b.block.footprint_mm / 2
    grown = half + b.block.max_offset_mm + half * np.radians(b.block.max_rotation_deg)
    C = view.camera_position()
    hyp = (g.e_group // geo.N_GTYPES) % geo.N_HYP
    cell = g.e_group // (geo.N_HYP * geo.N_GTYPES)
    own_empty = {(int(p), int(k)) for p, k in zip(g.e_p[(hyp == 0) & (g.e_src == geo.OWN)],
                                                  cell[(hyp == 0) & (g.e_src == geo.OWN)])}
    for h in range(1, 6):
        m = hyp == h
        p, k, src = g.e_p[m], cell[m], g.e_src[m]
        d = view.rays(g.px[p])
        cx = (k % 9 + 0.5) * b.space_mm
        cy = (k // 9 + 0.5) * b.space_mm

        def within(size: float) -> np.ndarray:
            """Rays passing through the footprint grown to +-size below the solid's top."""
            out = np.zeros(len(p), bool)
            for z in np.linspace(0, -h * b.block.height_mm, 15):
                t = (z - C[2]) / d[:, 2]
                out |= (np.abs(C[0] + d[:, 0] * t - cx) < size) & (np.abs(C[1] + d[:, 1] * t - cy) < size)
            return out

        jittered = within(grown - 0.05) & ~within(half + 0.05)
        assert not np.any(jittered & (src == geo.OWN))
        strip = [(int(a), int(c)) in own_empty for a, c in zip(p[jittered], k[jittered])]
        lab = src[jittered][strip]
        # (the strip is found here by sampling the rays at a few heights: a ray grazing
        # the nominal solid between them is the solid's, unknown)
        assert len(lab) > 0 and np.all(np.isin(lab, (geo.OWN_EDGE, geo.UNKNOWN)))
        assert np.mean(lab == geo.OWN_EDGE) > 0.9
    # And they cost the square's colour distance, capped at the unknown cost.
    import vision.blox as vb
    from calibration.store import load_calibration as _load

    rec = make_recognizer("blox", _load(cal_file))
    rec.view.tracker.set_pose(view.pose)
    rec.view._changed()
    g2 = rec.geometry()
    lab_top = np.random.default_rng(3).uniform([20, -30, -30], [90, 30, 30], (len(g2.px), 3)).astype(np.float32)
    lin_n = np.full((len(g2.px), 3), 0.3, np.float32)
    T = rec._probe_costs(lab_top, lin_n, g2)
    ix = g2.score_index
    own = T[1, ix.blocks[geo.OWN]][np.searchsorted(g2.src_probes[geo.OWN], g2.src_probes[geo.OWN_EDGE])]
    edge = T[1, ix.blocks[geo.OWN_EDGE]]
    assert len(edge) and np.allclose(edge, np.minimum(own, vb.UNKNOWN_COST))
    assert (own > vb.UNKNOWN_COST).any() and (own < vb.UNKNOWN_COST).any()


def _read_bench_scene(tmp_path: Path, setup_seed: int, model: str, seed: int, preset: str) -> tuple[dict, dict]:
    """A scene of the Blox bench (its set-up and scene seeds, its camera model and
    conditions preset), rendered again: (its truth row, as truth.jsonl holds it, and
    the observation of it once the camera has watched it still for longer than the
    gate's time)."""
    kit = load_kit()
    setup = sc.sample_setup(kit, "blox", setup_seed, model=model)
    write_setup(setup, tmp_path / "setup", setup_seed, lens_frames=6)
    state = st.random_state(kit, "blox", np.random.default_rng(seed))
    cond = sc.sample_conditions(seed, preset, area=kit.area_mm("blox"), kit=kit)
    d = write_scene(setup, [state], [cond], [seed], tmp_path / "scene", setup_dir=tmp_path / "setup")
    truth = json.loads((d / "truth.jsonl").read_text("utf-8").splitlines()[0])
    rec = make_recognizer("blox", calibration_from_dir(d / "calibration", "blox"))
    image = read_image(d / "frames" / "000000.jpg")
    rec.process(image, 0.0, 0)
    return truth, rec.process(image, 1.5, 1)


# Development scenes (the Blox bench's set-ups at seeds 8,500,000 to 8,810,000) where a
# tower was read, at confidence 0.73 to 0.98, on an empty space in front of a farther
# tower: the phantom's blocks explained the farther tower's pixels, for which the empty
# space predicts nothing. (set-up seed, camera model, scene seed, preset, the empty space)
PHANTOM_SCENES = [
    (8_590_025, "cm3-wide", 8_590_032, "one-sided", (5, 5)),
    (8_500_025, "cm3-wide", 8_500_026, "neutral", (1, 5)),
    (8_810_025, "cm3-wide", 8_810_038, "defocus", (1, 4)),
    (8_810_049, "cm3", 8_810_057, "one-sided", (4, 3)),
    (8_840_025, "cm3-wide", 8_840_033, "one-sided", (1, 4)),
    (8_860_001, "cm3", 8_860_008, "one-sided", (3, 6)),
]


@pytest.mark.parametrize("setup_seed,model,seed,preset,space", PHANTOM_SCENES)
def test_no_tower_is_read_on_an_empty_space_for_the_farther_tower_it_would_hide(tmp_path, setup_seed, model, seed,
                                                                              preset, space):
    """The piece read on a space in front of a farther piece is tested against the
    joint alternative (the space empty, the farther cells read with what the piece
    hid): the farther tower must then explain its own pixels, and does."""
    row, obs = _read_bench_scene(tmp_path, setup_seed, model, seed, preset)
    truth = row["state"]["cells"]
    read = obs["state"]["cells"]
    occluded = {tuple(x) for x in obs["occluded"]}
    r, c = space
    assert truth[r][c] is None and space not in occluded and read[r][c] is None
    phantoms = [(i, j) for i in range(9) for j in range(9) if truth[i][j] is None and read[i][j] is not None]
    assert phantoms == []
    wrong = [(i, j) for i in range(9) for j in range(9) if (i, j) not in occluded and read[i][j] != truth[i][j]]
    assert len(wrong) <= 5  # lower levels half hidden by their neighbours, at low confidence


ARM_ON_THE_FAR_ROW_SCENES = [
    (8_840_047, 8_840_067),
    (8_850_001, 8_850_020),
]


@pytest.mark.parametrize("setup_seed,seed", ARM_ON_THE_FAR_ROW_SCENES)
def test_an_arm_resting_across_the_far_edge_stops_the_commit(tmp_path, setup_seed, seed):
    """Development scenes (Blox bench set-ups, camera cm3, preset "hands").

    8,840,047 / 8,840,067: an arm lies on the table beyond the far edge and over the far
    strip of row 0. Over the board it was one region of 0.4 of a space, of no kit colour,
    and passed for a piece (figures are known only by their nominal colours, and an
    off-print one is no kit colour either): the still frame was committed. The arm's part
    over the table (vision.hands: the table band) makes it a hand.

    8,850,001 / 8,850,020: an arm over row 0 on a wooden table; at its two ends the skin
    was read as a brown figure, next to the cells found under it (vision._blox_hands:
    beside_hand)."""
    truth, obs = _read_bench_scene(tmp_path, setup_seed, "cm3", seed, "hands")
    assert not truth["stable"] and truth["occluded"]
    assert not obs["stable"]  # though still for longer than the gate's time
    assert {tuple(x) for x in truth["occluded"]} <= {tuple(x) for x in obs["occluded"]}


def test_a_tower_in_front_of_a_tower_of_its_own_colours_is_still_read(tmp_path):
    """The other side of the test above: a real tower in front of a farther tower, both
    in the colour of the spaces they stand on, so that the farther tower (and the
    spaces) explain most of what the nearer one shows. Its chip and top still tell it:
    each is read at its height."""
    from calibration.render.textures import default_blox_colors

    kit = load_kit()
    seed = 5_340_000  # development seeds
    setup = sc.sample_setup(kit, "blox", seed, model="cm3-wide", tilt_deg=34.0, height_mm=550.0)
    write_setup(setup, tmp_path / "setup", seed, lens_frames=6)
    colors = default_blox_colors()
    others = ["white", "grey", "purple", "black"]
    cells = [[None] * 9 for _ in range(9)]
    farther = [(1, 1), (1, 4), (1, 7), (4, 1), (4, 4), (4, 7), (6, 2), (6, 5)]
    for i, (r, c) in enumerate(farther):
        x = colors[r + 1][c]  # the colour of the space in front, nearer the camera
        top = [o for o in others if o != x]
        cells[r][c] = {"tower": [x] * (5 - i % 2) + [top[i % 3]] * (i % 2)}
        cells[r + 1][c] = {"tower": [x] * (1 + i % 3)}
    state = {"colors": colors, "cells": cells}
    presets = ["neutral", "defocus", "warm-dim"]
    conds = [sc.sample_conditions(seed + 1 + j, p, area=kit.area_mm("blox"), kit=kit) for j, p in enumerate(presets)]
    d = write_scene(setup, [state] * 3, conds, [seed + 1 + j for j in range(3)], tmp_path / "scene",
                    setup_dir=tmp_path / "setup")
    report = Report()
    evaluate_fixture(d, report, keep_details=True)
    for det in report.details:
        read = det["observation"]["state"]["cells"]
        front = [(r + 1, c) for r, c in farther if read[r + 1][c] != cells[r + 1][c]]
        assert front == [], det["condition"]


def test_the_behind_test_judges_the_hidden_pixels_at_the_nearer_pieces_density():
    """The pixels a nearer piece covered are counted once in the behind test's
    alternative: by the farther cell's probes they bring into view, scaled to as many
    probes as the nearer piece read them with; a cell none of its rays reach keeps
    its costs."""
    from vision.blox import _rescaled_costs, _weight_per_cell

    hidden, seen = np.array([10.0, 4.0, 7.0]), np.array([40.0, 6.0, 9.0])
    # 60 of the nearer cell's rays reach the first cell, which gains 30 probes: each
    # of its new probes stands for two rays. The second gains 4 and is reached by 2;
    # the third gains 5 and is reached by none.
    rays = _weight_per_cell(np.ones(63), np.array([3] * 60 + [5] * 2 + [1]), np.array([3, 5, 8]))
    gained = _weight_per_cell(np.r_[np.ones(30), np.full(8, 0.5), np.ones(5)],
                              np.array([3] * 30 + [5] * 8 + [8] * 5), np.array([3, 5, 8]))
    assert rays.tolist() == [60.0, 2.0, 0.0] and gained.tolist() == [30.0, 4.0, 5.0]
    out = _rescaled_costs(hidden, seen, rays, gained)
    assert np.allclose(out, [10.0 + 2 * 30.0, 4.0 + 0.5 * 2.0, 9.0])


def test_a_piece_beside_a_hand_is_occluded_and_an_empty_space_is_read():
    """While a hand is seen, a piece read next to its cells (eight ways, one ring) is
    occluded; an empty space there, and a piece two cells away, are read."""
    from vision._blox_hands import beside_hand

    hand = np.zeros((9, 9), bool)
    hand[0, 3:6] = True
    piece = np.zeros((9, 9), bool)
    piece[0, 2] = piece[1, 6] = piece[2, 4] = piece[0, 0] = True
    out = beside_hand(hand, piece)
    assert {(int(r), int(c)) for r, c in zip(*np.nonzero(out & ~hand))} == {(0, 2), (1, 6)}
    assert not out[1, 4] and not out[2, 4] and not out[0, 0]


TOWER_BEHIND_A_FIGURE_SCENES = [
    # set-up seed, camera, scene seed, preset, the tower's space (development draws)
    (8_840_001, "cm3", 8_840_004, "warm-dim", (1, 2)),
    (8_840_001, "cm3", 8_840_011, "glare", (2, 7)),
    (8_850_049, "cm3", 8_850_059, "glare", (2, 5)),
    (8_840_025, "cm3-wide", 8_840_026, "neutral", (0, 0)),
    (8_850_025, "cm3-wide", 8_850_036, "noisy", (4, 1)),
]


@pytest.mark.parametrize("setup_seed,model,seed,preset,space", TOWER_BEHIND_A_FIGURE_SCENES)
def test_a_figure_hides_only_what_its_round_body_covers(tmp_path, setup_seed, model, seed, preset, space):
    """A tower stands behind a figure (nearer the camera). The figure, 22 mm across,
    was taken to hide what a block's grown footprint (34 mm square) would: the lower
    levels of the tower, seen beside it, went unread and were guessed wrong (white
    under purple read purple, black under grey read grey). They are read, and not
    reported as a guess."""
    row, obs = _read_bench_scene(tmp_path, setup_seed, model, seed, preset)
    r, c = space
    truth = row["state"]["cells"]
    assert "tower" in (truth[r][c] or {})
    assert any("figure" in (truth[i][j] or {}) for i in range(r - 1, r + 2) for j in range(c - 1, c + 2)
               if 0 <= i < 9 and 0 <= j < 9)
    assert obs["state"]["cells"][r][c] == truth[r][c]
    assert obs["cell_confidence"][r][c] >= 0.5


def test_a_ray_beside_a_figure_is_seen_where_a_tower_as_tall_would_hide_it(tmp_path):
    """The occlusion pairs tell a figure from a block: a ray that passes beside a
    figure's round body, over the corner of the grown block footprint, is seen past a
    figure and hidden by a tower as tall."""
    from vision import _blox_geometry as geo_mod

    kit = load_kit()
    seed = 5_340_000  # development seeds
    setup = sc.sample_setup(kit, "blox", seed, model="cm3", tilt_deg=34.0, height_mm=600.0)
    cal = write_setup(setup, tmp_path / "setup", seed, lens_frames=6)
    rec = make_recognizer("blox", calibration_from_dir(cal, "blox"))
    g = rec.geometry()
    fig_h = kit.blox.figure.height_mm
    beside = np.nonzero((g.pair_fig == geo_mod.FIG_COVER_NONE) & (g.pair_nominal_mm <= fig_h))[0]
    assert len(beside) > 0
    k = int(g.pair_cell[beside[0]])
    probe = int(g.pair_p[beside[0]])
    top = np.zeros(81)
    top[k] = fig_h
    figures = np.zeros(81, bool)
    assert rec._visibility(top, g)[probe] == 0.0  # a tower of the figure's height hides it
    figures[k] = True
    assert rec._visibility(top, g, figures)[probe] == 1.0
    # and a ray through the figure's body is hidden by the figure
    through = np.nonzero((g.pair_cell == k) & (g.pair_fig == geo_mod.FIG_COVER_SURE))[0]
    assert len(through) > 0 and rec._visibility(top, g, figures)[g.pair_p[through]].max() == 0.0


def test_a_substitute_side_probe_counts_only_for_what_hides_the_probe_it_stands_in_for(tmp_path):
    """Every side probe of a level has a substitute nearer its face's corner, on the
    same cell and face. Where the probe is in view the substitute weighs nothing (the
    probes' density, to which the confidences are set, is unchanged); where a nearer
    piece hides it, wholly or perhaps, the substitute takes the weight it lost."""
    from vision import _blox_geometry as geo_mod
    from vision.blox import _with_substitutes

    kit = load_kit()
    seed = 5_340_000  # development seeds
    setup = sc.sample_setup(kit, "blox", seed, model="cm3", tilt_deg=34.0, height_mm=600.0)
    cal = write_setup(setup, tmp_path / "setup", seed, lens_frames=6)
    g = make_recognizer("blox", calibration_from_dir(cal, "blox")).geometry()
    sub, primary = g.substitutes[:, 0], g.substitutes[:, 1]
    assert len(sub) > 0 and len(np.unique(sub)) == len(sub) == len(np.unique(primary))
    assert not np.isin(primary, sub).any()
    assert np.array_equal(g.cell[sub], g.cell[primary])
    # On the side faces: under the tallest tower both see the same level's side.
    e_hyp = (g.e_group // geo_mod.N_GTYPES) % geo_mod.N_HYP
    tallest = e_hyp == kit.blox.block.max_tower
    label = np.full(len(g.px), -1)
    label[g.e_p[tallest]] = np.where(g.e_src[tallest] == geo_mod.BLK_SIDE, g.e_group[tallest] % geo_mod.N_GTYPES, -1)
    both = (label[sub] >= 0) & (label[primary] >= 0)
    assert both.mean() > 0.9 and np.array_equal(label[sub][both], label[primary][both])

    seen = np.ones(len(g.px), np.float32)
    assert np.all(_with_substitutes(seen, g)[sub] == 0.0)
    hidden = seen.copy()
    hidden[primary[::2]] = 0.0
    hidden[primary[1::2]] = geo_mod.WEAK_SIDE_WEIGHT
    w = _with_substitutes(hidden, g)
    assert np.allclose(w[sub[::2]], 1.0) and np.allclose(w[sub[1::2]], 1.0 - geo_mod.WEAK_SIDE_WEIGHT)
    assert np.allclose(w[primary] + w[sub], 1.0)  # one probe's worth where both are in view
    # A substitute itself hidden counts for nothing, one perhaps hidden counts weakly
    # (as a probe perhaps hidden does: no weight between zero and that).
    hidden[sub] = 0.0
    assert np.all(_with_substitutes(hidden, g)[sub] == 0.0)
    hidden[sub] = geo_mod.WEAK_SIDE_WEIGHT
    assert np.allclose(_with_substitutes(hidden, g)[sub], geo_mod.WEAK_SIDE_WEIGHT)


# Development scenes where a level's side was in view only near its face's corners: a
# nearer piece (a figure, a tower off to one side) hid the middle of the face, where its
# side probes sit, and the level was misread.
# (set-up seed, camera model, scene seed, preset, the tower's space)
FACE_CORNER_SCENES = [
    (8_860_001, "cm3", 8_860_008, "one-sided", (1, 1)),  # black under white, a figure in front
    (8_840_049, "cm3", 8_840_053, "warm-dim", (0, 1)),  # white under grey
]


@pytest.mark.parametrize("setup_seed,model,seed,preset,space", FACE_CORNER_SCENES)
def test_a_level_whose_face_middle_is_hidden_is_read_near_its_corners(tmp_path, setup_seed, model, seed, preset,
                                                                      space):
    """The bottom level, seen beside the nearer piece, is read (it was misread, purple
    for black and grey for white, at 0.28 and 0.29), at a confidence the referee acts on."""
    row, obs = _read_bench_scene(tmp_path, setup_seed, model, seed, preset)
    r, c = space
    truth = row["state"]["cells"]
    assert "tower" in (truth[r][c] or {})
    assert obs["state"]["cells"][r][c] == truth[r][c]
    assert obs["cell_confidence"][r][c] >= 0.5


def test_a_hand_whose_outline_fits_an_impossible_pose_does_not_stop_the_reading(tmp_path):
    """A scene of the held-out draw 13,100,000 (set-up 3, "everything": hands over the
    board, blur, noise, glare). The markers under the hands were lost and the board's
    outline, fitted to a hand, gave a pose with the board 56 m away behind the camera;
    the recogniser, finding no cell of the board in the frame, raised and the whole
    evaluation stopped (calibration.markerless.implausible now refuses such a pose).
    Both frames are read: the first, with its hands, is not committed."""
    kit = load_kit()
    setup_seed, seed = 13_100_073, 13_100_094
    setup = sc.sample_setup(kit, "blox", setup_seed, model="cm3-wide")
    write_setup(setup, tmp_path / "setup", setup_seed, lens_frames=6)
    states = [st.random_state(kit, "blox", np.random.default_rng(s)) for s in (seed, seed + 1)]
    conds = [sc.sample_conditions(s, "everything", area=kit.area_mm("blox"), kit=kit) for s in (seed, seed + 1)]
    assert conds[0].hands
    d = write_scene(setup, states, conds, [seed, seed + 1], tmp_path / "scene", setup_dir=tmp_path / "setup")
    report = evaluate_fixture(d, keep_details=True)
    assert report.frames == 2
    first = report.details[0]
    assert not first["observation"]["stable"] and first["metrics"]["commit_false"] == (0, 1)
    assert report.details[1]["observation"].get("pose") in (None, "ok")
