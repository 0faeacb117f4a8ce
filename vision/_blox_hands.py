"""Blox: the cells an arm covers when its colour does not give it away (issue 8).

:class:`vision.hands.HandDetector` finds hands by colour against the survey. An arm that
comes in close under the camera can cover most of the board; the frame's light is then
fitted largely on the arm (:meth:`vision.colours.ColourModel.balance` takes the spaces
that agree on one light, and skin over the spaces of one colour agrees), so the skin is
normalised to a board colour and the detector finds the arm only in part, or not at all
(skin this dark is close to the black and grey spaces). The reading of the cells under
it then tells what colour could not:

* every tower below the tallest carries a point chip on top (blox.txt: set-up,
  building), seen wherever the tower's top is seen. A cell read as such a tower whose
  chip probes (enough of them seen) fit the chip's colour no better than
  ``CHIPLESS_COST`` on average is no tower (:func:`foreign_cells`). On development
  scenes a tower seen by the camera never read so; an arm over the board read so on 5
  to 44 cells, and a large glare spot up to 6 (a bright patch passes for the top of a
  tall white tower);
* the tallest tower carries no chip (blox.txt: a 5-block tower gets no token), so
  nothing in its colours tells it from an arm, which, read against the hypotheses,
  looks most like it (its image is the largest). Cells read so are counted with the
  chipless towers: the game's 40 blocks (blox.txt, contents) make at most 8 such towers,
  so ``FOREIGN_BOARD_CELLS`` of them are not all towers, and next to a hand found one
  may be the hand (a real one there is occluded only while the hand is seen);
* a cell read as empty whose own square fits its surveyed colour worse than
  ``POOR_FIT_COST`` on average (:func:`poorly_fitting`): a space seen through nothing
  fits it far better (on development scenes 99% of the empty spaces seen without a
  hand fit better). Alone this proves little (a shadow, a glare spot), next to a hand
  it is more of the hand.

:func:`arm_cells` puts them together: ``FOREIGN_BOARD_CELLS`` or more chipless towers,
or ``DOUBTFUL_BOARD_CELLS`` chipless towers and poorly fitting spaces away from any hand
found, are an arm over the board whose edge cannot be told: every cell is occluded.
Otherwise, with a hand seen, the hand's cells grow, eight ways, through chipless towers
and poorly fitting empty spaces (as far as they reach, like
:func:`vision.blockers.hand_reach`). A frame without a hand seen and without such an arm
is left exactly as it was.

Last, :func:`beside_hand`: with a hand seen, a piece read on a cell next to the hand's
cells is occluded too. Fingertips whose skin a kit colour explains (a brown figure, a
grey or white block) read as a piece there, past the edge the detector found; and a
piece next to a hand is the one being handled. On development draws (8.84M, 8.85M,
8.86M) such pieces were read wrong 8 to 16% of the time, against 1.2 to 2.2% over all
spaces. An empty space next to a hand is read as usual.
"""

from __future__ import annotations

import cv2
import numpy as np

from calibration.kit import BlockSpec
from vision._blox_geometry import EMPTY, FIGURE, G_CHIP, G_OWN

# A tower's chip seen by at least this many probes (those of towers seen without a hand
# had 20 or more in 95% of cases) ...
CHIP_MIN_PROBES = 10
# ... fitting its colour this badly on average (probe cost units, at most vision.blox.CAP
# = 4.5: 3.0 is a distance of about 2.4 sigma) is no chip: chips of towers seen without a
# hand cost at most 1.1 per probe in 95% of cases, the "chips" of an arm 4.5 (nothing alike).
CHIPLESS_COST = 3.0
# An empty space's own probes fitting its surveyed colour this badly on average (about
# 8.5 dE): worse than 99% of the empty spaces seen without a hand on development scenes.
POOR_FIT_COST = 1.0
POOR_FIT_MIN_PROBES = 10  # (own-square probes that must be seen for the fit to say anything)
# Chipless towers that make the whole board doubtful (see the module docstring): more
# tallest towers than the game's 40 blocks can build (8), and twice as many as a large
# glare spot makes (a cluster of up to 6 on development scenes without a hand; at most
# 10 beside a hand found; an arm over the whole board made 22 to 44) ...
FOREIGN_BOARD_CELLS = 12
# ... or chipless towers and poorly fitting spaces together: a third of the board (scenes
# without a hand showed at most 14, under glare spots; an arm over the whole board 30 to 46).
DOUBTFUL_BOARD_CELLS = 27

