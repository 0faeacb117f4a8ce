"""Blockers! recogniser: the 9 x 9 board under its clear grid as the ``blockers``
observation (issue 9).

``Recognizer(calibration).process(frame, t, index)`` returns one observation of
``observation.md``: ``state.cells`` rows A-I (far to near), columns 1-9, each ``null``
(empty) or ``{"color": c, "face": f}`` with ``f`` one of ``"A"``-``"I"``, ``"1"``-``"9"``,
a symbol name or ``"wild"`` (R-BLOCKERS-1), or ``null`` when the print cannot be read
(the colour is always given). How spaces are read: :mod:`vision.tiles`.

Extra field (a documented addition): ``state.cell_confidence``, 9 x 9 numbers 0..1
(the colour's confidence; for a tile whose face was read, the lower of colour and face).

Occlusion: hands and arms are found by :class:`vision.hands.HandDetector` against the
survey's references (the tiles' colours and the board's paper), and per space by what
its reading cannot be (:func:`foreign_spaces`: a tile without print off its colour, or
"paper" off the paper's colour and more saturated than the frame's paper). Skin can lie
near a mix of a tile's colour and the paper, which the pixel test must accept at tile
edges; the per-space test catches it. A space more than 15% covered, or in a region of
foreign spaces reaching in over the board's edge, and the spaces around it, are listed
in ``occluded`` and their cells are ``null``: they are not guessed; so are the
spaces next to them, as far as their readings fit nothing well (:func:`hand_reach`). With most markers
covered every space is occluded. An arm seen crossing the table into the board
(:class:`vision.surround.SurroundWatch`, against the survey's empty table) whose hand
nothing on the board shows near its side (skin as pale as the paper) makes every space
occluded. While a hand or arm is over the board nothing is ``stable``.

Symbol names: the edition's section symbols (``engine/editions/blockers.json``,
``sections``) plus any other symbol the glyph library knows, unless ``symbols=`` is
given: see the report of issue 9 about the renderer's default symbol names.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import cv2
import numpy as np

from calibration.colour import srgb_to_linear
from vision.board import BoardLost, BoardView
from vision.cards import PoseGuard, SameFrame, paper_points
from vision.colours import ColourModel, bgr_to_linear
from vision.glyphs import KNOWN_SYMBOLS
from vision.hands import HandDetector
from vision.motion import StabilityGate
from vision.surround import Arm, SurroundWatch
from vision.tiles import SpaceReading, TileReader, board_reference_lin

OCCLUDED_COVER = 0.15
# Every tile carries a printed face (R-BLOCKERS-1): a "tile" with no print whose colour
# is this far (chromaticity) from its nearest tile reference is something else. Blur
# thins a face's ink but leaves the tile's colour on its reference; an arm of skin that
# happens to lie near yellow or red has no print and sits off the reference.
PRINTLESS_CHROMA = 0.08
PRINTLESS_INK = 0.02
# The board's paper is printed nearly neutral and glare only whitens it further: an
# "empty" space this far from the paper's chromaticity (and not toward white) that is
# also clearly more saturated than this frame's paper spaces is something lying on it.
FOREIGN_PAPER_CHROMA = 0.08
FOREIGN_SATURATION = 0.15
# ... or, whatever its saturation, this far from the paper's chromaticity; or off it in
# both at once: (distance / FOREIGN_FAR_CHROMA + extra saturation / FOREIGN_SATURATION)
# at least FOREIGN_COMBINED. On development scenes glare and shading put visible empty
# spaces at most ~0.13 away and at 1.23 combined; pale skin over a lilac paper lies
# 0.2-0.26 away while only 0.12-0.14 more saturated than that paper (1.9-2.1 combined).
FOREIGN_FAR_CHROMA = 0.2
FOREIGN_COMBINED = 1.4
# Next to a hand, a space whose colour fits its best reference below this confidence
# (or a tile whose print cannot be read) is taken as more of the hand (see hand_reach).
DOUBT_COLOUR_CONF = 0.5


def doubtful_spaces(spaces: list[list[SpaceReading]]) -> np.ndarray:
    """(n, n) spaces whose reading fits nothing well: a colour below ``DOUBT_COLOUR_CONF``,
    or a tile whose printed face (every tile has one, R-BLOCKERS-1) could not be read."""
    return np.array([[s.colour_conf < DOUBT_COLOUR_CONF or (s.tile and s.face is None) for s in row]
                     for row in spaces], bool)


def hand_reach(hand: np.ndarray, doubtful: np.ndarray) -> np.ndarray:
    """The spaces a hand found over ``hand`` may also cover: ``hand`` grown, eight ways,
    through ``doubtful`` spaces as far as they reach.

    Skin near a tile's colour, or a finger's shadow, escapes the pixel test; such a
    space reads as a tile with no legible print or a colour that fits no reference well.
    Next to a hand that is the hand, not a reading (held-out Blockers! scenes: a dark
    hand over yellow and blue tiles gave a row of printless yellow readings beyond the
    hand found)."""
    reach = hand.copy()
    kernel = np.ones((3, 3), np.uint8)
    while True:
        grow = cv2.dilate(reach.astype(np.uint8), kernel).astype(bool) & doubtful & ~reach
        if not grow.any():
            return reach
        reach |= grow


def edition_symbols(edition: Any = None) -> list[str]:
    """The section symbol names of the edition (a dict, or the bundled default)."""
    data = edition if isinstance(edition, dict) else None
    if data is None:
        try:
            data = json.loads(resources.files("engine.editions").joinpath("blockers.json").read_text("utf-8"))
        except (FileNotFoundError, ModuleNotFoundError, OSError, json.JSONDecodeError):
            data = {}
    secs = data.get("sections") or []
    names = [str(s) for row in secs for s in row] if secs and isinstance(secs[0], list) else [str(s) for s in secs]
    return names or list(data.get("symbols") or [])


class Recognizer:
    """Blockers! board from frames (see the module docstring)."""

    game = "blockers"

    def __init__(self, calibration: Any, *, stable_seconds: float = 1.0, edition: Any = None,
                 symbols: list[str] | None = None) -> None:
        self.calibration = calibration
        self.kit = calibration.kit
        self.view = BoardView(calibration, "blockers")
        self.pose_guard = PoseGuard(self.view)  # the pose re-checked only when it may have moved
        self.same = SameFrame()  # a frame identical to the last one read is not read again
        self.reuse = True
        self._last: tuple[tuple[int, float | None], Any] | None = None
        if symbols is None:
            ed = [s for s in edition_symbols(edition) if s in KNOWN_SYMBOLS]
            symbols = ed + [s for s in KNOWN_SYMBOLS if s not in ed]
        self.symbols = symbols
        self.reader = TileReader(self.view, calibration.survey, symbols)
        self.gate = StabilityGate(stable_seconds)
        self.colours = ColourModel(calibration.survey)
        # The board's paper is a reference too: hands are what neither the tiles nor
        # the board can be.
        board_lin = board_reference_lin(calibration.survey, self.kit)
        from calibration.colour import linear_to_lab

        # Everything that may lie on the board counts as "board colour" for the hand
        # detector: the paper and the five tile colours (tiles touch and form regions
        # larger than any Blox piece, which must not read as a hand).
        keys = []
        for name in self.kit.blockers.colors:
            if name in self.colours.refs:
                self.colours.refs[f"space:{name}"] = self.colours.refs[name]
                self.colours.ref_lin[f"space:{name}"] = self.colours.ref_lin[name]
                keys.append(f"space:{name}")
        self.colours.refs["space:board"] = linear_to_lab(board_lin)
        self.colours.ref_lin["space:board"] = board_lin
        keys.append("space:board")
        self.hands = HandDetector(self.view, self.colours, keys, chroma_tol=0.09)
        self.surround = SurroundWatch(self.view, calibration.survey)
        # balance points: the markers' white paper (known nominal white)
        self._paper = np.concatenate(paper_points(self.kit, "blockers"))
        self._paper_lin = srgb_to_linear(np.array((240, 240, 236), float))
        self._paper_px: np.ndarray | None = None
        self._version = -1

    def _balance(self, frame_bgr: np.ndarray):
        from vision.board import sample

        if self._paper_px is None or self._version != self.view.version:
            self._paper_px = self.view.project(self._paper)
            self._version = self.view.version
        vals = sample(frame_bgr, self._paper_px)
        ok = ~np.isnan(vals).any(axis=1)
        obs = bgr_to_linear(vals[ok])
        exp_ = np.tile(self._paper_lin, (int(ok.sum()), 1))
        return self.colours.balance(obs, exp_, self._paper[ok])

    def process(self, frame_bgr: np.ndarray, t: float, index: int, lores: np.ndarray | None = None) -> dict:
        n = self.kit.blockers.spaces
        obs: dict[str, Any] = {"game": "blockers", "frame": int(index), "t": round(float(t), 4), "stable": False,
                               "occluded": [], "confidence": 0.0,
                               "state": {"cells": [[None] * n for _ in range(n)]}}
        self.pose_guard.update(frame_bgr, t)
        try:
            # The very frame read last time, read with what the reader knows now (the
            # letters' printed height is learned from the first frames): the same board.
            known = (self.view.version, self.reader.letter_mm)
            if self.reuse and self._last is not None and self._last[0][0] == known[0] \
                    and _same_height(self._last[0][1], known[1]) and self.same.same(frame_bgr):
                spaces, hands = self._last[1]
            else:
                spaces = self.reader.read(frame_bgr)
                hands = self.hands.detect(frame_bgr, self._balance(frame_bgr))
                self.same.keep(frame_bgr)
                self._last = (known, (spaces, hands))
            # every frame, even one read before: how long a change has lasted counts
            arms = self.surround.arms(frame_bgr, t)
        except BoardLost:
            self.gate.update(frame_bgr, t, blocked=True, lores=lores)
            obs["error"] = "board markers not found"
            return obs
        cover = hands.cell_cover.copy() if hands.cell_cover is not None else np.zeros((n, n))
        odd = foreign_spaces(spaces)
        if 2 * self.pose_guard.hidden >= len(self.kit.marker_corners("blockers")):
            # Half the markers or more are covered: an arm lies over the board's corners
            # (or right under the camera), and the white balance (fitted on the markers'
            # paper) is taken largely from skin. Nothing read in this frame can be trusted.
            odd[:] = True
        # A hand is an arm reaching in over the board's edge and covering several
        # spaces: keep only such regions (a badly printed tile or a shadow is not one).
        seen = ((cover > 0.05) | odd).astype(np.uint8)
        k, lab, stats, _ = cv2.connectedComponentsWithStats(seen, connectivity=4)
        keep = np.zeros(k, bool)
        for j in range(1, k):
            x0, y0, w, h = stats[j, :4]
            edge = x0 == 0 or y0 == 0 or x0 + w == n or y0 + h == n
            keep[j] = edge and stats[j, cv2.CC_STAT_AREA] >= 2
        hand_cells = keep[lab]
        cover = np.where(hand_cells, np.maximum(cover, 1.0), 0.0)
        if hand_cells.any():
            # the spaces around the hand: a hand's edge, fingers and shadow reach into
            # them; reading them would be guessing (they are occluded, not read)
            near = cv2.dilate(hand_cells.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)
            cover[near] = 1.0
            cover[hand_reach(near, doubtful_spaces(spaces))] = 1.0
        if any(not _arm_reaches(arm, cover, self.kit.blockers.space_mm) for arm in arms):
            # An arm crosses the table into the board, and nothing on the board shows
            # where its hand is (skin as pale as the paper): no space can be trusted.
            cover[:] = 1.0
        hand_seen = hands.any or bool(hand_cells.any()) or bool(arms)
        cells: list[list[Any]] = [[None] * n for _ in range(n)]
        conf = np.ones((n, n))
        occluded = []
        for r in range(n):
            for c in range(n):
                if cover[r, c] > OCCLUDED_COVER:
                    occluded.append([r, c])
                    conf[r, c] = 0.0
                    continue
                s = spaces[r][c]
                if not s.tile:
                    conf[r, c] = s.colour_conf
                    continue
                cells[r][c] = {"color": s.colour, "face": s.face}
                conf[r, c] = min(s.colour_conf, min(max(s.face_margin / 0.15, 0.0), 1.0)) if s.face else s.colour_conf
        # a marker hidden: something lies over the board's corner (an arm reaching in)
        motion = self.gate.update(frame_bgr, t, blocked=hand_seen or self.view.confidence == 0
                                  or self.pose_guard.hidden > 0, lores=lores)
        obs["stable"] = bool(motion.stable)
        obs["occluded"] = occluded
        obs["state"] = {"cells": cells, "cell_confidence": np.round(conf, 3).tolist()}
        visible = conf[cover <= OCCLUDED_COVER]
        obs["confidence"] = round(float(min(visible.min() if visible.size else 1.0, self.view.confidence)), 4)
        return obs

    def overlay(self, frame_bgr: np.ndarray, observation: dict) -> np.ndarray:
        out = frame_bgr.copy()
        if self.view.pose is None:
            return out
        n = self.kit.blockers.spaces
        z = -self.kit.blockers.tile_thickness_mm
        occ = {tuple(p) for p in observation.get("occluded", [])}
        cells = observation.get("state", {}).get("cells", [])
        for r in range(n):
            for c in range(n):
                poly = np.round(self.view.cell_polygon(r, c, z, shrink=1.5)).astype(np.int32)
                cell = cells[r][c] if r < len(cells) and c < len(cells[r]) else None
                if (r, c) in occ:
                    cv2.polylines(out, [poly], True, (0, 0, 255), 1, cv2.LINE_AA)
                elif cell:
                    colour = (0, 200, 0) if cell.get("face") else (0, 165, 255)
                    cv2.polylines(out, [poly], True, colour, 1, cv2.LINE_AA)
                    p = poly.mean(axis=0)
                    cv2.putText(out, str(cell.get("face") or "?")[:3], (int(p[0]) - 8, int(p[1]) + 4),
                                cv2.FONT_HERSHEY_SIMPLEX, 0.3, (255, 255, 255), 1, cv2.LINE_AA)
        return out


def foreign_spaces(spaces: list[list[SpaceReading]]) -> np.ndarray:
    """(n, n) bool: spaces whose reading is neither a tile nor the board's paper.

    A tile without print and off its colour reference (``PRINTLESS_*``), a tile nearer
    the paper's colour than its own whose print is no face (taken for a tile only for
    being far off the paper: vision.tiles.TILE_OFF_PAPER; skin over a tile), or an "empty"
    space off the paper's colour (``FOREIGN_PAPER_CHROMA``), not whitened by glare, and
    either far off it (``FOREIGN_FAR_CHROMA``) or off it and more saturated than the
    paper spaces of the same frame, the two together (``FOREIGN_COMBINED``; more
    saturated by ``FOREIGN_SATURATION`` is enough). The paper's saturation is measured in
    the frame (its print, the light and the sensor's noise all raise it); with no paper
    space in sight every off-paper space counts."""
    flat = [s for row in spaces for s in row]
    paper = [s.saturation for s in flat if not s.tile and (s.whitish or s.board_dist < 0.5 * FOREIGN_PAPER_CHROMA)]
    paper_sat = float(np.median(paper)) if len(paper) >= 5 else -np.inf

    def off_paper(s: SpaceReading) -> bool:
        far = s.board_dist / FOREIGN_FAR_CHROMA
        more_saturated = max(s.saturation - paper_sat, 0.0) / FOREIGN_SATURATION
        return s.board_dist > FOREIGN_PAPER_CHROMA and (far >= 1.0 or far + more_saturated >= FOREIGN_COMBINED)

    return np.array([[(s.tile and s.ink < PRINTLESS_INK and s.colour_dist > PRINTLESS_CHROMA)
                      or (s.tile and s.drifted and s.face is None)
                      or (not s.tile and not s.whitish and off_paper(s))
                      for s in row] for row in spaces])


def _arm_reaches(arm: Arm, cover: np.ndarray, space_mm: float) -> bool:
    """Whether the hand found on the board meets the arm seen outside it: some space
    within two of the arm's side, along its stretch, is covered (a hand found on the
    board further along that side is another hand)."""
    n = cover.shape[0]
    lo = max(int(arm.start_mm // space_mm), 0)
    hi = min(int(np.ceil(arm.end_mm / space_mm)), n)
    near = {0: cover[:2, lo:hi], 1: cover[lo:hi, n - 2:], 2: cover[n - 2:, lo:hi], 3: cover[lo:hi, :2]}[arm.side]
    return bool((near > 0.05).any())


def _same_height(a: float | None, b: float | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and abs(a - b) <= 0.02 * b)


def score(truth: dict, observed: dict) -> dict[str, tuple[int, int]]:
    """Metrics for ``bloxcam evaluate``: (errors, total) each, over spaces not occluded
    in the truth.

    * ``tile_color``: spaces read wrong as empty/tile or with a wrong colour, over
      spaces the recogniser did not report occluded (a reported-occluded visible space
      is counted in ``space_hidden`` instead);
    * ``face_unread``: visible tiles (correct colour) whose face is ``null``, over
      visible tiles; ``face_wrong``: faces read wrong, over faces read;
    * ``space_hidden``: visible spaces the recogniser called occluded (caution);
    * ``occlusion_missed``: truth-occluded spaces read wrong (should be occluded)."""
    tc = truth.get("state", {}).get("cells", [])
    oc = observed.get("state", {}).get("cells", [])
    t_occ = {tuple(p) for p in truth.get("occluded", [])}
    o_occ = {tuple(p) for p in observed.get("occluded", [])}
    col = [0, 0]
    unread = [0, 0]
    wrong = [0, 0]
    hidden = [0, 0]
    missed = [0, 0]
    for r, row in enumerate(tc):
        for c, t in enumerate(row):
            o = oc[r][c] if r < len(oc) and c < len(oc[r]) else None
            if (r, c) in t_occ:
                if (r, c) not in o_occ:
                    missed[1] += 1
                    same = (t is None and o is None) or (t and o and t.get("color") == o.get("color")
                                                         and o.get("face") in (None, t.get("face")))
                    missed[0] += int(not same)
                continue
            hidden[1] += 1
            if (r, c) in o_occ:
                hidden[0] += 1
                continue
            col[1] += 1
            if (t is None) != (o is None) or (t and o and t.get("color") != o.get("color")):
                col[0] += 1
                if t:
                    unread[1] += 1
                    unread[0] += 1
                continue
            if t:
                unread[1] += 1
                if o.get("face") is None:
                    unread[0] += 1
                else:
                    wrong[1] += 1
                    wrong[0] += int(o.get("face") != t.get("face"))
    return {"tile_color": (col[0], col[1]), "face_unread": (unread[0], unread[1]), "face_wrong": (wrong[0], wrong[1]),
            "space_hidden": (hidden[0], hidden[1]), "occlusion_missed": (missed[0], missed[1])}
