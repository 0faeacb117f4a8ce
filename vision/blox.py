"""Blox recognition: one calibrated frame -> the ``blox`` observation (observation.md).

How a frame is read (issue 8):

1. The board pose is re-checked (:class:`vision.board.BoardView`); everything that
   depends only on the pose is cached (:mod:`vision._blox_geometry`): for every cell a
   lattice of probe pixels, and for every hypothesis about the cell (empty, a tower of
   1..5 blocks, a figure) what each probe would see, found by casting its ray against
   the hypothesis's solid built from the kit's sizes (block footprint and height, the
   point chip on top of a tower below the tallest height -- a tower of 5 can no longer
   be destroyed and carries none (blox.txt), its top face shows there --, the figure's
   coloured top and clear body); and the index the scoring reads
   (:mod:`vision._blox_score`: a frame's probe costs go into one table, the sums per
   hypothesis are segment sums over entries sorted once per pose).
2. The probes are sampled (one bilinear remap, its maps prepared per pose); in a frame
   out of focus, as measured on the edges between the board's spaces
   (:mod:`vision.sharpness`: dev scenes through the wide lens read 27% fewer spaces
   wrong at a defocus of 1.2 to 1.6 px), they are sharpened by that blur; converted
   to linear light and normalised for this frame's light (at each probe's cell centre):
   gains and a smooth light field fitted robustly on the board's own spaces against the
   survey (:mod:`vision.colours`). The fit
   starts from the largest set of spaces that agree on one light across several
   colours, or from the last hand-free frame's light while the visible spaces still
   agree with it: an arm over most of the board must not pass for a change of light
   (it would then look like board colour, and hide itself from the hand detector).
3. Hands and arms (:mod:`vision.hands`) mark probes as unseen and cells as occluded
   (a cell whose square is ``HAND_CELL_COVER`` under the slightly grown hand mask).
   The table ``HAND_TABLE_BAND_MM`` round the board is watched too: an arm resting
   across the edge shows over the board only as a figure-sized sliver.
   For hiding the cells behind it, a cell under a hand holds at most what was last
   read there plus one block (or a figure), not the tallest tower. An arm close under
   the camera can pass for board colour (the light is then fitted on it) and escape
   the detector in part or wholly; once the cells are read (step 4), what they read
   as gives it away (:mod:`vision._blox_hands`): towers without their chip and spaces
   that fit their colour badly. Next to a hand found they are more of the hand (its
   cells grow through them); many of them away from any hand found are an arm that
   cannot be placed, and every cell is occluded. While a hand is seen, a piece read
   next to its cells is occluded too: fingertips a kit colour explains read as one, and
   a piece beside a hand is the one being handled. So is every cell while a hand is
   seen and the pose was found from the board's outline alone (no marker seen), unless
   most spaces confirm it (``PRIOR_MIN_INLIERS`` of them agree on one light): the
   outline may be the arm's.
4. Every hypothesis is scored against the pixels: each probe costs its truncated
   squared CIELAB distance to what the hypothesis predicts there (the surveyed space
   colour, the chip, the best block colour *per level*, the best figure colour), or a
   fixed cost where the hypothesis predicts nothing known (another cell's square, an
   edge). So the tower height follows from geometry: where the chip and the top face
   are, how far the side faces reach. A space's probe may also be explained by a glare
   spot (the space's colour plus white light), at a price. Where a probe looks past
   the board's edge (oblique views, the far row), the table is predicted there, in
   its colour measured around the board this frame: the table is no piece, and a
   piece is seen against it. From a camera nearly straight above a tower shows almost
   none of its side faces and its top face moves less than the blocks' jitter from one
   height to the next: there the chip's printed value, which the rules make the
   tower's height, is read (``_chip_print_costs``), and the chip's radius, fitted to its
   rim in the image, is compared with the radius each height predicts
   (``_chip_rim_costs``); a chip found at all, print or rim, argues against a tower of 5,
   which has none. A board probe the tower's blocks may cover when they sit off
   centre (the kit's offset and turn) costs under a tower hypothesis at most what a probe
   of unknown prediction costs: else a block a little off would argue for a taller
   tower, whose larger image covers it.
   Each free colour choice of a
   hypothesis (a figure, every tower level) costs a little too, so that a cell with
   little visible evidence does not become a piece by fitting noise.
5. Occlusion between cells: cells are decided in order of distance from the camera's
   nadir (only nearer cells can hide farther ones); a probe whose ray passes over a
   nearer cell whose decided solid is tall enough is not used for the farther cell, and
   one that the solid covers only if it sits off centre (its footprint grown by the
   kit's offset and turn, not the nominal one) counts with the weak weight
   (``MAYBE_HIDDEN_WEIGHT``): the lower levels of a tower behind a nearer one often
   show only there. A figure covers what its round body covers (22 mm across), not a
   block's footprint. A side probe so hidden hands its weight to its substitute nearer
   the face's corner (``_blox_geometry.SUBSTITUTE_LATERAL``), which a narrower piece in
   front leaves in view; where the probe is seen, the substitute counts for nothing.
   The scoring is vectorised over all cells and repeated until the decisions no longer
   change what is hidden (two or three rounds). A piece read in
   front of a farther piece may be a phantom made of the farther piece's pixels (where
   a cell's rays pass its would-be solid and reach another space, an empty cell
   predicts nothing known, so blocks matching the farther tower win): it is tested
   against the joint alternative, the cell re-read with those rays showing the farther
   space's square or a block, and the cells it hid re-read with their probes in view
   (they must now explain them, at as many probes as the piece read those pixels
   with); the cheaper reading of the lot is kept. A cell a nearer tower hides (too little
   of its square or of its decided piece visible) is read from what is left of it when
   that decides it (posterior >= ``HIDDEN_MIN_CONF``). Otherwise, when that evidence
   still points to an empty space (posterior >= ``HIDDEN_GUESS_MIN``, from some of the
   space's own square seen past the nearer piece) the space is reported empty at
   confidence ``HIDDEN_GUESS_CONF``, a guess marked as one; else (a piece needs
   evidence: free colours fit whatever is seen past the nearer tower; and a cell of
   which nothing is seen is not seen, observation.md) the cell is reported occluded.
   No such guess is made while a hand is over the board (nothing is guessed near a
   hand, whose edge the detector finds only roughly).
6. Side faces are darker than top faces by a factor that depends on the light. It is
   measured per frame and per face orientation from the towers themselves (a tower's
   top block shows its top face and its side faces in the same colour; towers with a
   black top, whose ratio is noise, are left out, and a few probes on one tower only
   nudge the estimate from ``DEFAULT_SIDE_SHADE``; not while a hand is over the board,
   which hides towers and spoils the readings near it, once a hand-free frame has been
   measured), then block colours are classified
   with it. Side probes that the blocks' placement jitter may
   move onto another level (a face seen at a grazing angle) count with a small weight
   (:mod:`vision._blox_geometry`): a level only they see is read at low confidence.
   Such a probe near a level's edge sees the level across that edge when a block sits
   a little off: it is scored as evidence that its colour is on one of the two levels
   (a cost per pair of colours of adjacent levels, the neighbour's at a small price),
   and a tower's level colours are chosen jointly along the tower (dynamic programming
   over the levels; per-level confidences from the min-marginals).

Stability (:mod:`vision.motion`): a frame is ``stable`` only when no hand is seen (nor
an arm by what the cells read as), no cell is occluded by a hand and the
low-resolution motion gate has seen the scene still
for ``stable_seconds`` (a cell hidden behind a tower for good does not stop commits:
it is guessed at low confidence or reported occluded, and the referee keeps such a
cell's committed content); a frame read exactly like the previous one tolerates a moderate
pixel change (pieces shivering) without restarting the clock.

Confidence per cell (extra field ``cell_confidence``, 9x9, ``null`` for occluded cells)
is the posterior of the chosen hypothesis times the lowest posterior of its block or
figure colours; the colour posterior of a level below a tower's top whose side band is
thinner than ``THIN_BAND_PX`` in the image is tempered in proportion
(:func:`colour_temperature`). A level whose side faces cannot be seen at all (a tower straight under
the camera) gets confidence 0.25: reported, not silently rounded; so does an empty
space guessed behind nearer pieces (``HIDDEN_GUESS_CONF``).
``confidence`` is the lowest of them (observation.md).
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from vision import _blox_geometry as geo_mod
from vision import _blox_hands as hands_mod
from vision import _blox_score as score_mod
from vision._blox_geometry import (BEHIND, BLK_SIDE, BLK_TOP, CHIP, EMPTY, FIGURE,
                                   G_CHIP, G_FIG, G_LEVEL0, G_OWN, G_UNKNOWN, FIG_CAP, FIG_SIDE, N_GTYPES, N_HYP,
                                   N_SRC, OWN, OWN_BODY, OWN_EDGE, TABLE, TOP_OVER_BOARD, UNKNOWN, BloxGeometry)
from vision.board import BoardView
from vision.colours import ColourModel, bgr_to_linear, confidence_from_costs, lab, lab_to_linear, luminance
from vision.glyphs import INK_THRESHOLD, GlyphBank, normalise_ink
from vision.hands import HandDetector
from vision.motion import StabilityGate, lores_grey
from vision.sharpness import MIN_SHARPEN_SIGMA_PX, blur_sigma, edge_profiles, extra_blur, sharpen_samples

SIGMA = 6.0  # CIELAB distance scale of one probe's cost (surveyed colours)
SIGMA_NOMINAL = 11.0  # the same for the kit's nominal colours (chip, figures): print drift is not surveyed
SIGMA_BODY = 14.0  # a space seen through a figure's clear body
SIGMA_TABLE = 11.0  # the table beyond the board's edge, against its colour measured around the board
TABLE_MIN_POINTS = 12  # table points that must be seen to measure its colour
CAP = 4.5  # cost of a probe that matches nothing the hypothesis predicts (3 sigma)
UNKNOWN_COST = 1.5  # cost of a probe where the hypothesis predicts nothing known
TEMPERATURE = 3.0  # probes are correlated (blur, JPEG): posterior temperature over summed costs
COLOUR_TEMPERATURE = 2.0
# A level below a tower's top whose side band is thinner than this in the image has its
# colour's posterior tempered in proportion (colour_temperature): dev scenes
# at 18-27 degrees of tilt, bands 5-7 px: with its probes in the middle of the band, a
# level mixed with the next one by motion blur or defocus was read wrong at 0.9 and over.
THIN_BAND_PX = 10.0
DEFAULT_SIDE_SHADE = 0.55
SHADE_MIN_TOP = 0.05  # towers whose top is at least this bright (linear luminance) measure the side shading
SHADE_TOWER_PROBES = 10  # one tower's side probes count at most this much in the shading estimate ...
SHADE_PRIOR_PROBES = 8  # ... whose prior (DEFAULT_SIDE_SHADE) counts as this many probes
HAND_CELL_COVER = 0.08  # a cell whose square is this much under a hand (grown by HAND_GROW_PX) is occluded
HAND_GROW_PX = 5  # the hand mask is grown by this (low-res px, about 2.5 mm each) for its soft edge
# A region this wide (low-res px, a third of a space) that only a mix of two board colours
# explains is foreign (see vision.hands): pale skin can lie near a cream/purple mix.
HAND_MIX_WIDTH_PX = 5
# The table this far round the board is watched too (vision.hands: an arm resting across
# the edge shows there as more than any piece covers).
HAND_TABLE_BAND_MM = 30.0
CHIP_RETELL_DE = 2.0  # the learnt chip colour is passed to the hand detector when it moved this far
GLARE_PENALTY = 1.0  # cost of explaining a space's probe by a glare spot (in probe cost units)
# A byte at least this high may have been cut off by the sensor: a glare spot on a dark
# space often clips one or two channels, which then read darker than the light was.
SATURATED_BYTE = 250
CLIP_REFITS = 4  # refits of a glare spot's light with the clipped channels raised to the fit
# The blur is measured across edges between spaces whose surveyed linear luminance differs
# by this much (vision.sharpness): the black, white and grey spaces' edges with each other.
EDGE_MIN_CONTRAST = 0.15
PIECE_PRIOR = 1.5  # cost of any piece on a space (probe cost units): empty spaces are the rule
# A piece in front of a farther piece is read as the joint alternative (Recognizer._behind_test)
# only when that is at least this much cheaper (a posterior ratio of e): on dev scenes the
# phantoms it removes were 6.6 to 64 cheaper so, and a real tower (under a hand's edge, read
# a level short) 0.1.
BEHIND_TEST_MARGIN = TEMPERATURE
# A behind test that takes the alternative re-reads the cells the piece hid, and may read
# a piece there that is itself in front of a farther piece: that one is tested in a next
# round, up to this many rounds in all (dev scene 8,860,008: a phantom of four blocks, read
# so at 0.9996).
BEHIND_ROUNDS = 3
LEVEL_PRIOR = 1.0  # cost of each free colour choice (a tower level, a figure)
ADJACENT_PENALTY = 0.5  # cost of a weak side probe seeing the neighbouring level instead of its own
MIN_LEVEL_WEIGHT = 0.3  # a level seen by less probe weight than this is not read (repeats the one above)
MIN_OWN_VISIBLE = 6  # probes of a cell's decided hypothesis that must be seen ...
HIDDEN_MIN_CONF = 0.9  # ... unless the visible evidence decides it with this posterior
HIDDEN_GUESS_MIN = 0.6  # ... else one read as empty with this posterior is reported so, ...
HIDDEN_GUESS_CONF = 0.25  # ... at this confidence (and any other is reported occluded)
# A probe that a nearer piece covers or not depending on how that piece sits (its ray
# crosses the piece's footprint grown by the kit's offset and turn, not its nominal one)
# counts with the weight of a side probe that jitter may move onto another level: dev
# scenes (tilt 20-30 deg, a tower in the next row nearer the camera) showed the lower
# levels behind it in clear view while every probe on them was dropped as hidden, and
# their colour was then guessed from the level above.
MAYBE_HIDDEN_WEIGHT = geo_mod.WEAK_SIDE_WEIGHT
# The chip's radius (see Recognizer._chip_rim_costs): a tower straight under the camera
# shows almost none of its side faces, but its chip's image grows with its height.
RIM_MIN_CONTRAST = 0.03  # linear-RGB distance between the chip and the top face for a profile to count
RIM_MIN_DIRECTIONS = 10  # profiles (of the half of geo_mod.RIM_DIRECTIONS used) that must find the rim
RIM_OUTLIER_MM = 0.4  # a rim point this far off the fitted circle is dropped (a nearer piece, the print)
RIM_SIGMA_FLOOR_MM = 0.15  # systematic error of the fitted radius (blur, the lens, the print): measured on dev scenes
RIM_MAX_CHI2 = 16.0  # one frame's radius argues against a height by at most this much
# Only towers seen this close to straight down (their axis against the camera's) are
# measured: farther out their side faces show the height, and a nearer piece may cut the chip.
RIM_MAX_VIEW_DEG = 15.0
# The chip's printed value (see Recognizer._chip_print_costs): the rules put on a tower
# a chip whose value is the tower's height (blox.txt, set-up and building).
PRINT_MAX_VIEW_DEG = 15.0  # towers seen this close to straight down have their chip read (the cue they lack)
PRINT_MIN_INK = 0.3  # the print must be this much darker than the chip (1 - luminance ratio) to be read
PRINT_MIN_SCORE = 0.6  # a print matches the best digit at least this well (normalised correlation) ...
PRINT_FULL_MARGIN = 0.05  # ... and a height whose digit matches this much worse costs PRINT_COST in full
PRINT_COST = 24.0  # (probe cost units: as much as the chip's radius can argue, TEMPERATURE * RIM_MAX_CHI2 / 2)
# A frame's light is kept as the next frame's prior when this many spaces agreed (no hand);
# and a pose found without markers under a hand is trusted only when this many agree.
PRIOR_MIN_INLIERS = 0.5


#: motion is watched over the board plus this fraction of its width on every side
MOTION_APRON = 0.5

#: linear light of every byte value, as :func:`vision.colours.bgr_to_linear` computes it
#: for float samples (the same arithmetic, so a table lookup gives the same values)
_BYTE_LINEAR = bgr_to_linear(np.repeat(np.arange(256, dtype=np.float32)[:, None], 3, axis=1))[:, 0].copy()


def _normalise_by_cell(balance: Any, lin: np.ndarray, cell: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """``balance.normalise(lin, centres[cell])`` (:class:`vision.colours.FrameBalance`)
    with the light field evaluated once per cell rather than once per probe: every probe
    is normalised at its cell's centre."""
    f = balance.field(centres).astype(np.float32)[cell]
    return np.asarray(lin, np.float32) / (balance.gains.astype(np.float32)[None, :] * f[:, None])