_EIGHT = np.ones((3, 3), np.uint8)


def _per_probe(total: np.ndarray, count: np.ndarray, minimum: float) -> np.ndarray:
    """Mean cost per probe, NaN where fewer than ``minimum`` probes were seen."""
    return np.where(count >= minimum, total / np.maximum(count, 1e-9), np.nan)


def foreign_cells(decision: np.ndarray, S: np.ndarray, cnt: np.ndarray, block: BlockSpec) -> np.ndarray:
    """(cells,) bool: cells read as towers whose chip is not seen where it must be, and
    cells read as a tower that carries no chip to check (the tallest, ``block``'s
    :meth:`~calibration.kit.BlockSpec.carries_chip`; see the module docstring).

    ``S`` (cells, N_HYP, N_GTYPES, 4) the group cost sums and ``cnt`` (cells, N_HYP,
    N_GTYPES) the probes seen of each hypothesis (:meth:`vision.blox.Recognizer._score`)."""
    k = np.arange(len(decision))
    tower = (decision >= 1) & (decision < FIGURE)
    cost = _per_probe(S[k, decision, G_CHIP, 0], cnt[k, decision, G_CHIP], CHIP_MIN_PROBES)
    chipless = np.isin(decision, [h for h in range(1, FIGURE) if not block.carries_chip(h)])
    return (tower & (np.nan_to_num(cost, nan=0.0) >= CHIPLESS_COST)) | chipless


def poorly_fitting(decision: np.ndarray, S: np.ndarray, cnt: np.ndarray) -> np.ndarray:
    """(cells,) bool: cells read as empty whose own square fits its surveyed colour badly."""
    cost = _per_probe(S[:, EMPTY, G_OWN, 0], cnt[:, EMPTY, G_OWN], POOR_FIT_MIN_PROBES)
    return (decision == EMPTY) & (np.nan_to_num(cost, nan=0.0) >= POOR_FIT_COST)


def grow(seed: np.ndarray, through: np.ndarray) -> np.ndarray:
    """``seed`` (n, n) bool grown, eight ways, through ``through`` as far as it reaches."""
    reach = seed.copy()
    while True:
        more = cv2.dilate(reach.astype(np.uint8), _EIGHT).astype(bool) & through & ~reach
        if not more.any():
            return reach
        reach |= more


def arm_cells(hand_occ: np.ndarray, hand_seen: bool, foreign: np.ndarray, poor: np.ndarray) -> tuple[np.ndarray, bool]:
    """The cells to report occluded (n, n) and whether an arm the colours could not place
    is over the board (every cell then), from the cells under the hands found
    (``hand_occ``), whether a hand is seen, and :func:`foreign_cells` and
    :func:`poorly_fitting` (all (n, n) bool). See the module docstring."""
    away = ~cv2.dilate(hand_occ.astype(np.uint8), _EIGHT).astype(bool)
    if int(foreign.sum()) >= FOREIGN_BOARD_CELLS or int(((foreign | poor) & away).sum()) >= DOUBTFUL_BOARD_CELLS:
        return np.ones_like(hand_occ), True
    if not hand_seen:
        return hand_occ, False
    return grow(hand_occ | foreign, foreign | poor), False


def beside_hand(hand_occ: np.ndarray, piece: np.ndarray) -> np.ndarray:
    """The cells to report occluded (n, n) given the hand's cells ``hand_occ`` (as
    :func:`arm_cells` returns them, while a hand is seen) and the cells read as a piece
    ``piece``: also every piece on a cell next to them, eight ways (one ring, see the
    module docstring)."""
    ring = cv2.dilate(hand_occ.astype(np.uint8), _EIGHT).astype(bool)
    return hand_occ | (ring & piece)
