"""Ground-truth visibility of rendered Blox pieces (calibration.render.visibility).

The ID buffer must say what the renderer's image shows: the pixels that change when
one block's colour changes are that block's visible pixels.
"""

from __future__ import annotations

import copy

import cv2
import numpy as np
import pytest

from calibration.render import scene as sc
from calibration.render.visibility import HAND, ItemIds, blox_id_buffer, blox_visibility

from render_helpers import KIT, blox_state, centred_setup

N = KIT.blox.spaces
S = KIT.blox.space_mm
OTHER = {"black": "white", "white": "black", "grey": "purple", "purple": "grey"}
SEED = 8_811_000  # dev seeds only
TOWER = {"tower": ["black", "white", "grey", "purple", "white"]}


def test_nadir_tower_shows_its_top_level_only():
    vis = blox_visibility(centred_setup(0.0), blox_state({(4, 4): TOWER}), SEED)
    levels = vis.levels[(4, 4)]
    top = levels[-1]
    assert top > 150  # the top face (around the chip) from straight above
    # Lower levels: at most the slivers the blocks' placement jitter exposes.
    assert all(lv < 0.35 * top for lv in levels[:-1])
    assert levels[0] < 30
    assert vis.core.levels[(4, 4)][0] == 0
    assert not vis.space_visible(4, 4, 30)


def test_the_best_odds_guess_only_the_levels_that_show_too_little():
    colours = len(KIT.blox.colors)
    state = {(4, 4): TOWER, (2, 2): {"figure": "blue"}}
    nadir = blox_visibility(centred_setup(0.0), blox_state(state), SEED)
    # From straight above the levels below the top show slivers at most (placement
    # jitter): those without a core pixel are guesses, the bottom one among them.
    hidden = [px < 1.0 for px in nadir.core.levels[(4, 4)]]
    assert hidden[0] and not hidden[-1] and sum(hidden) >= 3
    assert nadir.core.best_odds(4, 4, 1.0, colours) == pytest.approx(colours ** -sum(hidden))
    oblique = blox_visibility(centred_setup(35.0), blox_state(state), SEED)
    assert oblique.core.best_odds(4, 4, 1.0, colours) == 1.0
    # Figures and empty squares are counted as read (the odds are an upper bound).
    assert nadir.best_odds(2, 2, 1e9, colours) == 1.0
    assert nadir.best_odds(0, 0, 1e9, colours) == 1.0
    assert oblique.best_odds(4, 4, 1e9, colours) == pytest.approx(colours ** -5)


def test_oblique_tower_shows_every_level():
    vis = blox_visibility(centred_setup(35.0), blox_state({(4, 4): TOWER}), SEED)
    assert min(vis.levels[(4, 4)]) > 30  # the near side faces of every block
    assert min(vis.core.levels[(4, 4)]) > 5
    assert vis.space_visible(4, 4, 30)


def test_nearer_tower_hides_the_space_behind_it():
    setup = centred_setup(35.0)
    alone = blox_visibility(setup, blox_state({(4, 4): {"tower": ["grey"]}}), SEED)
    # The camera stands over the near side (larger rows): a tall tower one row nearer
    # hides most of the short one behind it.
    hidden = blox_visibility(setup, blox_state({(5, 4): TOWER, (4, 4): {"tower": ["grey"]}}), SEED)
    assert hidden.levels[(4, 4)][0] < 0.5 * alone.levels[(4, 4)][0]
    empty = blox_visibility(setup, blox_state({}), SEED)
    behind = blox_visibility(setup, blox_state({(5, 4): TOWER}), SEED)
    assert behind.square[4, 4] < 0.7 * empty.square[4, 4]
    # Squares count what shows of them: a whole unobstructed space is about its area in pixels.
    assert empty.square[8, 8] > 0.5 * empty.square[4, 4]


def test_hand_hides_what_is_under_it():
    setup = centred_setup(20.0)
    state = blox_state({(4, 4): TOWER})
    hand = sc.Hand(target=(4.5 * S, 4.5 * S), height=110.0, side="near")
    buf = blox_id_buffer(setup, state, SEED, hands=[hand])
    assert (buf == HAND).any()
    assert sum(blox_visibility(setup, state, SEED, hands=[hand]).levels[(4, 4)]) < 10


@pytest.mark.parametrize("tilt, level", [(0.0, 4), (0.0, 0), (20.0, 1), (35.0, 0), (35.0, 2)])
def test_id_buffer_matches_the_rendered_pixels(tilt, level):
    """Recolour one block: the image changes exactly where the buffer puts that block
    (nothing where it is hidden)."""
    setup = centred_setup(tilt)
    state = blox_state({(4, 4): TOWER, (4, 5): {"tower": ["purple", "black"]}, (5, 4): {"figure": "green"}})
    cond = sc.Conditions(noise=0.0, jpeg=None)
    seed = SEED + 1
    base = sc.render_frame(setup, state, cond, seed).image.astype(int)
    other = copy.deepcopy(state)
    other["cells"][4][4]["tower"][level] = OTHER[other["cells"][4][4]["tower"][level]]
    changed = np.abs(sc.render_frame(setup, other, cond, seed).image.astype(int) - base).max(axis=2) > 2
    vis = blox_visibility(setup, state, seed)
    px = vis.levels[(4, 4)][level]
    # Edge pixels are partly the block: they change but count only by their covered part.
    assert abs(int(changed.sum()) - px) <= 0.25 * px + 15
    buf = blox_id_buffer(setup, state, seed)
    ss = setup.view().ss
    frac = (buf == ItemIds.of(KIT).piece(4, 4, level)).astype(np.float32)
    frac = cv2.resize(frac, (frac.shape[1] // ss, frac.shape[0] // ss), interpolation=cv2.INTER_AREA)
    mine = frac >= 0.5
    if px < 5:
        assert changed.sum() < 10
    else:
        assert np.sum(changed & mine) / np.sum(changed | mine) > 0.8
