"""A tower of 5 blocks carries no point chip (blox.txt, building: "when a tower of 5
blocks is built, no victory point token is placed on it, since it can no longer be
destroyed"; table-kit.md: a point chip on a destroyable tower).

The renderer draws none on it, and the recogniser's 5-block hypothesis expects the top
face where the lower heights expect their chip: the height of a tower of 5 beside towers
of 4 is read from the geometry at every camera tilt, and a chip found (its rim or its
print) argues against 5.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from calibration.render import scene as sc
from calibration.render.fixtures import write_scene, write_setup
from calibration.render.textures import default_blox_colors
from calibration.render.visibility import ItemIds, blox_id_buffer, blox_visibility
from vision import _blox_geometry as geo
from vision import make_recognizer
from vision.evaluate import calibration_from_dir, read_image

from render_helpers import KIT, blox_state, centred_setup

B = KIT.blox
HMAX = B.block.max_tower
S = B.space_mm
SEED = 8_975_000  # development seeds only
FIVE = {"tower": ["black", "white", "grey", "purple", "white"]}
FOUR = {"tower": ["purple", "grey", "white", "black"]}
OTHER = {"black": "white", "white": "black", "grey": "purple", "purple": "grey"}


def test_the_rules_make_only_the_tallest_tower_chipless():
    assert HMAX == 5
    assert [B.block.carries_chip(h) for h in range(0, HMAX + 1)] == [False, True, True, True, True, False]
    bh, ct = B.block.height_mm, B.chip.thickness_mm
    tops = [0, bh + ct, 2 * bh + ct, 3 * bh + ct, 4 * bh + ct, 5 * bh]
    assert list(geo.solid_top_mm(KIT, np.arange(HMAX + 1))) == tops
    assert geo.tallest_solid_mm(KIT) == max(5 * bh, B.figure.height_mm)


@pytest.mark.parametrize("tilt", [0.0, 30.0])
def test_renderer_puts_no_chip_on_a_tower_of_5(tilt):
    """The ID buffer holds a chip for the 4-block tower and none for the 5-block one."""
    setup = centred_setup(tilt)
    state = blox_state({(4, 4): FIVE, (4, 6): FOUR})
    ids = ItemIds.of(KIT)
    buf = blox_id_buffer(setup, state, SEED)
    assert (buf == ids.piece(4, 6, ids.chip_slot)).sum() > 50
    assert not (buf == ids.piece(4, 4, ids.chip_slot)).any()
    vis = blox_visibility(setup, state, SEED)
    assert vis.chip[(4, 6)] > 10 and (4, 4) not in vis.chip
    # The top face shows all of itself: from straight above, about the block's footprint.
    if tilt == 0.0:
        four_top = vis.levels[(4, 6)][-1]
        assert vis.levels[(4, 4)][-1] > four_top * 1.3  # no disc of 20 mm in its middle


def test_the_centre_of_a_tower_of_5_shows_its_top_block():
    """Pixels: recolouring the top block changes the centre of a 5-block tower's top
    face (nothing covers it) but not the centre of a 4-block tower's (its chip does)."""
    setup = centred_setup(0.0)
    cond = sc.Conditions(noise=0.0, jpeg=None)
    state = blox_state({(4, 4): FIVE, (4, 6): FOUR})
    base = sc.render_frame(setup, state, cond, SEED).image.astype(int)
    other = copy.deepcopy(state)
    for r, c in ((4, 4), (4, 6)):
        other["cells"][r][c]["tower"][-1] = OTHER[other["cells"][r][c]["tower"][-1]]
    changed = np.abs(sc.render_frame(setup, other, cond, SEED).image.astype(int) - base).max(axis=2) > 20
    view = setup.view()
    for (r, c), covered in (((4, 4), False), ((4, 6), True)):
        top = -(len(state["cells"][r][c]["tower"]) * B.block.height_mm)
        # A disc of half the chip's radius round the space's centre on the top face.
        a = np.linspace(0, 2 * np.pi, 12, endpoint=False)
        pts = np.column_stack([(c + 0.5) * S + 0.5 * B.chip.diameter_mm / 2 * np.cos(a),
                               (r + 0.5) * S + 0.5 * B.chip.diameter_mm / 2 * np.sin(a), np.full(len(a), top)])
        px = np.round(view.project(pts)).astype(int)
        frac = changed[px[:, 1], px[:, 0]].mean()
        assert frac == (0.0 if covered else 1.0), (r, c, frac)