def _rows(a: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``a[idx]`` of the rows ``idx`` of a 2-D array (``np.take`` copies whole rows at once,
    where fancy indexing goes element by element)."""
    return np.take(a, idx, axis=0)


def _bytes_to_linear(raw: np.ndarray) -> np.ndarray:
    """``bgr_to_linear`` of BGR bytes (N, 3), by table lookup, as computed for float samples."""
    return np.take(_BYTE_LINEAR, raw[..., ::-1])


class _Sampler:
    """:func:`vision.board.sample` of a uint8 frame at fixed pixels (one pose's probes),
    with the remap maps prepared once (OpenCV's fixed-point maps, what remap makes of
    float maps on every call): the samples as bytes (N, 3), those of points outside the
    frame (``outside``) 0, where sample gives NaN."""

    def __init__(self, px: np.ndarray, width: int, height: int) -> None:
        px = np.asarray(px, np.float32).reshape(-1, 2)
        self.n = len(px)
        cols = max(min(self.n, 4096), 1)  # remap's maps: at most 32767 columns
        pad = -(-self.n // cols) * cols - self.n
        mx = np.pad(px[:, 0], (0, pad)).reshape(-1, cols)
        my = np.pad(px[:, 1], (0, pad)).reshape(-1, cols)
        self.maps = cv2.convertMaps(mx, my, cv2.CV_16SC2)
        self.outside = (px[:, 0] < 0) | (px[:, 1] < 0) | (px[:, 0] > width - 1) | (px[:, 1] > height - 1)
        self._outside_idx = np.nonzero(self.outside)[0]

    def read(self, frame: np.ndarray) -> np.ndarray:
        out = cv2.remap(frame, self.maps[0], self.maps[1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT,
                        borderValue=0).reshape(-1, 3)[:self.n]
        out[self._outside_idx] = 0
        return out


class Recognizer:
    """Blox recogniser (see the module docstring and ``vision/__init__.py``)."""

    game = "blox"

    def __init__(self, calibration: Any, *, stable_seconds: float = 1.0, edition: Any = None,
                 probes_per_cell: int = 150) -> None:
        if calibration.game != "blox":
            raise ValueError(f"the calibration is for {calibration.game}, not blox")
        if calibration.survey is None or "spaces" not in calibration.survey:
            raise ValueError("the calibration has no board colour survey: run `bloxcam calibrate board FRAME`")
        self.cal = calibration
        self.kit = calibration.kit
        self.view = BoardView(calibration, "blox")
        self.colours = ColourModel(calibration.survey)
        self.blocks = list(self.kit.blox.colors)
        self.players = list(self.kit.blox.players)
        n = self.kit.blox.spaces
        self.n = n
        self.space_names = self.colours.space_names
        keys = [f"space:{c}" for c in self.blocks if f"space:{c}" in self.colours.refs]
        keys += [k for k in ("chip",) if k in self.colours.refs]
        keys += [f"figure:{p}" for p in self.players if f"figure:{p}" in self.colours.refs]
        self.hand_detector = HandDetector(self.view, self.colours, keys, grow_px=HAND_GROW_PX,
                                          mix_width_px=HAND_MIX_WIDTH_PX, table_band_mm=HAND_TABLE_BAND_MM)
        self.gate = StabilityGate(stable_seconds)
        self.probes_per_cell = probes_per_cell
        self._geo: BloxGeometry | None = None
        # image pixels the chip readers sample, per (cell, height), for the current pose only:
        # pose version -> {"rim": ..., "print": ...}
        self._chip_pixels: tuple[int, dict[str, dict]] | None = None
        self._digits: GlyphBank | None = None  # the chips' values 1..max_tower-1, built when first needed
        self._digit_index: list[int] = []  # their classes in the bank
        self._lores_roi: tuple[int, np.ndarray] | None = None
        self.side_shade = np.full(4, DEFAULT_SIDE_SHADE)
        self._shade_hand_free = False  # the side shading has been measured on a frame without a hand
        self.edition = edition
        self._block_lab = np.array([self.colours.refs[f"block:{c}"] if f"block:{c}" in self.colours.refs
                                    else self.colours.refs[f"space:{c}"] for c in self.blocks])
        self._fig_lab = np.array([self.colours.refs[f"figure:{p}"] for p in self.players])
        self._chip_lab = np.array(self.colours.refs["chip"], float)
        self._chip_learnt = False
        self._chip_told = self._chip_lab.copy()  # the chip colour the hand detector explains
        self._space_lab_flat = self.colours.space_lab.reshape(-1, 3)
        self._space_lin_flat = self.colours.space_lin.reshape(-1, 3)
        self.last: dict[str, Any] = {}
        self._balance_prior: Any = None
        self._last_top: np.ndarray | None = None  # (n*n,) mm of what each cell last held, read clear of hands
        self._prev_cells: list | None = None
        # Each free colour choice (a figure's, every level's) lets a hypothesis fit noise:
        # it is paid for, so little evidence (a cell mostly hidden) does not make a piece.
        self._hyp_prior = np.array([0.0] + [PIECE_PRIOR + LEVEL_PRIOR * h for h in range(1, N_HYP - 1)]
                                   + [PIECE_PRIOR + LEVEL_PRIOR])
        s = self.kit.blox.space_mm
        self._cell_centres = (np.stack(np.divmod(np.arange(n * n), n), 1)[:, ::-1] + 0.5) * s
        self._cell_centres.setflags(write=False)
        # Height (mm) of the solid of each hypothesis (see _top_mm).
        self._hyp_top = self._solid_top(np.arange(N_HYP), self.kit)
        # The most that may stand under a hand: the tallest tower with a chip, and 1 mm to spare.
        b = self.kit.blox
        self._under_hand_max_mm = b.block.max_tower * b.block.height_mm + b.chip.thickness_mm + 1
        # The tower height whose chip top is nearest a figure's top (see _chip_print_costs).
        self._fig_plane = int(np.argmin([abs(h * b.block.height_mm + b.chip.thickness_mm - b.figure.height_mm)
                                         for h in range(1, b.block.max_tower)])) + 1

    # ------------------------------------------------------------------ geometry
    def geometry(self) -> BloxGeometry:
        if self._geo is None or self._geo.version != self.view.version:
            self._geo = geo_mod.build(self.view, probes_per_cell=self.probes_per_cell)
            g = self._geo
            g.e_cell = g.e_group // (N_HYP * N_GTYPES)  # type: ignore[attr-defined]
            g.e_hyp = (g.e_group // N_GTYPES) % N_HYP  # type: ignore[attr-defined]
            g.e_gtype = g.e_group % N_GTYPES  # type: ignore[attr-defined]
            g.chip_ent = np.nonzero(g.e_src == CHIP)[0]  # type: ignore[attr-defined]
            # Robust block probes of each height's top level (the side-shade estimate).
            g.shade_ent = np.nonzero(np.isin(g.e_src, (BLK_TOP, BLK_SIDE)) & (g.e_w >= 1.0)  # type: ignore[attr-defined]
                                     & (g.e_gtype == G_LEVEL0 + g.e_hyp - 1))[0]
            # Their cells, hypotheses and probes, read every frame.
            for name in ("chip", "shade"):
                ent = getattr(g, f"{name}_ent")
                setattr(g, f"{name}_cell_hyp_probe", (g.e_cell[ent], g.e_hyp[ent], g.e_p[ent]))  # type: ignore[attr-defined]
            # The probes each source is read at (sorted): only those are costed.
            g.src_probes = [np.unique(g.e_p[g.e_src == k]) for k in range(N_SRC)]  # type: ignore[attr-defined]
            # What a frame's scoring reads: its costs in one table, the sums as segment sums.
            g.score_index = score_mod.build(g, self.n * self.n, g.src_probes)  # type: ignore[attr-defined]
            # The surveyed colour of the space each own-square probe looks at, ready for
            # _shaded_sqdist.
            own_p = g.src_probes[OWN]  # type: ignore[attr-defined]
            g.own_ref = _shading_ref(self._space_lab_flat[g.cell[own_p]])  # type: ignore[attr-defined]
            # ... and of the other space's square behind each TOP_OVER_BOARD probe.
            over_p = g.src_probes[TOP_OVER_BOARD]  # type: ignore[attr-defined]
            g.behind_ref = _shading_ref(self._space_lab_flat[g.behind[over_p]])  # type: ignore[attr-defined]
            # ... and behind each BEHIND probe.
            g.behind_sq_ref = _shading_ref(self._space_lab_flat[g.behind[g.src_probes[BEHIND]]])  # type: ignore[attr-defined]
            # Where the own-square probes that OWN_EDGE and OWN_BODY read sit among them.
            g.edge_in_own = np.searchsorted(own_p, g.src_probes[OWN_EDGE])  # type: ignore[attr-defined]
            g.body_in_own = np.searchsorted(own_p, g.src_probes[OWN_BODY])  # type: ignore[attr-defined]
            # Which table probes a farther cell's piece may hide.
            g.table_maybe_hidden = g.table_behind[g.src_probes[TABLE]]  # type: ignore[attr-defined]
            # The face orientation of each side probe (-1: none), for its shading.
            g.side_orient = g.orient[g.src_probes[BLK_SIDE]]  # type: ignore[attr-defined]
            # Which cells are seen within the chip readers' angles of straight down.
            g.steep = {deg: self._steep_cells(deg) for deg in {RIM_MAX_VIEW_DEG, PRINT_MAX_VIEW_DEG}}  # type: ignore[attr-defined]
            # Where each cell's probes are normalised for the light (its centre).
            g.cell_centres = np.zeros((self.n * self.n, 2))  # type: ignore[attr-defined]
            g.cell_centres[g.cell] = g.centre_xy  # type: ignore[attr-defined]
            s = self.kit.blox.space_mm
            f = np.array([0.22, 0.5, 0.78])
            lat = np.array([(u, v) for v in f for u in f])[[0, 1, 2, 3, 5, 6, 7, 8]] * s
            # The probes, the spaces (for the light) and the table around the board: sampled together.
            g.sampler_px = np.concatenate([g.px, g.space_pts, g.table_pts if g.table_pts is not None  # type: ignore[attr-defined]
                                           else np.zeros((0, 2), np.float32)])
            g.sampler = _Sampler(g.sampler_px, self.view.intr.width, self.view.intr.height)  # type: ignore[attr-defined]
            g.space_expected = _rows(self._space_lin_flat, g.space_cell)  # type: ignore[attr-defined]
            g.edges = self._edge_profiles()  # type: ignore[attr-defined]
            # The part of the frame the probes read (for blurring only that).
            lo = np.floor(g.sampler_px.min(axis=0)).astype(int) - 8  # type: ignore[attr-defined]
            hi = np.ceil(g.sampler_px.max(axis=0)).astype(int) + 9  # type: ignore[attr-defined]
            W, H = self.view.intr.width, self.view.intr.height
            g.roi = (max(lo[0], 0), max(lo[1], 0), min(hi[0], W), min(hi[1], H))  # type: ignore[attr-defined]
            x0, y0, x1, y1 = g.roi  # type: ignore[attr-defined]
            g.roi_sampler = _Sampler(g.sampler_px - np.float32([x0, y0]), x1 - x0, y1 - y0)  # type: ignore[attr-defined]
            g.space_xy = np.concatenate([lat + [c * s, r * s] for r in range(self.n) for c in range(self.n)])  # type: ignore[attr-defined]
        return self._geo

    def _edge_profiles(self) -> Any:
        """Profiles across the edges between neighbouring spaces of clearly different
        surveyed brightness (vision.sharpness), two per edge, clear of the corners."""
        n, s = self.n, self.kit.blox.space_mm
        lum = luminance(self._space_lin_flat)
        a_pts, b_pts, family = [], [], []
        for r in range(n):
            for c in range(n):
                for dr, dc in ((0, 1), (1, 0)):
                    r2, c2 = r + dr, c + dc
                    if r2 >= n or c2 >= n or abs(lum[r * n + c] - lum[r2 * n + c2]) < EDGE_MIN_CONTRAST:
                        continue
                    for f in (0.3, 0.7):
                        # Points 1 mm either side of the edge: the image direction across it.
                        mid = np.array([(c + f) * s, (r + f) * s, 0.0])
                        if dc:
                            mid[0] = (c + 1) * s
                        else:
                            mid[1] = (r + 1) * s
                        step = np.array([dc, dr, 0.0])
                        a_pts.append(mid - step)
                        b_pts.append(mid + step)
                        family.append(dc)
        if not a_pts:
            return edge_profiles(np.zeros((0, 2)), np.zeros((0, 2)), np.zeros(0))
        pa = self.view.project(np.array(a_pts))
        pb = self.view.project(np.array(b_pts))
        d = pb - pa
        return edge_profiles((pa + pb) / 2, d / np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-9),
                             np.array(family))

    # ------------------------------------------------------------------- costs
    def _side_lab(self, lin_n: np.ndarray, g: BloxGeometry) -> np.ndarray:
        """CIELAB of the side probes (``src_probes[BLK_SIDE]``) with the side faces' shading undone."""
        o = g.side_orient  # type: ignore[attr-defined]
        shade = np.where(o >= 0, self.side_shade[np.clip(o, 0, 3)], DEFAULT_SIDE_SHADE).astype(np.float32)
        return lab(_rows(lin_n, g.src_probes[BLK_SIDE]) / shade[:, None])  # type: ignore[attr-defined]

    def _probe_costs(self, lab_top: np.ndarray, lin_n: np.ndarray, g: BloxGeometry,
                     table_lab: np.ndarray | None = None, raw: np.ndarray | None = None) -> np.ndarray:
        """The cost table of this frame (:class:`vision._blox_score.ScoreIndex`): per
        source, the cost of each probe it is read at against each of (up to) four
        candidate colours. ``raw``: the probes' BGR bytes (for where the sensor clipped)."""
        if raw is None:
            raw = np.zeros((len(lin_n), 3), np.uint8)
        ix = g.score_index  # type: ignore[attr-defined]
        T = ix.new_table()
        ix.fill(T, UNKNOWN, UNKNOWN_COST)
        sp = g.src_probes  # type: ignore[attr-defined]
        own_p = sp[OWN]
        own2 = _shaded_sqdist(_rows(lab_top, own_p), prepared=g.own_ref)  # type: ignore[attr-defined]
        # A glare spot on glossy print adds white light to a space: explained too, at a
        # price, so a glare spot is no white block and a white block no glare spot.
        price = np.float32(GLARE_PENALTY * 2 * SIGMA * SIGMA)
        worse = np.nonzero(own2 > price)[0]  # only there can a glare spot explain it better
        if len(worse):
            wp = own_p[worse]
            clipped = _rows(raw, wp)[:, ::-1] >= SATURATED_BYTE  # RGB order, as lin_n
            glare2 = _glare_sqdist(_rows(lin_n, wp), _rows(self._space_lin_flat, g.cell[wp]), _rows(lab_top, wp),
                                   clipped)
            own2[worse] = np.minimum(own2[worse], glare2 + price)
        ix.fill(T, OWN, self._cost2(own2))
        # Where a tower's blocks may reach when they sit off centre: the square, or
        # something unknown (a block a little off), whichever explains the probe better.
        # (OWN_EDGE and OWN_BODY read subsets of the own-square probes.)
        ix.fill(T, OWN_EDGE, np.minimum(self._cost2(own2[g.edge_in_own]), np.float32(UNKNOWN_COST)))  # type: ignore[attr-defined]
        ix.fill(T, OWN_BODY, self._cost2(own2[g.body_in_own], SIGMA_BODY))  # type: ignore[attr-defined]
        # Figures are compared with the kit's nominal colours: a looser scale.
        p = sp[FIG_CAP]
        ix.fill(T, FIG_CAP, self._cost2(_sqdist(_rows(lab_top, p), self._fig_lab), SIGMA_NOMINAL))
        p = sp[FIG_SIDE]
        wts = np.array([0.3, 1.0, 1.0], np.float32)
        ix.fill(T, FIG_SIDE, self._cost2(_sqdist(_rows(lab_top, p) * wts, self._fig_lab * wts), SIGMA_NOMINAL))
        # The table beyond the edge, against this frame's table colour (its grain and the
        # pieces' shadows on it: a loose scale and shading); unknown when not measured.
        # (Not capped at the unknown cost: a tower whose top is seen against the table
        # must not pass for an empty space. An arm over the table beyond the edge, which
        # the hand mask does not look for, can then make a piece of a far-row cell in a
        # frame with a hand; such a frame is never committed.)
        p = sp[TABLE]
        if table_lab is None:
            ix.fill(T, TABLE, UNKNOWN_COST)
        else:
            table = self._cost2(_shaded_sqdist_one(_rows(lab_top, p), table_lab), SIGMA_TABLE)
            # Where a farther cell's piece may hide the table: the table, or something unknown.
            ix.fill(T, TABLE, np.where(g.table_maybe_hidden, np.minimum(table, np.float32(UNKNOWN_COST)), table))  # type: ignore[attr-defined]
        p = sp[BLK_TOP]
        ix.fill(T, BLK_TOP, self._cost2(_sqdist(_rows(lab_top, p), self._block_lab)))
        # The tallest tower's top face seen in front of another space's square: it has no
        # chip, whose colour no space has, to tell it from that square, which is what
        # the probe shows when the cell is empty (under which it predicts nothing known).
        # So where the probe looks like that square, it argues for the tower no more than
        # an unknown prediction costs: the board seen past a space that nearer towers
        # hide is no tower of 5 whose top alone shows.
        over = _rows(lab_top, sp[TOP_OVER_BOARD])
        board = self._cost2(_shaded_sqdist(over, prepared=g.behind_ref))  # type: ignore[attr-defined]
        ix.fill(T, TOP_OVER_BOARD, self._cost2(_sqdist(over, self._block_lab))
                + np.maximum(np.float32(UNKNOWN_COST) - board, np.float32(0.0))[None, :])
        # Past the hypothesis's solid, the ray reaches another space (BEHIND): nothing
        # known is predicted there, unless that space holds a piece (Recognizer._behind_test).
        ix.fill(T, BEHIND, UNKNOWN_COST)
        self._learnt_costs(T, lab_top, lin_n, g)
        return T

    def _learnt_costs(self, T: np.ndarray, lab_top: np.ndarray, lin_n: np.ndarray, g: BloxGeometry) -> None:
        """The costs that depend on what the frame's towers teach (the chip's colour,
        the side faces' shading), written into the cost table ``T``."""
        ix = g.score_index  # type: ignore[attr-defined]
        sp = g.src_probes  # type: ignore[attr-defined]
        # The chip against its colour as learnt (nominal at first): a looser scale.
        p = sp[CHIP]
        ix.fill(T, CHIP, self._cost2(_sqdist(_rows(lab_top, p), self._chip_lab[None]), SIGMA_NOMINAL)[0])
        ix.fill(T, BLK_SIDE, self._cost2(_sqdist(self._side_lab(lin_n, g), self._block_lab)))

    @staticmethod
    def _cost2(d2: np.ndarray, sigma: float = SIGMA) -> np.ndarray:
        return np.minimum(d2 * np.float32(1.0 / (2 * sigma * sigma)), np.float32(CAP))

    def _score(self, T: np.ndarray, visible: np.ndarray, g: BloxGeometry, cells: np.ndarray | None = None,
               prev: tuple | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Hypothesis costs (cells, N_HYP), group sums (cells, N_HYP, N_GTYPES, 4), counts
        and the pair sums of adjacent levels (cells, N_HYP, 4, 4 lower colour, 4 upper colour)
        from the cost table ``T`` over the ``visible`` probes.

        With ``cells`` (and the previous result ``prev``) only those cells are rescored."""
        nn = self.n * self.n
        ix = g.score_index  # type: ignore[attr-defined]
        last = None if prev is None else (prev[1].reshape(ix.size, 4), prev[2].reshape(ix.size), prev[3])
        S, cnt, P = ix.sums(T, visible, ADJACENT_PENALTY, cells, last)
        S = S.reshape(nn, N_HYP, N_GTYPES, 4)
        cnt = cnt.reshape(nn, N_HYP, N_GTYPES)
        P = P.reshape(nn, N_HYP, 4, 4, 4)
        # Only the rescored cells' costs change (the levels' chain is the dearest part).
        rows = np.arange(nn) if prev is None else np.asarray(cells)
        cost = np.zeros((nn, N_HYP)) if prev is None else prev[0].copy()
        Sr = S[rows]
        c = Sr[:, :, G_UNKNOWN, 0] + Sr[:, :, G_OWN, 0] + Sr[:, :, G_CHIP, 0] + _min4(Sr[:, :, G_FIG, :], 2)
        c[:, 1:FIGURE] += _chain_min(Sr[:, 1:FIGURE, G_LEVEL0:, :], P[rows, 1:FIGURE])  # towers only have levels
        cost[rows] = c + self._hyp_prior[None, :]
        return cost, S, cnt, P

    @staticmethod
    def _solid_top(decision: np.ndarray, kit: Any) -> np.ndarray:
        """Height (mm) of the solid of each hypothesis ``decision`` (a tower with its chip, a figure)."""
        top = geo_mod.solid_top_mm(kit, np.where(decision == FIGURE, 0, decision))
        return np.where(decision == FIGURE, kit.blox.figure.height_mm, top)

    def _top_mm(self, decision: np.ndarray, blocked: np.ndarray, blocked_top: np.ndarray | None = None) -> np.ndarray:
        """Height (mm) of each cell's decided solid; ``blocked`` cells (under a hand) get
        ``blocked_top`` (default: the tallest tower)."""
        return np.where(blocked, self._under_hand_max_mm if blocked_top is None else blocked_top, self._hyp_top[decision])

    def _hand_cell_top(self) -> np.ndarray:
        """What may stand under a hand, for hiding the cells behind it: at most what was
        last read there plus one block (one action at a time: a block laid on a tower, a
        figure set down), the tallest tower where nothing was read yet. The hand itself
        hides what it covers in the image (its mask), whatever its height."""
        b = self.kit.blox
        if self._last_top is None:
            return np.full(self.n * self.n, self._under_hand_max_mm)
        grown = np.maximum(self._last_top + b.block.height_mm + (self._last_top == 0) * b.chip.thickness_mm,
                           b.figure.height_mm)
        return np.minimum(grown + 1, self._under_hand_max_mm)

    def _table_colour(self, raw: np.ndarray, in_frame: np.ndarray, balance: Any, hands: Any,
                      g: BloxGeometry) -> np.ndarray | None:
        """CIELAB of the table around the board in this frame from its samples ``raw``
        (bytes) at ``g.table_pts`` (balanced like the probes; points outside the frame or
        under a hand left out), or None when too little of it is seen."""
        pts = g.table_pts
        if pts is None or len(pts) < TABLE_MIN_POINTS:
            return None
        ok = in_frame.copy()
        if hands.any:
            ok &= ~hands.covered(pts)
        if ok.sum() < TABLE_MIN_POINTS:
            return None
        return np.median(lab(balance.normalise(_bytes_to_linear(raw[ok]), g.table_xy[ok])), axis=0)

    def _visibility(self, top_mm: np.ndarray, g: BloxGeometry, figures: np.ndarray | None = None) -> np.ndarray:
        """Weight (N,) of every probe given the heights ``top_mm`` of the cells' decided
        solids: 0 where a nearer solid of the kit's nominal footprint covers its ray, 1
        where not even that footprint grown by the blocks' placement jitter does, and
        ``MAYBE_HIDDEN_WEIGHT`` in between, where whether the nearer piece covers it
        depends on how that piece sits. A solid on a cell of ``figures`` (n*n bool) is a
        figure: its round body, not a block's footprint (``BloxGeometry.pair_fig``)."""
        n_px = len(g.px)
        if len(g.pair_p) == 0:
            return np.ones(n_px, np.float32)
        t = top_mm[g.pair_cell]
        sure_pair = t >= g.pair_nominal_mm
        maybe_pair = t >= g.pair_mm
        if figures is not None and g.pair_fig is not None:
            on_fig = figures[g.pair_cell]
            sure_pair = np.where(on_fig, g.pair_fig == geo_mod.FIG_COVER_SURE, sure_pair)
            maybe_pair = np.where(on_fig, g.pair_fig != geo_mod.FIG_COVER_NONE, maybe_pair)
        sure = np.zeros(n_px, bool)
        sure[g.pair_p[sure_pair]] = True
        maybe = np.zeros(n_px, bool)
        maybe[g.pair_p[maybe_pair]] = True
        return np.where(sure, np.float32(0.0), np.where(maybe, np.float32(MAYBE_HIDDEN_WEIGHT), np.float32(1.0)))

    def _seen_past(self, decision: np.ndarray, seen: np.ndarray, hand_cells: np.ndarray, hand_top: np.ndarray,
                   g: BloxGeometry) -> np.ndarray:
        """The probes' weights ``seen`` (what no hand covers) times what the solids of
        ``decision`` leave in view (:meth:`_visibility`; under a hand, a solid of
        ``hand_top``, a box even where a figure was read), substitutes weighed by what
        they stand in for (:func:`_with_substitutes`)."""
        figures = (decision == FIGURE) & ~hand_cells
        return _with_substitutes(seen * self._visibility(self._top_mm(decision, hand_cells, hand_top), g, figures), g)

    def _decide(self, Q: np.ndarray, lab_top: np.ndarray, seen: np.ndarray, hand_cells: np.ndarray, g: BloxGeometry,
                extra: np.ndarray | None = None, first: tuple | None = None) -> tuple:
        """Decide every cell, then re-decide the cells whose probes the decided solids of
        nearer cells hide, until nothing more changes; then test the pieces read in front
        of farther pieces (:meth:`_behind_test`, which compares the probes' CIELAB
        ``lab_top`` with what lies behind them). ``extra``: costs (cells, N_HYP)
        added to the probes' (the chip's radius); the returned costs include them.
        ``first``: the scores of the same table over ``seen`` (the first round), when an
        earlier call returned them (the last item returned)."""
        visible = _with_substitutes(seen.astype(np.float32), g)
        add = np.zeros((self.n * self.n, N_HYP)) if extra is None else extra
        # The BEHIND rows as _probe_costs wrote them: a previous call's _behind_test may have relaxed some.
        g.score_index.fill(Q, BEHIND, UNKNOWN_COST)  # type: ignore[attr-defined]
        first = self._score(Q, visible, g) if first is None else first
        decision = np.argmin(first[0] + add, axis=1)
        # Read with every probe in view: a piece a nearer (phantom) piece hides shows here.
        unhidden = decision
        hand_top = self._hand_cell_top()
        decision, visible, scores = self._settle(Q, seen, hand_cells, g, decision, visible, first, add, hand_top)
        decision, visible, scores = self._behind_test(Q, lab_top, seen, hand_cells, g, decision, visible, scores, add,
                                                      hand_top, unhidden)
        cost, S, cnt, P = scores
        return decision, visible, cost + add, S, cnt, P, first

    def _settle(self, Q: np.ndarray, seen: np.ndarray, hand_cells: np.ndarray, g: BloxGeometry, decision: np.ndarray,
                visible: np.ndarray, scores: tuple, add: np.ndarray, hand_top: np.ndarray) -> tuple:
        """Re-decide the cells whose probes the decided solids of nearer cells hide, until
        nothing more changes: (decision, visible, scores)."""
        for _ in range(5):
            new_visible = self._seen_past(decision, seen, hand_cells, hand_top, g)
            changed = np.unique(g.cell[new_visible != visible])
            visible = new_visible
            if len(changed) == 0:
                break
            scores = self._score(Q, visible, g, changed, scores)
            decision = np.argmin(scores[0] + add, axis=1)
        return decision, visible, scores

    def _behind_test(self, Q: np.ndarray, lab_top: np.ndarray, seen: np.ndarray, hand_cells: np.ndarray, g: BloxGeometry,
                     decision: np.ndarray, visible: np.ndarray, scores: tuple, add: np.ndarray, hand_top: np.ndarray,
                     unhidden: np.ndarray) -> tuple:
        """A piece read on a cell in front of a farther piece may be no piece at all: its
        solid explains pixels of the farther piece that, without it, the empty space
        predicts nothing for (its rays reach the farther space, ``BEHIND``). Each such
        piece is tested against the joint alternative: the cell empty, the rays that
        reach the farther occupied space costed as that space's square or a block, and
        the cells it hid read again with those probes in view (they must now explain
        them). The pixels the piece covered are judged once, by what the cells it hid
        predict there, at the piece's density of probes (:func:`_rescaled_costs`).
        The alternative is taken when it costs less in all by at least
        ``BEHIND_TEST_MARGIN`` (dev scenes: a tower
        of five black blocks read at confidence 0.98 on a black space in front of a
        tower with three black blocks at the bottom).

        A piece an accepted alternative reads on a cell it re-read is tested in its turn
        (up to ``BEHIND_ROUNDS`` rounds).

        Returns (decision, visible, scores); ``Q``'s BEHIND rows of the cells re-read
        so stay relaxed."""
        behind_p = g.src_probes[BEHIND]  # type: ignore[attr-defined]
        if len(behind_p) == 0:
            return decision, visible, scores
        behind_cost = np.full(len(behind_p), np.float32(UNKNOWN_COST))  # as _probe_costs wrote them
        only = None
        for _ in range(BEHIND_ROUNDS):
            decision, visible, scores, behind_cost, new_pieces = self._behind_round(
                Q, lab_top, seen, hand_cells, g, decision, visible, scores, add, hand_top, unhidden, behind_cost, only)
            if not new_pieces.any():
                break
            only = new_pieces
        return decision, visible, scores

    def _behind_round(self, Q: np.ndarray, lab_top: np.ndarray, seen: np.ndarray, hand_cells: np.ndarray,
                      g: BloxGeometry, decision: np.ndarray, visible: np.ndarray, scores: tuple, add: np.ndarray,
                      hand_top: np.ndarray, unhidden: np.ndarray, behind_cost: np.ndarray,
                      only: np.ndarray | None) -> tuple:
        """One round of :meth:`_behind_test` over the pieces read in front of farther
        pieces (only the cells ``only`` when given); ``behind_cost``: the BEHIND rows
        as earlier rounds left them. Returns (decision, visible, scores, behind_cost,
        the cells an accepted alternative read as a piece they did not hold before)."""
        ix = g.score_index  # type: ignore[attr-defined]
        behind_p = g.src_probes[BEHIND]  # type: ignore[attr-defined]
        new_pieces = np.zeros(len(decision), bool)
        owner = g.cell[behind_p]
        # A farther space holds a piece if it is read so, or was before the nearer
        # pieces hid it (one the phantom hides may be read empty behind it).
        # (Not under a hand, whose cells are not read: the test would weigh the hand.)
        occupied = ((decision != EMPTY) | (unhidden != EMPTY)) & ~hand_cells
        piece = (decision != EMPTY) & ~hand_cells
        if only is not None:
            piece &= only
        sel = np.nonzero(occupied[g.behind[behind_p]] & piece[owner])[0]
        if len(sel) == 0:
            return decision, visible, scores, behind_cost, new_pieces
        # There the ray shows that space's square or the piece on it (a block's colour),
        # or something unknown, whichever explains it best.
        obs = _rows(lab_top, behind_p[sel])
        ref, ref2 = g.behind_sq_ref  # type: ignore[attr-defined]
        best = _shaded_sqdist(obs, prepared=(ref[:, sel], ref2[sel]))
        for colour in self._block_lab:
            best = np.minimum(best, _shaded_sqdist_one(obs, colour))
        relaxed = behind_cost.copy()
        relaxed[sel] = np.minimum(self._cost2(best), behind_cost[sel])
        cheaper = relaxed < behind_cost
        cand = np.unique(owner[cheaper])
        if len(cand) == 0:
            return decision, visible, scores, behind_cost, new_pieces
        # First each candidate alone, its own rays relaxed: only those whose empty space
        # then costs less than their piece need the joint test.
        mine = np.isin(owner, cand) & cheaper
        ix.fill(Q, BEHIND, np.where(mine, relaxed, behind_cost))
        trial = self._score(Q, visible, g, cand, scores)
        ix.fill(Q, BEHIND, behind_cost)
        tc = trial[0] + add
        cand = cand[tc[cand, EMPTY] < tc[cand, decision[cand]]]
        for k in cand.tolist():
            if decision[k] == EMPTY:  # found empty by an earlier test's re-reading
                continue
            rows = (owner == k) & cheaper
            trial_cost = behind_cost.copy()
            trial_cost[rows] = relaxed[rows]
            dec2 = decision.copy()
            dec2[k] = EMPTY
            vis2 = self._seen_past(dec2, seen, hand_cells, hand_top, g)
            cells = np.unique(np.concatenate([[k], g.cell[vis2 != visible]]))
            others = cells[cells != k]
            # A ray of this cell that reaches the square of a cell re-read here shows
            # pixels that cell's own probes now explain (see _rescaled_costs): free.
            into_reread = (owner == k) & np.isin(g.behind[behind_p], others)
            trial_cost[into_reread] = 0.0
            ix.fill(Q, BEHIND, trial_cost)
            trial = self._score(Q, vis2, g, cells, scores)
            new_cost = trial[0] + add
            # The cell re-read with its rays relaxed (empty, or a smaller piece that
            # leaves them free), the cells it hid with their probes in view.
            dec2[cells] = np.argmin(new_cost[cells], axis=1)
            # Its own costs are compared both with its rays relaxed: they are relaxed
            # for every reading of it that leaves them free.
            before = float(new_cost[k, decision[k]] + np.sum((scores[0] + add)[others, decision[others]]))
            after = float(new_cost[k, dec2[k]]) + float(np.sum(_rescaled_costs(
                (scores[0] + add)[others, dec2[others]], new_cost[others, dec2[others]],
                # the rays' weight into each re-read cell, and the weight each gains
                _weight_per_cell(visible[behind_p[into_reread]], g.behind[behind_p[into_reread]], others),
                _weight_per_cell(np.clip(vis2 - visible, 0, None), g.cell, others))))
            if after < before - BEHIND_TEST_MARGIN and not hand_cells[cells].any():
                behind_cost = trial_cost
                settled, visible, scores = self._settle(Q, seen, hand_cells, g, dec2, vis2, trial, add, hand_top)
                new_pieces |= (settled != decision) & (settled != EMPTY)
                decision = settled
            else:
                ix.fill(Q, BEHIND, behind_cost)
        return decision, visible, scores, behind_cost, new_pieces

    def _learn_chip(self, lab_top: np.ndarray, visible: np.ndarray, decision: np.ndarray, g: BloxGeometry) -> float:
        """The chips' colour as seen on this table: the kit gives only a nominal colour
        (the survey cannot see chips), so it is learnt from the chips of the towers
        read, kept only when near the nominal one. Returns how far it moved (dE)."""
        e_cell, e_hyp, e_p = g.chip_cell_hyp_probe  # type: ignore[attr-defined]
        p = e_p[(decision[e_cell] == e_hyp) & (visible[e_p] >= 1)]
        if len(p) < 12:
            return 0.0
        med = np.median(_rows(lab_top, p), axis=0)
        nominal = self.colours.refs["chip"]
        if np.linalg.norm(med - nominal) > 30.0:
            return 0.0
        new = med if not self._chip_learnt else 0.7 * self._chip_lab + 0.3 * med
        moved = float(np.linalg.norm(new - self._chip_lab))
        self._chip_lab = new
        self._chip_learnt = True
        return moved

    def _estimate_side_shade(self, lin_n: np.ndarray, visible: np.ndarray, decision: np.ndarray,
                             g: BloxGeometry) -> None:
        """Side-face shading per orientation: a tower's top block shows its top face and
        its side faces in one colour, so their luminance ratio is the shading."""
        ent = g.shade_ent  # type: ignore[attr-defined]
        e_cell, e_hyp, e_p = g.shade_cell_hyp_probe  # type: ignore[attr-defined]
        m = (decision[e_cell] == e_hyp) & (visible[e_p] >= 1)
        if not m.any():
            return
        p = e_p[m]
        cell = e_cell[m]
        src = g.e_src[ent[m]]
        lum = luminance(_rows(lin_n, p))
        size = self.n * self.n
        top_sum = np.bincount(cell[src == BLK_TOP], weights=lum[src == BLK_TOP], minlength=size)
        top_cnt = np.bincount(cell[src == BLK_TOP], minlength=size)
        top_mean = top_sum / np.maximum(top_cnt, 1)
        new = self.side_shade.copy()
        lit = (top_mean >= SHADE_MIN_TOP) & (top_cnt >= 3)  # a black top's ratio is mostly noise
        m = (src == BLK_SIDE) & lit[cell]
        if not m.any():
            return
        o = g.orient[p[m]]
        key = o * size + cell[m]
        s_sum = np.bincount(key, weights=lum[m], minlength=4 * size).reshape(4, size)
        s_cnt = np.bincount(key, minlength=4 * size).reshape(4, size)
        for o in np.nonzero((s_cnt >= 3).any(axis=1))[0]:
            ok = s_cnt[o] >= 3
            ratio = np.clip(s_sum[o, ok] / s_cnt[o, ok] / top_mean[ok], 0.12, 1.6)
            # Bright blocks carry the ratio; every tower's say is capped, and a few probes
            # on one tower (a face at the board's edge, a neighbour's block in the way)
            # are pulled toward the usual shading rather than trusted alone.
            w = np.minimum(s_cnt[o, ok], SHADE_TOWER_PROBES) * top_mean[ok]
            w0 = SHADE_PRIOR_PROBES * float(top_mean[ok].mean())
            if len(ratio) >= 3:
                keep = np.abs(np.log(ratio / np.median(ratio))) < 0.35
                ratio, w = ratio[keep], w[keep]
            new[o] = float(np.clip((np.dot(w, ratio) + w0 * DEFAULT_SIDE_SHADE) / (w.sum() + w0), 0.12, 1.6))
        self.side_shade = new

    def _chip_rim_costs(self, frame_bgr: np.ndarray, decision: np.ndarray, blocked: np.ndarray) -> np.ndarray:
        """Extra hypothesis costs (cells, N_HYP) from the chip's radius in the image.

        From a camera nearly straight above, a tower shows almost none of its side
        faces, and its top face moves by less than the blocks' placement jitter from one
        height to the next: the height shows only in the scale of what is on top. The
        chip is a disc of the kit's size whose rim contrasts with the top face it lies
        on; for every cell read as a tower (``decision`` 1..5, not ``blocked`` by a
        hand, seen within ``RIM_MAX_VIEW_DEG`` of straight down) its rim is found along
        radial profiles in the plane of the read height's chip top (for a tower read at
        the tallest height, which carries no chip, in that of the tallest height that
        does) and a circle is fitted to it (:func:`fit_rim_circles`), its centre free
        (offset, jitter, a wrong plane's shift from the nadir). Each height that carries
        a chip predicts the radius seen in that plane (geo_mod.chip_radius_in_plane); the
        squared misfit in units of the fit's error becomes a cost (relative to the best
        height, capped at ``RIM_MAX_CHI2``, weighed like the probes' costs); the tallest
        height, which has no chip, gets the cap: a rim found argues against it as much
        as a rim can. So the decision follows the chip's scale where the probes cannot
        tell, and the probes where the rim is not seen (a nearer tower, a hand, no
        contrast, no chip)."""
        n = self.n
        extra = np.zeros((n * n, N_HYP))
        cells = self._steep_towers(decision, blocked, RIM_MAX_VIEW_DEG)
        if not len(cells):
            return extra
        chipped = np.arange(1, self.kit.blox.block.max_tower)  # the heights that carry a chip
        plane = np.minimum(decision, chipped[-1])  # where a chip would lie if the tower had one
        cache = self._pose_pixels("rim")
        if "pred" not in cache:
            # Per plane, the radius each height that carries a chip shows in it.
            cache["pred"] = np.array([geo_mod.chip_radius_in_plane(self.view, int(h), chipped)
                                      for h in range(chipped[-1] + 1)])
            # The chip's side wall shows on the side facing the camera and widens the disc
            # there: the rim is read on the far half only, where the top's edge is the outline.
            angles = geo_mod.rim_angles()
            away = self._cell_centres - self.view.camera_position()[:2]
            cache["far_half"] = np.cos(angles)[None, :] * away[:, :1] + np.sin(angles)[None, :] * away[:, 1:] >= 0
        pix, inside = [], []
        W, H = frame_bgr.shape[1], frame_bgr.shape[0]
        for k in cells:
            ck = (int(k), int(plane[k]))
            if ck not in cache:
                grid = geo_mod.chip_rim_pixels(self.view, int(k) // n, int(k) % n, int(plane[k]))
                cache[ck] = (grid, bool(np.all((grid >= 0) & (grid <= [W - 1, H - 1]))))
            pix.append(cache[ck][0])
            inside.append(cache[ck][1])
        pix_a = np.stack(pix)  # (cells, directions, radii, 2)
        # One row of the remap per tower (the samples of a tower partly outside the frame
        # are not read: see ``inside``).
        rows = pix_a.reshape(len(cells), -1, 2)
        prof = _bytes_to_linear(cv2.remap(frame_bgr, np.ascontiguousarray(rows[..., 0]), np.ascontiguousarray(rows[..., 1]),
                                          cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0
                                          ).reshape(-1, 3)).reshape(*pix_a.shape[:3], 3)
        use = cache["far_half"][cells] & np.array(inside)[:, None]
        radius, sigma = fit_rim_circles(prof, geo_mod.rim_radii(self.kit), geo_mod.rim_angles(), use)
        found = np.isfinite(radius)
        if found.any():
            k = cells[found]
            chi2 = np.minimum(((radius[found, None] - cache["pred"][plane[k]]) / sigma[found, None]) ** 2, RIM_MAX_CHI2)
            chi2 = np.append(chi2, np.full((len(k), 1), RIM_MAX_CHI2), axis=1)  # the tallest tower: no chip, no rim
            extra[k, 1:FIGURE] = TEMPERATURE * (chi2 - chi2.min(axis=1, keepdims=True)) / 2
        return extra

    def _pose_pixels(self, reader: str) -> dict:
        """The chip ``reader``'s cache of image pixels to sample, emptied when the pose changes."""
        if self._chip_pixels is None or self._chip_pixels[0] != self.view.version:
            self._chip_pixels = (self.view.version, {})
        return self._chip_pixels[1].setdefault(reader, {})

    def _steep_cells(self, max_deg: float) -> np.ndarray:
        """(n*n,) bool: cells seen within ``max_deg`` of straight down (their axis against
        the camera's ray), for the current pose."""
        cam = self.view.camera_position()
        return np.hypot(*(self._cell_centres - cam[:2]).T) <= -cam[2] * np.tan(np.radians(max_deg))

    def _steep_towers(self, decision: np.ndarray, blocked: np.ndarray, max_deg: float) -> np.ndarray:
        """Cells read as towers (``decision`` 1..5), not ``blocked`` by a hand, seen within
        ``max_deg`` of straight down (their axis against the camera's ray)."""
        steep = self.geometry().steep.get(max_deg)  # type: ignore[attr-defined]
        if steep is None:  # an angle other than the readers' own (tests widen them)
            steep = self._steep_cells(max_deg)
        return np.nonzero((decision >= 1) & (decision <= 5) & ~blocked & steep)[0]

    def _chip_print_costs(self, frame_bgr: np.ndarray, decision: np.ndarray, blocked: np.ndarray) -> np.ndarray:
        """Extra hypothesis costs (cells, N_HYP) from the value printed on the tower's chip.

        The rules put on every tower but the tallest a chip whose value is the tower's
        height (blox.txt: set-up, building; a tower of 5 can no longer be destroyed and
        gets none; the kit's chip carries the value as dark print). From a camera nearly
        straight above, where the side faces show little of the height, the chip is
        seen face-on: for every cell read as a tower (not ``blocked`` by a hand, seen
        within ``PRINT_MAX_VIEW_DEG`` of straight down) the chip's top is rectified
        (:func:`vision._blox_geometry.chip_print_pixels`, in the plane of the read
        height's chip, or for a tower read at the tallest height, which has none, of
        the tallest that has one: another height's plane differs by a scale of a few
        percent, which the matching ignores), its ink taken relative to the chip's own
        colour (the brighter quarter of the window), and matched against the digits of
        the heights that carry a chip, 1 to one below the kit's tallest tower
        (:class:`vision.glyphs.GlyphBank`: position and size normalised; the print
        upright as seen from any side of the table, the four turns). A print that
        matches its best digit at ``PRINT_MIN_SCORE`` or better makes each other
        height that carries a chip cost up to ``PRINT_COST``, in proportion to how much
        worse its digit matches (full at ``PRINT_FULL_MARGIN``), and the tallest tower
        and a figure the full cost (neither has a printed chip on top; a cell read as a
        figure is read too, in the plane of the tower whose chip top is nearest the
        figure's top, since from above a chip on a pale block may pass for a yellow
        figure's top seen through its clear body); no print, too little contrast
        (``PRINT_MIN_INK``: a hand, glare, a figure's plain top, a tower of 5's top
        block) or a poor match: no cost."""
        n = self.n
        extra = np.zeros((n * n, N_HYP))
        # A cell read as a figure may be a tower whose chip passes for a figure's top (a
        # yellow one, seen from above): it is read in the plane of the tower height
        # whose chip top is nearest the figure's top.
        hmax = self.kit.blox.block.max_tower  # the tallest tower carries no chip
        plane = np.where(decision == FIGURE, self._fig_plane, np.minimum(decision, hmax - 1))
        cells = self._steep_towers(plane, blocked, PRINT_MAX_VIEW_DEG)
        if not len(cells):
            return extra
        cache = self._pose_pixels("print")
        W, H = frame_bgr.shape[1], frame_bgr.shape[0]
        pix, inside = [], []
        for k in cells:
            ck = (int(k), int(plane[k]))
            if ck not in cache:
                grid, _ = geo_mod.chip_print_pixels(self.view, int(k) // n, int(k) % n, int(plane[k]))
                cache[ck] = (grid, bool(np.all((grid >= 0) & (grid <= [W - 1, H - 1]))))
            pix.append(cache[ck][0])
            inside.append(cache[ck][1])
        if "window" not in cache:
            cache["window"] = geo_mod.chip_print_pixels(self.view, 0, 0, 1)[1]
        window = cache["window"]
        pix_a = np.stack(pix)  # (cells, m, m, 2)
        rows = pix_a.reshape(len(cells), -1, 2)
        lin = _bytes_to_linear(cv2.remap(frame_bgr, np.ascontiguousarray(rows[..., 0]), np.ascontiguousarray(rows[..., 1]),
                                         cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0).reshape(-1, 3))
        lum = luminance(lin).reshape(pix_a.shape[:3])
        paper = np.percentile(lum[:, window], 75, axis=1)
        ink = np.clip(1 - lum / np.maximum(paper, 1e-6)[:, None, None], 0, 1) * window
        depth = ink.max(axis=(1, 2))
        canvases, owner = [], []
        for i in np.nonzero(np.array(inside) & (depth >= PRINT_MIN_INK))[0]:
            canvas = normalise_ink((ink[i] / depth[i]).astype(np.float32), INK_THRESHOLD)
            if canvas is not None:
                canvases.append(canvas)
                owner.append(i)
        if not canvases:
            return extra
        if self._digits is None:
            self._digits = GlyphBank([], letters=(), digits=tuple(str(h) for h in range(1, hmax)))
            self._digit_index = [self._digits.names.index(str(h)) for h in range(1, hmax)]
        # The four turns of each print (its box turns with it; the canvas is square).
        C = np.array(canvases)
        turns = np.stack([np.rot90(C, t, axes=(1, 2)) for t in range(4)], axis=1).reshape(-1, *C.shape[1:])
        per = self._digits.scores(turns)[:, self._digit_index]
        per = per.reshape(len(owner), 4, -1).max(axis=1)  # each digit at its best turn
        best = per.max(axis=1)
        for i, p, top in zip(owner, per, best):
            if top >= PRINT_MIN_SCORE:
                extra[cells[i], 1:hmax] = PRINT_COST * np.clip((top - p) / PRINT_FULL_MARGIN, 0, 1)
                extra[cells[i], hmax:] = PRINT_COST  # a printed chip is on no tower of 5 and no figure
        return extra

    # ------------------------------------------------------------------ process
    def process(self, frame_bgr: np.ndarray, t: float, index: int, lores: np.ndarray | None = None) -> dict:
        if frame_bgr is None or not isinstance(frame_bgr, np.ndarray) or frame_bgr.ndim != 3 or frame_bgr.shape[2] != 3:
            raise ValueError("expected a BGR colour frame (H x W x 3)")
        if frame_bgr.dtype != np.uint8:
            frame_bgr = np.clip(frame_bgr, 0, 255).astype(np.uint8)
        n = self.n
        check = self.view.update(frame_bgr)
        g = None
        if self.view.pose is not None and check.status.value != "lost":
            try:
                g = self.geometry()
            except geo_mod.BoardOutOfView:
                pass  # a pose that shows no part of the board is as good as none
        if g is None:
            self._prev_cells = None
            self.gate.update(frame_bgr, t, blocked=True, lores=lores)
            return self._observation(index, t, False, [[r, c] for r in range(n) for c in range(n)],
                                     [[None] * n for _ in range(n)], np.zeros((n, n)), extra={"pose": "lost"})
        # The probes, the spaces (for the light) and the table around the board, in one sampling.
        every = g.sampler.read(frame_bgr)  # type: ignore[attr-defined]
        # A frame out of focus: the samples sharpened by the blur measured on the board's edges.
        blur = blur_sigma(frame_bgr, g.edges)  # type: ignore[attr-defined]
        extra = extra_blur(blur)
        if extra >= MIN_SHARPEN_SIGMA_PX:
            x0, y0, x1, y1 = g.roi  # type: ignore[attr-defined]
            blurred = cv2.GaussianBlur(frame_bgr[y0:y1, x0:x1], (0, 0), extra)
            every = sharpen_samples(every, g.roi_sampler.read(blurred))  # type: ignore[attr-defined]
        n_px, n_sp = len(g.px), len(g.space_pts)
        in_frame = ~g.sampler.outside  # type: ignore[attr-defined]
        finite = in_frame[:n_px]
        lin = _bytes_to_linear(every[:n_px])
        slin = _bytes_to_linear(every[n_px:n_px + n_sp])
        # The light is fitted on the spaces; an arm over most of the board must not pass
        # for a change of light (it would then look like board colour and hide itself):
        # the fit starts from the largest set of spaces that agree on one light, or from
        # the last frame's light when that still explains nearly as many.
        balance = self.colours.balance(slin, g.space_expected, g.space_xy,  # type: ignore[attr-defined]
                                       seek_mode=True, prior=self._balance_prior)
        hands = self.hand_detector.detect(frame_bgr, balance)
        lin_n = _normalise_by_cell(balance, lin, g.cell, g.cell_centres)  # type: ignore[attr-defined]
        lab_top = lab(lin_n)
        seen = finite.copy()
        if hands.any:
            seen &= ~hands.covered(g.px)
        cover = hands.cell_cover.reshape(-1) if hands.cell_cover is not None else np.zeros(n * n)
        hand_cells = cover >= HAND_CELL_COVER

        table_lab = self._table_colour(every[n_px + n_sp:], in_frame[n_px + n_sp:], balance, hands, g)
        Q = self._probe_costs(lab_top, lin_n, g, table_lab, every[:n_px])
        decision, visible, cost, S, cnt, P, first = self._decide(Q, lab_top, seen, hand_cells, g)
        if np.any((decision >= 1) & (decision <= 5)):
            before = self.side_shade.copy()
            if not hands.any or not self._shade_hand_free:
                # A hand hides towers and spoils the readings near it, and brings no new
                # light: once the side shading has been measured on a hand-free frame, it
                # is not measured again while a hand is over the board (dev sequence:
                # with the real towers under a hand, the ratio of a phantom tower read
                # from bare squares, sides as bright as its top, took over, and every
                # tower read after that with it was read wrong or empty). Before that,
                # a frame with a hand is better than the default.
                self._estimate_side_shade(lin_n, visible, decision, g)
                self._shade_hand_free = self._shade_hand_free or not hands.any
            moved = self._learn_chip(lab_top, visible, decision, g)
            if np.linalg.norm(self._chip_lab - self._chip_told) > CHIP_RETELL_DE:
                # The chips as printed on this table are no hand (the next frames).
                self.hand_detector.learn_colour("chip", lab_to_linear(self._chip_lab[None])[0])
                self._chip_told = self._chip_lab.copy()
            if np.max(np.abs(np.log(self.side_shade / before))) > 0.05 or moved > 4.0:
                # The side faces' shading changed (new light, first frame): read again with it.
                self._learnt_costs(Q, lab_top, lin_n, g)
                decision, visible, cost, S, cnt, P, first = self._decide(Q, lab_top, seen, hand_cells, g)
        # What the chip shows: its radius (the scale of a tower's top) and its printed value.
        chip = self._chip_rim_costs(frame_bgr, decision, hand_cells) + self._chip_print_costs(frame_bgr, decision,
                                                                                             hand_cells)
        if chip.any():
            if np.array_equal(np.argmin(cost + chip, axis=1), decision):
                cost = cost + chip
            else:  # a height changes: what the new solid hides changes too
                # The probes' costs are unchanged: the first round's scores are reused.
                decision, visible, cost, S, cnt, P, _ = self._decide(Q, lab_top, seen, hand_cells, g, chip, first)
        hyp_conf = confidence_from_costs(cost / TEMPERATURE, 1.0)

        # Hands: cells under a hand, or whose evidence a hand hides, are not read.
        hand_hidden = np.zeros(n * n)
        if hands.any:
            under = ~seen & finite
            relevant = (g.e_hyp == decision[g.e_cell]) & (g.e_gtype != G_UNKNOWN)
            tot = np.bincount(g.e_cell[relevant], minlength=n * n)
            hid = np.bincount(g.e_cell[relevant], weights=under[g.e_p[relevant]].astype(float), minlength=n * n)
            hand_hidden = hid / np.maximum(tot, 1)
        own_visible = cnt[np.arange(n * n), decision, :].sum(axis=1) - cnt[np.arange(n * n), decision, G_UNKNOWN]
        hand_occ = hand_cells | (hand_hidden >= 0.2)
        # An arm the colours did not find (or found only in part): the cells it covers
        # read as towers without their chip, or as spaces that fit their colour badly
        # (vision._blox_hands). And with a hand over the board, a pose found from the
        # board's outline alone (its markers unseen: the arm may lie over them) may be
        # the arm's outline: unless most spaces show their colours under one light where
        # it puts them, nothing is read.
        grown, hidden_arm = hands_mod.arm_cells(
            hand_occ.reshape(n, n), hands.any, hands_mod.foreign_cells(decision, S, cnt, self.kit.blox.block).reshape(n, n),
            hands_mod.poorly_fitting(decision, S, cnt).reshape(n, n))
        hand_occ = grown.reshape(-1)
        if hands.any:
            hand_occ = hands_mod.beside_hand(hand_occ.reshape(n, n), (decision != EMPTY).reshape(n, n)).reshape(-1)
        if hands.any and self.view.pose is not None and self.view.pose.method == "markerless" \
                and balance.inliers < PRIOR_MIN_INLIERS:
            hand_occ = np.ones(n * n, bool)
        hand_seen = hands.any or hidden_arm
        if not hand_seen and balance.inliers >= PRIOR_MIN_INLIERS:
            self._balance_prior = balance
        # A cell hidden behind nearer pieces is read from what remains visible; it is
        # reported occluded only when that evidence does not decide it (below).
        square_visible = cnt[:, EMPTY, G_OWN]
        hidden_cell = (own_visible < MIN_OWN_VISIBLE) | (square_visible < MIN_OWN_VISIBLE)
        undecided = hidden_cell & (hyp_conf < HIDDEN_MIN_CONF)
        read = ~hand_occ & ~undecided
        top_now = self._hyp_top[decision]
        if self._last_top is None:
            tallest = self._top_mm(decision, np.ones(n * n, bool))
            self._last_top = np.where(read, top_now, tallest)
        else:
            self._last_top = np.where(read, top_now, self._last_top)

        # Colour choices of every group of the decided hypotheses, at once.
        ks = np.arange(n * n)
        S_dec = S[ks, decision].copy()  # (cells, N_GTYPES, 4)
        # A level's colour costs: its min-marginals along the tower (pairs of adjacent levels).
        S_dec[:, G_LEVEL0:, :] = _chain_marginals(S_dec[:, G_LEVEL0:, :], P[ks, decision])
        best = np.argmin(S_dec, axis=2)
        col_conf = confidence_from_costs(S_dec / colour_temperature(decision, g.level_band_px)[:, :, None], 1.0)
        seen_w = cnt[ks, decision].tolist()
        cells: list[list[Any]] = [[None] * n for _ in range(n)]
        conf = np.zeros((n, n))
        occluded: list[list[int]] = []
        # (Python lists: the loop reads single values.)
        dec_l, hyp_l, best_l, col_l = decision.tolist(), hyp_conf.tolist(), best.tolist(), col_conf.tolist()
        for k in range(n * n):
            r, c = divmod(k, n)
            if hand_occ[k]:
                occluded.append([r, c])
                conf[r, c] = np.nan
                continue
            h = dec_l[k]
            cc = hyp_l[k]
            if h == EMPTY:
                cells[r][c] = None
            elif h == FIGURE:
                cc = min(cc, col_l[k][G_FIG])
                cells[r][c] = {"figure": self.players[best_l[k][G_FIG]]}
            else:
                tower: list[str] = []
                confs: list[float] = []
                for level in range(h, 0, -1):  # top down: an unseen level repeats the one above
                    gt = G_LEVEL0 + level - 1
                    if seen_w[k][gt] < MIN_LEVEL_WEIGHT:
                        tower.append(tower[-1] if tower else self.blocks[best_l[k][gt]])
                        confs.append(1.0 / len(self.blocks))
                        continue
                    tower.append(self.blocks[best_l[k][gt]])
                    confs.append(col_l[k][gt])
                tower.reverse()
                cc = min([cc] + confs)
                cells[r][c] = {"tower": tower}
            if undecided[k]:
                if h != EMPTY or hyp_l[k] < HIDDEN_GUESS_MIN or square_visible[k] == 0 or hand_seen:
                    # What is left of it argues for several readings, or for a piece that
                    # nothing shows clearly (free colours fit whatever is seen past the
                    # nearer tower): not read. Nor while a hand is over the board: the
                    # hand may be what hides the rest of it, past the edge the detector
                    # found.
                    cells[r][c] = None
                    occluded.append([r, c])
                    conf[r, c] = np.nan
                    continue
                # Hidden behind nearer pieces, and what is seen of its own square shows
                # an empty space: reported so, at a confidence no one acts on (the
                # referee keeps a doubtful cell's committed content).
                cc = min(cc, HIDDEN_GUESS_CONF)
            conf[r, c] = cc
        same = self._prev_cells is not None and self._prev_cells == cells
        self._prev_cells = cells
        motion = self._motion(frame_bgr, t, lores, blocked=hand_seen or bool(hand_occ.any()), consistent=same)
        # Only hands block a commit: a cell a tall tower hides for good must not stop the
        # game (the referee keeps an occluded or doubtful cell's committed content).
        stable = bool(motion.stable and not hand_seen and not hand_occ.any())
        self.last = {"decision": decision.reshape(n, n), "hyp_conf": hyp_conf.reshape(n, n), "balance": balance,
                     "hands": hands, "side_shade": self.side_shade.copy(), "counts": cnt[np.arange(n * n), decision], "motion": motion, "pose": check.status.value,
                     "hand_cells": hand_cells.reshape(n, n), "hand_hidden": hand_hidden.reshape(n, n),
                     "hand_occ": hand_occ.reshape(n, n), "hidden_arm": hidden_arm,
                     "hidden_cell": hidden_cell.reshape(n, n), "square_visible": square_visible.reshape(n, n),
                     "blur_sigma": blur}
        return self._observation(index, t, stable, occluded, cells, conf,
                                 extra={"pose": check.status.value} if check.status.value != "ok" else None)

    def _motion(self, frame: np.ndarray, t: float, lores: np.ndarray | None, blocked: bool,
                consistent: bool = False) -> Any:
        small = lores_grey(lores if lores is not None else frame, self.gate.width)
        key = (self.view.version, small.shape)
        if self._lores_roi is None or self._lores_roi[0] != key:
            H, W = frame.shape[:2]
            sx, sy = small.shape[1] / W, small.shape[0] / H
            # The board, the tallest pieces on it, and an apron around it: an arm reaching
            # in moves there first, and its shadow on the board would spoil the reading.
            b = self.kit.blox
            w_mm = self.kit.area_mm("blox")[0]
            hmax = b.block.max_tower * b.block.height_mm + 10
            m = MOTION_APRON * w_mm
            corners = np.array([[-m, -m, 0], [w_mm + m, -m, 0], [w_mm + m, w_mm + m, 0], [-m, w_mm + m, 0],
                                [-m, -m, -hmax], [w_mm + m, -m, -hmax], [w_mm + m, w_mm + m, -hmax],
                                [-m, w_mm + m, -hmax]], float)
            pts = self.view.project(corners) * [sx, sy]
            if np.isfinite(pts).all():
                mask = np.zeros(small.shape, np.uint8)
                cv2.fillConvexPoly(mask, cv2.convexHull(np.round(pts).astype(np.int32)), 1)
                roi = mask.astype(bool)
            else:
                # A corner of the apron lies where the lens model does not project (far
                # out of a wide lens's view): the whole frame is watched instead.
                roi = np.ones(small.shape, bool)
            self._lores_roi = (key, roi)
        return self.gate.update(None, t, roi=self._lores_roi[1], blocked=blocked, lores=small, consistent=consistent)

    def _observation(self, index: int, t: float, stable: bool, occluded: list[list[int]], cells: list[list[Any]],
                     conf: np.ndarray, extra: dict | None = None) -> dict:
        finite = conf[np.isfinite(conf)]
        obs: dict[str, Any] = {
            "game": "blox", "frame": int(index), "t": round(float(t), 4), "stable": bool(stable),
            "occluded": occluded,
            "confidence": round(float(finite.min()), 4) if finite.size else 0.0,
            "state": {"colors": [list(row) for row in self.space_names], "cells": cells},
            "cell_confidence": [[None if not np.isfinite(v) else round(float(v), 4) for v in row] for row in conf],
        }
        if extra:
            obs.update(extra)
        return obs

    # ------------------------------------------------------------------ overlay
    def overlay(self, frame_bgr: np.ndarray, observation: dict) -> np.ndarray:
        """The frame with the grid and what was read: tower heights and top colours,
        figures, occluded cells crossed out, low-confidence cells in red."""
        out = frame_bgr.copy()
        if self.view.pose is None:
            return out
        n = self.n
        s = self.kit.blox.space_mm
        bgr = {name: tuple(int(v) for v in rgb[::-1]) for name, rgb in self.kit.blox.colors.items()}
        bgr.update({name: tuple(int(v) for v in rgb[::-1]) for name, rgb in self.kit.blox.players.items()})
        occ = {tuple(x) for x in observation.get("occluded", [])}
        confs = observation.get("cell_confidence") or [[1.0] * n for _ in range(n)]
        for r in range(n):
            for c in range(n):
                poly = self.view.cell_polygon(r, c).astype(np.int32)
                low = confs[r][c] is not None and confs[r][c] < 0.9
                cv2.polylines(out, [poly], True, (0, 0, 255) if low else (0, 200, 0), 1, cv2.LINE_AA)
                centre = self.view.project(np.array([[(c + 0.5) * s, (r + 0.5) * s, 0.0]]))[0]
                pc = (int(centre[0]), int(centre[1]))
                if (r, c) in occ:
                    cv2.line(out, tuple(poly[0]), tuple(poly[2]), (0, 0, 255), 1, cv2.LINE_AA)
                    cv2.line(out, tuple(poly[1]), tuple(poly[3]), (0, 0, 255), 1, cv2.LINE_AA)
                    continue
                cell = observation["state"]["cells"][r][c]
                if not cell:
                    continue
                if "tower" in cell:
                    cv2.circle(out, pc, 7, bgr.get(cell["tower"][-1], (255, 255, 255)), -1, cv2.LINE_AA)
                    cv2.putText(out, str(len(cell["tower"])), (pc[0] - 4, pc[1] + 4), cv2.FONT_HERSHEY_SIMPLEX, 0.4,
                                (0, 0, 255), 1, cv2.LINE_AA)
                else:
                    cv2.drawMarker(out, pc, bgr.get(cell["figure"], (255, 255, 255)), cv2.MARKER_DIAMOND, 12, 2)
        return out


def fit_rim_circles(prof: np.ndarray, radii: np.ndarray, angles: np.ndarray,
                    use: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Radius (mm) and its standard error of each chip's rim seen along radial profiles,
    for several chips at once (NaN for a chip with no reading).

    ``prof`` (chips, directions, len(radii), 3): linear RGB sampled at ``radii`` (mm,
    outward) along the directions ``angles`` in the plane of a chip's top. Along each
    profile the inner end shows the chip and the outer end the top face; where they
    differ enough (``RIM_MIN_CONTRAST``) the rim is the one place where the profile
    crosses half-way from one to the other (interpolated between samples; a profile
    crossing more than once, a nearer piece or a glare spot in the way, is left out). A
    circle is fitted to each chip's rim points (least squares on x^2 + y^2 = 2ax + 2by +
    c: exact for a circle off centre), points off it by more than ``RIM_OUTLIER_MM``
    dropped once. No reading when fewer than ``RIM_MIN_DIRECTIONS`` profiles agree.
    ``use`` (chips, directions): the profiles that may be used (all by default)."""
    inner = prof[:, :, :3].mean(axis=2)
    outer = prof[:, :, -3:].mean(axis=2)
    axis = inner - outer
    norm2 = (axis * axis).sum(axis=2)
    ok = (np.sqrt(norm2) >= RIM_MIN_CONTRAST) & (prof >= 0).all(axis=(2, 3))
    if use is not None:
        ok &= use
    m = ((prof - outer[:, :, None, :]) * axis[:, :, None, :]).sum(axis=3) / np.maximum(norm2, 1e-12)[..., None]
    above = m >= 0.5
    falls = above[..., :-1] & ~above[..., 1:]
    rises = ~above[..., :-1] & above[..., 1:]
    ok &= (falls.sum(axis=2) == 1) & (rises.sum(axis=2) == 0)
    j = np.argmax(falls, axis=2)[..., None]
    a0 = np.take_along_axis(m, j, axis=2)[..., 0]
    a1 = np.take_along_axis(m, j + 1, axis=2)[..., 0]
    j = j[..., 0]
    rho = radii[j] + (a0 - 0.5) / np.maximum(a0 - a1, 1e-6) * (radii[j + 1] - radii[j])
    x, y = rho * np.cos(angles), rho * np.sin(angles)
    # Least squares per chip on its kept rim points: the normal equations, all chips at once.
    A = np.stack([2 * x, 2 * y, np.ones_like(x)], axis=2)
    b = x * x + y * y
    keep = ok
    valid = np.ones(len(prof), bool)
    res = np.zeros_like(x)
    radius = np.full(len(prof), np.nan)
    for _ in range(2):
        valid &= keep.sum(axis=1) >= RIM_MIN_DIRECTIONS
        if not valid.any():
            break
        w = (keep & valid[:, None]).astype(float)
        AtA = np.einsum("cd,cdi,cdj->cij", w[valid], A[valid], A[valid])
        Atb = np.einsum("cd,cdi,cd->ci", w[valid], A[valid], b[valid])
        sol = np.linalg.solve(AtA, Atb[..., None])[..., 0]
        cx, cy = sol[:, 0], sol[:, 1]
        radius[valid] = np.sqrt(np.maximum(sol[:, 2] + cx * cx + cy * cy, 0.0))
        res[valid] = np.hypot(x[valid] - cx[:, None], y[valid] - cy[:, None]) - radius[valid, None]
        keep = ok & (np.abs(res) <= RIM_OUTLIER_MM)
    used = keep.sum(axis=1)
    valid &= used >= RIM_MIN_DIRECTIONS
    spread = np.sqrt((res * res * keep).sum(axis=1) / np.maximum(used, 1))
    sigma = np.hypot(spread / np.sqrt(np.maximum(used - 3, 1)), RIM_SIGMA_FLOOR_MM)
    return np.where(valid, radius, np.nan), np.where(valid, sigma, np.nan)


def _min4(x: np.ndarray, axis: int) -> np.ndarray:
    """``x.min(axis)`` along an axis of length 4, as three elementwise minima (numpy's
    reductions over such a short axis cost more than the arithmetic)."""
    after = (slice(None),) * (x.ndim - 1 - axis % x.ndim)  # the axes after ``axis``
    a, b, c, d = (x[(Ellipsis, k) + after] for k in range(4))
    return np.minimum(np.minimum(a, b), np.minimum(c, d))


def _chain_forward(U: np.ndarray, P: np.ndarray) -> list[np.ndarray]:
    """Per level (..., 4): the lowest cost of the levels up to it with each colour on it,
    for unary costs ``U`` (..., L, 4) and costs ``P`` (..., L - 1, 4, 4) of each pair of
    adjacent levels (lower, upper)."""
    F = [U[..., 0, :]]
    for lv in range(1, U.shape[-2]):
        F.append(U[..., lv, :] + _min4(F[-1][..., :, None] + P[..., lv - 1, :, :], -2))
    return F


def _chain_min(U: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Lowest total cost over the levels' colours of a tower (see :func:`_chain_forward`)."""
    return _min4(_chain_forward(U, P)[-1], -1)


def _chain_marginals(U: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Min-marginals (..., L, 4) of :func:`_chain_min`: per level and colour, the lowest
    total cost of a tower with that colour on that level."""
    L = U.shape[-2]
    F = _chain_forward(U, P)
    B = [np.zeros_like(U[..., 0, :])] * L
    for lv in range(L - 2, -1, -1):
        B[lv] = _min4(P[..., lv, :, :] + (U[..., lv + 1, :] + B[lv + 1])[..., None, :], -1)
    return np.stack([f + b for f, b in zip(F, B)], axis=-2)


def _shading_ref(ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reference colours (N, 3) CIELAB prepared for :func:`_shaded_sqdist`: (L + 16, a, b)
    by channel (3, N), and their squared lengths (N,)."""
    v = np.asarray(ref, np.float32).copy()
    v[:, 0] += 16
    return np.ascontiguousarray(v.T), np.maximum((v * v).sum(axis=1), np.float32(1e-6))


def _shaded_sqdist(obs: np.ndarray, ref: np.ndarray | None = None, lo: float = 0.62, hi: float = 1.04,
                   prepared: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Squared CIELAB distance from ``obs`` to ``ref`` under the best shading factor.

    A surface in shadow keeps its chromaticity; in CIELAB its (L + 16, a, b) scale
    together by the cube root of the light's factor u. u is fitted per row in closed
    form and kept in [lo, hi] (about 0.24x to 1.1x the light): a shadowed space still
    matches its colour, a different colour does not. ``prepared``: the references
    already prepared by :func:`_shading_ref` (instead of ``ref``). (Channel by channel:
    numpy's loops then run over the rows, not over three channels.)"""
    v, vv = _shading_ref(ref) if prepared is None else prepared
    o = np.asarray(obs, np.float32)
    o0, o1, o2 = o[:, 0] + np.float32(16), o[:, 1], o[:, 2]
    u = np.clip((o0 * v[0] + o1 * v[1] + o2 * v[2]) / vv, lo, hi)
    d0, d1, d2 = o0 - u * v[0], o1 - u * v[1], o2 - u * v[2]
    return d0 * d0 + d1 * d1 + d2 * d2


def _shaded_sqdist_one(obs: np.ndarray, ref: np.ndarray, lo: float = 0.62, hi: float = 1.04) -> np.ndarray:
    """:func:`_shaded_sqdist` against one reference colour ``ref`` (3,) for every row."""
    v = np.asarray(ref, np.float32) + np.float32([16, 0, 0])
    o = np.asarray(obs, np.float32) + np.float32([16, 0, 0])
    u = np.clip(o @ (v / np.float32(max(float(v @ v), 1e-6))), lo, hi)
    d = o - u[:, None] * v[None, :]
    return np.einsum("ij,ij->i", d, d)


def _glare_sqdist(obs_lin: np.ndarray, ref_lin: np.ndarray, obs_lab: np.ndarray,
                  clipped: np.ndarray | None = None) -> np.ndarray:
    """Squared CIELAB distance from ``obs`` to its reference seen under shading u and
    added white light w (a glare spot): ``u * ref + w``, u and w >= 0 fitted per row in
    linear light (least squares, u kept in the shading range of :func:`_shaded_sqdist`).

    ``clipped`` (N, 3) marks channels the sensor cut off: there the light was at least
    what was read, so a fit brighter than the reading costs nothing in that channel (the
    fit is made again with those channels raised to it, a few times)."""
    o = np.asarray(obs_lin, np.float32)
    r = np.asarray(ref_lin, np.float32)
    pred = _glare_fit(o, r)
    d = lab(pred) - obs_lab
    rows = np.nonzero(clipped.any(axis=1))[0] if clipped is not None else np.zeros(0, np.intp)
    if len(rows):
        oc, rc, cc = o[rows], r[rows], clipped[rows]
        pc = pred[rows]
        for _ in range(CLIP_REFITS):
            pc = _glare_fit(np.where(cc, np.maximum(oc, pc), oc), rc)
        d[rows] = lab(pc) - lab(np.where(cc, np.maximum(oc, pc), oc))
    d0, d1, d2 = d[:, 0], d[:, 1], d[:, 2]
    return d0 * d0 + d1 * d1 + d2 * d2


def _glare_fit(o: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The least-squares ``u * r + w`` of :func:`_glare_sqdist` for observations ``o``."""
    # Channel by channel (numpy's loops then run over the rows).
    o0, o1, o2, r0, r1, r2 = o[:, 0], o[:, 1], o[:, 2], r[:, 0], r[:, 1], r[:, 2]
    rr = r0 * r0 + r1 * r1 + r2 * r2
    rs = r0 + r1 + r2
    ro = r0 * o0 + r1 * o1 + r2 * o2
    so = o0 + o1 + o2
    det = np.maximum(3 * rr - rs * rs, np.float32(1e-8))
    u = np.clip((3 * ro - rs * so) / det, 0.24, 1.1)
    w = np.maximum((so - u * rs) / 3, 0)
    return np.stack([r0 * u + w, r1 * u + w, r2 * u + w], axis=1)


def _sqdist(x: np.ndarray, refs: np.ndarray) -> np.ndarray:
    """Squared distances (K, N) between rows of refs (K,3) and x (N,3), float32."""
    x = np.asarray(x, np.float32)
    r = np.asarray(refs, np.float32)
    xx = x[:, 0] * x[:, 0] + x[:, 1] * x[:, 1] + x[:, 2] * x[:, 2]
    d2 = xx[None, :] + (r * r).sum(axis=1)[:, None] - 2.0 * (r @ x.T)
    return np.maximum(d2, 0.0)


def _with_substitutes(visible: np.ndarray, g: BloxGeometry) -> np.ndarray:
    """The probes' weights ``visible`` with every substitute side probe given at most
    the weight that the probe it stands in for lost to a nearer piece
    (``_blox_geometry.SUBSTITUTE_LATERAL``): together they never count for more than
    one probe. (The lower of the two, not their product: a partial weight stays one of
    those a nearer piece gives, never below ``MAYBE_HIDDEN_WEIGHT``, which the scoring
    index's weak rows rely on: ``_blox_score.ScoreIndex.row_visibility``.)"""
    if g.substitutes is None:
        return visible
    sub, primary = g.substitutes[:, 0], g.substitutes[:, 1]
    out = visible.copy()
    out[sub] = np.minimum(visible[sub], 1.0 - visible[primary])
    return out


def _weight_per_cell(weight: np.ndarray, cell: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """The sum of ``weight`` over the entries of each of ``cells`` (``cell``: each
    entry's cell)."""
    return np.bincount(cell, weights=weight, minlength=int(cells.max(initial=0)) + 1)[cells]


def _rescaled_costs(hidden_cost: np.ndarray, seen_cost: np.ndarray, rays: np.ndarray,
                    gained: np.ndarray) -> np.ndarray:
    """The costs of the cells a nearer piece hid, in the behind test's alternative (the
    piece gone), counted at the nearer cell's density of probes.

    Without the piece, the pixels it covered are evidence twice: for the nearer cell's
    rays that reach a farther square, and for the farther cell's probes they bring into
    view (``gained`` of weight, at a cost of ``seen_cost - hidden_cost``). The rays are
    left free and the probes count for them (``rays`` of weight): the pixels are then
    judged by what the farther cell predicts there, at as many probes as the piece read
    them with. (Counted twice, the alternative paid more for the same pixels than the
    piece did: a phantom of four blocks on an empty space, in front of a tower of one,
    dev scene 8,840,033, was read at 0.97.) A cell none of the rays reach keeps its
    costs (``rays`` 0)."""
    scale = np.where((rays > 0) & (gained > 0), rays / np.where(gained > 0, gained, 1.0), 1.0)
    return hidden_cost + scale * (seen_cost - hidden_cost)


def colour_temperature(decision: np.ndarray, level_band_px: np.ndarray | None) -> np.ndarray:
    """(cells, N_GTYPES) posterior temperature of each group's colour choice for the
    decided hypotheses ``decision`` (cells,): COLOUR_TEMPERATURE, raised in proportion
    for a level below a tower's top whose side band (``level_band_px``, (cells, levels))
    is thinner than THIN_BAND_PX in the image: its probes all lie near the next level,
    and blur mixes the same neighbour into all of them."""
    temp = np.full((len(decision), N_GTYPES), COLOUR_TEMPERATURE)
    if level_band_px is None:
        return temp
    n_levels = level_band_px.shape[1]
    height = np.where(decision <= n_levels, decision, 0)  # towers; a figure has no levels
    below_top = np.arange(n_levels)[None, :] < height[:, None] - 1
    thin = np.maximum(1.0, THIN_BAND_PX / np.maximum(level_band_px, 1e-3))
    temp[:, G_LEVEL0:G_LEVEL0 + n_levels] = np.where(below_top, COLOUR_TEMPERATURE * thin, COLOUR_TEMPERATURE)
    return temp


# ---------------------------------------------------------------------- scoring


def score(truth: dict, observed: dict) -> dict[str, tuple[int, int]]:
    """Blox metrics (errors, total) for one frame, for ``bloxcam evaluate``.

    * ``space``: cells visible in both the truth and the observation whose content differs;
    * ``board_exact``: on truth-stable frames, 1 error unless every cell is right and none
      is reported occluded;
    * ``tower_height``: truth towers (visible in both) read with another height or not as a tower;
    * ``block_colour``: blocks of those towers read with another colour (missing levels count);
    * ``figure_colour``: truth figures read as anything but a figure of their colour;
    * ``occlusion_missed``: truth-occluded cells the observation gave a value for (a guess under a hand);
    * ``occlusion_extra``: cells reported occluded that the truth sees (caution, not an error of content);
    * ``colors``: board space colours that differ from the truth's (when both give them).
    """
    tcells = truth["state"]["cells"]
    ocells = observed["state"]["cells"]
    n = len(tcells)
    tocc = {tuple(x) for x in truth.get("occluded", [])}
    oocc = {tuple(x) for x in observed.get("occluded", [])}
    m = {k: [0, 0] for k in ("space", "tower_height", "block_colour", "figure_colour", "occlusion_missed",
                             "occlusion_extra")}
    exact = True
    for r in range(n):
        for c in range(n):
            key = (r, c)
            tv, ov = tcells[r][c], ocells[r][c]
            if key in tocc:
                m["occlusion_missed"][1] += 1
                if key not in oocc:
                    m["occlusion_missed"][0] += 1
                continue
            m["occlusion_extra"][1] += 1
            if key in oocc:
                m["occlusion_extra"][0] += 1
                exact = False
                continue
            m["space"][1] += 1
            if tv != ov:
                m["space"][0] += 1
                exact = False
            if tv and "tower" in tv:
                m["tower_height"][1] += 1
                ot = ov.get("tower") if ov else None
                if ot is None or len(ot) != len(tv["tower"]):
                    m["tower_height"][0] += 1
                for i, col in enumerate(tv["tower"]):
                    m["block_colour"][1] += 1
                    if ot is None or i >= len(ot) or ot[i] != col:
                        m["block_colour"][0] += 1
            elif tv and "figure" in tv:
                m["figure_colour"][1] += 1
                if not ov or ov.get("figure") != tv["figure"]:
                    m["figure_colour"][0] += 1
    out = {k: (v[0], v[1]) for k, v in m.items()}
    if truth.get("stable"):
        out["board_exact"] = (0 if exact and not tocc else 1, 1)
    tcol = truth["state"].get("colors")
    ocol = observed["state"].get("colors")
    if tcol and ocol:
        out["colors"] = (sum(a != b for ra, rb in zip(tcol, ocol) for a, b in zip(ra, rb)), n * n)
    return out