@pytest.fixture(scope="module")
def setup_cal():
    return calibration_from_dir(Path(__file__).parent / "fixtures" / "blox" / "setup-cm3" / "calibration", "blox")


def test_the_5_block_hypothesis_has_no_chip_probes(setup_cal):
    """Under the 5-block hypothesis the probes where the lower heights see their chip
    see the top face (a block colour of the top level); 1..4 keep their chip."""
    rec = make_recognizer("blox", setup_cal)
    g = rec.geometry()
    hyp = g.e_hyp  # type: ignore[attr-defined]
    for h in range(1, HMAX):
        assert (g.e_src[hyp == h] == geo.CHIP).sum() > 16 * rec.n * rec.n * 0.5
    assert not (g.e_src[hyp == HMAX] == geo.CHIP).any()
    # Per cell, the tallest tower's top level has more top-face probes than the 4-block
    # tower's top level: those of its centre too.
    on_top = np.isin(g.e_src, (geo.BLK_TOP, geo.TOP_OVER_BOARD))
    top5 = (hyp == HMAX) & on_top & (g.e_gtype == geo.G_LEVEL0 + HMAX - 1)  # type: ignore[attr-defined]
    top4 = (hyp == HMAX - 1) & on_top & (g.e_gtype == geo.G_LEVEL0 + HMAX - 2)  # type: ignore[attr-defined]
    n5 = np.bincount(g.e_cell[top5], minlength=rec.n * rec.n)  # type: ignore[attr-defined]
    n4 = np.bincount(g.e_cell[top4], minlength=rec.n * rec.n)  # type: ignore[attr-defined]
    assert np.all(n5 >= n4 + 8)
    # What a decided 5 hides from the cells behind it: its blocks, no chip.
    decision = np.full(rec.n * rec.n, HMAX)
    assert np.all(rec._top_mm(decision, np.zeros_like(decision, bool), KIT) == HMAX * B.block.height_mm)


def _render_scene(tmp: Path, tilt: float, seed: int, cells: dict[tuple[int, int], dict]):
    setup = sc.sample_setup(KIT, "blox", seed, model="cm3", tilt_deg=tilt)
    write_setup(setup, tmp / "setup", seed, lens_frames=6)
    state = {"colors": default_blox_colors(), "cells": [[None] * 9 for _ in range(9)]}
    for (r, c), cell in cells.items():
        state["cells"][r][c] = copy.deepcopy(cell)
    cond = sc.sample_conditions(seed + 1, "neutral", area=KIT.area_mm("blox"), kit=KIT)
    d = write_scene(setup, [state], [cond], [seed + 1], tmp / "scene", setup_dir=tmp / "setup")
    return setup, calibration_from_dir(d / "calibration", "blox"), read_image(d / "frames" / "000000.jpg")


def _towers(rng: np.random.Generator) -> dict[tuple[int, int], dict]:
    """Towers of 5 and of 4 side by side over the board (nadir, middle and edges)."""
    cols = list(B.colors)
    spots = [(1, 1), (1, 4), (1, 7), (4, 1), (4, 4), (4, 7), (7, 1), (7, 4), (7, 7), (2, 2), (6, 6), (3, 6)]
    return {rc: {"tower": [cols[k] for k in rng.integers(0, len(cols), 5 if i % 2 == 0 else 4)]}
            for i, rc in enumerate(spots)}


@pytest.mark.parametrize("tilt", [0.0, 4.0, 12.0, 30.0])
def test_towers_of_5_beside_towers_of_4_are_read_with_their_heights(tmp_path, tilt):
    """A rendered dev scene: six chipless 5-block towers and six chipped 4-block towers,
    read with the right heights from straight above to an oblique camera."""
    seed = SEED + 1000 + int(tilt * 10)
    cells = _towers(np.random.default_rng(seed))
    _, cal, image = _render_scene(tmp_path, tilt, seed, cells)
    rec = make_recognizer("blox", cal)
    rec.process(image, 0.0, 0)
    obs = rec.process(image, 1.5, 1)
    heights = {}
    for (r, c) in cells:
        got = obs["state"]["cells"][r][c]
        heights[(r, c)] = len(got["tower"]) if got and "tower" in got else None
    assert heights == {rc: len(cell["tower"]) for rc, cell in cells.items()}


def test_chip_readers_argue_against_5_where_a_chip_is_and_not_where_none_is(tmp_path):
    """From straight above, a 4-block tower misread as 5 shows a chip: its rim and its
    print make 5 cost (as much as they can) and 4 nothing; a real tower of 5 read as 5
    shows neither, and nothing is added."""
    from vision.blox import PRINT_COST, RIM_MAX_CHI2, TEMPERATURE

    cells = {(4, 4): FIVE, (3, 3): FOUR, (5, 5): FOUR}
    _, cal, image = _render_scene(tmp_path, 0.0, SEED + 7, cells)
    rec = make_recognizer("blox", cal)
    rec.process(image, 0.0, 0)
    n = rec.n
    decision = np.zeros(n * n, int)
    for r, c in cells:
        decision[r * n + c] = HMAX  # every tower read as 5
    blocked = np.zeros(n * n, bool)
    rim = rec._chip_rim_costs(image, decision, blocked)
    printed = rec._chip_print_costs(image, decision, blocked)
    for r, c in ((3, 3), (5, 5)):
        k = r * n + c
        assert rim[k, HMAX] == pytest.approx(TEMPERATURE * RIM_MAX_CHI2 / 2, rel=0.05) and rim[k, HMAX - 1] < 1.0
        assert printed[k, HMAX] == PRINT_COST and printed[k, HMAX - 1] == 0.0
        assert printed[k, HMAX - 2] > 0.0  # the print is read as 4, not 3
    k = 4 * n + 4
    assert not rim[k].any() and not printed[k].any()


def test_a_top_of_5_that_looks_like_the_square_behind_it_argues_for_nothing(setup_cal):
    """Seen in front of another space's square, the top face of a tower of 5 -- which has
    no chip to tell it from the board -- costs at least what an unknown prediction costs
    where it shows that square's colour (what an empty cell there shows), and as any top
    face where it shows another block colour."""
    from vision.blox import UNKNOWN_COST, _shaded_sqdist

    rec = make_recognizer("blox", setup_cal)
    g = rec.geometry()
    over = g.src_probes[geo.TOP_OVER_BOARD]  # type: ignore[attr-defined]
    assert len(over) > 100
    assert np.all(g.e_hyp[g.e_src == geo.TOP_OVER_BOARD] == HMAX)  # type: ignore[attr-defined]
    assert np.all(g.behind[over] >= 0) and np.all(g.behind[over] != g.cell[over])
    N = len(g.px)
    lin = np.full((N, 3), 0.2, np.float32)
    lab_top = np.zeros((N, 3), np.float32)
    lab_top[over] = rec._space_lab_flat[g.behind[over]]
    ix = g.score_index  # type: ignore[attr-defined]
    rows = rec._probe_costs(lab_top, lin, g)[1:5, ix.blocks[geo.TOP_OVER_BOARD]]
    assert rows.min() >= UNKNOWN_COST - 1e-4
    # A block colour that no shading of the square behind explains: the top block's
    # colour costs nothing more.
    behind = rec._space_lab_flat[g.behind[over]]
    far = np.stack([_shaded_sqdist(np.repeat(ref[None], len(over), 0), behind) for ref in rec._block_lab])
    other = np.argmax(far, axis=0)
    assert far[other, np.arange(len(over))].min() > (3 * 6.0) ** 2  # farther than 3 sigma
    lab_top[over] = rec._block_lab[other]
    rows = rec._probe_costs(lab_top, lin, g)[1:5, ix.blocks[geo.TOP_OVER_BOARD]]
    assert np.all(rows[other, np.arange(len(over))] < 0.05)
