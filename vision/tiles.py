"""Blockers! spaces: empty or a tile, the tile's colour and its printed face.

Private helper of :mod:`vision.blockers` (issue 9). Geometry from the kit (9 x 9
spaces of ``space_mm`` under a clear grid, tiles ``tile_thickness_mm`` thick) and the
board pose; colours from the survey's tile references; faces from
:mod:`vision.glyphs`.

A frame is warped top-down *at the height of the tiles' tops* (2 px/mm), so a tile's
print is sharp and square whatever the camera's tilt. Each space is looked at through
a window a little smaller than a tile (the clear grid's walls, the tile's edges and a
slightly askew tile stay outside it):

* colour: a tile is saturated, the board's paper is not (glare on the clear plastic
  only whitens it further). The colour is the chromaticity of the window's saturated,
  un-inked pixels (un-inked judged against the saturated pixels' own brightness, so a
  strip of paper in the window of a tile a little off its space does not turn the
  tile into ink), white-balanced per frame against the markers' paper, nearest to the
  tile references (shading and one-sided light change the level, not the
  chromaticity);
* face: the ink is what is much darker than the tile's own colour; it is normalised
  for position and size and matched against the glyph library (in a blurred frame, a
  face left unread is tried against templates smeared as motion smears a print). A
  face that matches no glyph clearly (blur, glare over the print, a finger), or whose
  printed size is no face's (:func:`_plausible_size`), is ``None``; the colour is still
  given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from calibration.colour import srgb_to_linear
from vision.cards import _LUT3, ColourRefs, StableWarp, WhiteReference, paper_points
from vision.colours import segment_distance
from vision.glyphs import INK_THRESHOLD, GlyphBank, GlyphMatch, ink_boxes, normalise_ink

PPM = 2.0
WINDOW_MM = 24.0  # the part of a space that a tile (27 mm, up to ~1.5 mm askew) always covers

# A face whose best class beats the next by less than the glyph bank's margin is read
# still when it beats it by at least CLOSE_MARGIN overall and clearly (CLOSE_DISCRIMINATE)
# where the two classes' templates differ (see GlyphBank.discriminate).
CLOSE_MARGIN = 0.01
CLOSE_DISCRIMINATE = 0.2
# Chromaticity distance from the surveyed paper beyond which a saturated space with a
# print is a tile whatever reference it is nearest (the paper itself stays within ~0.08
# of its survey: FOREIGN_PAPER_CHROMA in vision.blockers); the print: at least MIN_PRINT
# of the window inked (the smallest face, the wild tile's word, inks ~3%).
TILE_OFF_PAPER = 0.15
MIN_PRINT = 0.015
# A "letter" of no letter's height is read as the symbol it resembles only if that
# symbol's template fits within this much of the letter's (a crescent read as C: 0.97
# against 0.98; a defocused H against a square: 0.75 against 0.99).
REDIRECT_GAP = 0.05
SHARP_BLUR = 1.2  # canvas px: a frame whose faces fit templates this sharp or sharper is sharp
# A tile whose ink image (0..1) differs from the previous frame's by no more than this
# anywhere, averaged over 3 x 3 pixels, shows the same print: its glyph scores are kept,
# not matched again. Sensor noise and JPEG move that average by up to ~0.1; another
# face differs by strokes (2 px wide and more) of ink against none: ~0.7 and more; a
# glare spot or a finger over the print washes ink out or adds it over such areas too.
# (A tile nudged by a pixel may pass: its face is the same.)
INK_SAME = 0.25
# Printed sizes in letter heights (see _plausible_size): every face but the word within
# FACE_HEIGHT_TOL of a letter's height; the word no taller than WILD_MAX_HEIGHT and at
# least WILD_MIN_ASPECT times as wide as tall (nine letters in a row: ~0.25 and ~6).
FACE_HEIGHT_TOL = 0.3
WILD_MAX_HEIGHT = 0.5
WILD_MIN_ASPECT = 3.5
KEEP_MARGIN = 0.08  # a face read by this margin or more keeps its scores while its ink is unchanged

_LUMA_BGR = np.array([0.0722, 0.7152, 0.2126], np.float32)


@dataclass
class SpaceReading:
    tile: bool
    colour: str | None
    colour_conf: float
    face: str | None
    face_score: float
    face_margin: float
    saturation: float
    colour_dist: float = 0.0
    ink: float = 0.0  # fraction of the window printed (dark on the tile)
    board_dist: float = 0.0  # chromaticity distance to the surveyed board paper
    whitish: bool = False  # between the board's paper and white: paper under glare
    drifted: bool = False  # a tile only for being far off the paper: nearer it than its own colour (TILE_OFF_PAPER)


class TileReader:
    """Reads the 81 spaces of a Blockers! board (see the module docstring)."""

    def __init__(self, view: Any, survey: dict | None, symbols: list[str]) -> None:
        self.view = view
        kit = view.kit
        self.kit = kit
        b = kit.blockers
        self.n = b.spaces
        self.space = b.space_mm
        self.z = -b.tile_thickness_mm
        self.colour_names = list(b.colors)
        self.refs = ColourRefs.from_survey(survey, self.colour_names, b.colors)
        gains0 = (survey or {}).get("white_balance", {}).get("gains")
        self.white = WhiteReference(paper_points(kit, "blockers"), initial=gains0)
        self.glyphs = GlyphBank(symbols)
        bl = board_reference_lin(survey, kit)
        self.board_chroma = bl / bl.sum()
        self.cell_px = int(round(self.space * PPM))
        w = int(round(min(WINDOW_MM, b.tile_mm - 2) * PPM))
        self.lo = (self.cell_px - w) // 2
        self.hi = self.lo + w
        self.warp: np.ndarray | None = None
        self.stable = StableWarp(view, PPM, self.z)
        # the printed letters' height, learned from confidently read letters and digits
        self._heights: list[float] = []
        self.letter_mm: float | None = None
        self.reuse = True  # keep an unchanged tile's glyph scores from the previous frame
        self.matched = 0
        self._cache: dict[int, _TileMemo] = {}  # space index -> what its last read left
        self._cache_version = -1

    def read(self, frame_bgr: np.ndarray) -> list[list[SpaceReading]]:
        view = self.view
        warp = self.stable.warp(frame_bgr)
        gains = self.white.update(frame_bgr, view, self.stable.version).astype(np.float32)
        self.warp = warp
        n, c = self.n, self.cell_px
        # balanced linear BGR (the gains folded into the table: the same products)
        linb = cv2.LUT(warp[: n * c, : n * c], _LUT3 * gains[::-1])
        w = self.hi - self.lo
        # the print's brightness at full resolution, per window (n * n, w, w)
        lum = cv2.transform(linb, _LUMA_BGR.reshape(1, 3))
        lum_full = np.ascontiguousarray(lum.reshape(n, c, n, c)[:, self.lo:self.hi, :, self.lo:self.hi]
                                        .transpose(0, 2, 1, 3)).reshape(n * n, w, w)
        # colour statistics need less: half resolution
        half = cv2.resize(linb, (n * c // 2, n * c // 2), interpolation=cv2.INTER_AREA)
        h2, lo2, hi2 = c // 2, self.lo // 2, self.hi // 2
        win = half.reshape(n, h2, n, h2, 3)[:, lo2:hi2, :, lo2:hi2].transpose(0, 2, 1, 3, 4)
        win = np.ascontiguousarray(win).reshape(n * n, -1, 3)  # (81, P, 3)
        b_, g_, r_ = win[..., 0], win[..., 1], win[..., 2]
        mx = np.maximum(np.maximum(b_, g_), r_)
        mn = np.minimum(np.minimum(b_, g_), r_)
        sat = (mx - mn) / np.maximum(mx, 1e-6)
        lum = win @ _LUMA_BGR
        P = lum.shape[1]
        # The tile's own colour: saturated pixels that are not ink (a tile's brighter
        # part), per space.
        p70 = np.partition(sat, int(0.7 * P), axis=1)[:, int(0.7 * P)]
        lum_hi = np.partition(lum, int(0.8 * P), axis=1)[:, int(0.8 * P)]
        # Empty or a tile: the window's un-inked colour is nearer the surveyed board
        # paper or nearer a tile colour (chromaticity: shading does not matter).
        lit = (lum > 0.5 * lum_hi[:, None]).astype(np.float32)
        mean_col = np.matmul(lit[:, None, :], win)[:, 0] / np.maximum(lit.sum(axis=1), 1)[:, None]
        ch = mean_col[:, ::-1] / np.maximum(mean_col.sum(axis=1, keepdims=True), 1e-6)
        d_board = np.linalg.norm(ch - self.board_chroma, axis=1)
        d_tile = np.min(np.linalg.norm(ch[:, None, :] - self.refs.chroma[None], axis=2), axis=1)
        # glare on the clear plastic adds white light: the paper's colour moves toward neutral
        whitish = segment_distance(ch, self.board_chroma, np.full(3, 1 / 3)) < 0.06
        # per space, vectorised: the tile's colour and brightness from its saturated,
        # un-inked pixels; then the ink, far darker than the tile's own brightness.
        # Un-inked: not far darker than the saturated pixels' own brighter part (not the
        # window's: a strip of paper in the window, of a tile a little off its space or
        # smeared by motion, is brighter than a blue or violet tile and would make the
        # whole tile look like ink)
        sp = sat > 0.6 * p70[:, None]
        n_sp = sp.sum(axis=1)
        lum_sorted = np.sort(np.where(sp, lum, -1.0), axis=1)
        sp_hi = np.take_along_axis(lum_sorted, (P - 1 - (0.2 * n_sp).astype(int))[:, None], axis=1)[:, 0]
        good = sp & (lum > 0.5 * sp_hi[:, None])
        cnt = good.sum(axis=1)
        col = np.matmul(good.astype(np.float32)[:, None, :], win)[:, 0] / np.maximum(cnt, 1)[:, None]
        if not cnt.all():
            col = np.where(cnt[:, None] > 0, col, win.mean(axis=1))
        col = col[:, ::-1]  # RGB
        chroma = col / np.maximum(col.sum(axis=1, keepdims=True), 1e-6)
        dist_all = np.linalg.norm(chroma[:, None, :] - self.refs.chroma[None], axis=2)
        order = np.argsort(dist_all, axis=1)
        rows = np.arange(n * n)
        d0, d1 = dist_all[rows, order[:, 0]], dist_all[rows, order[:, 1]]
        tl = np.where(cnt > 5, (lum * good).sum(axis=1) / np.maximum(cnt, 1), lum_hi)
        # A tile a little off its space (askew, or placed by the pose of a blurred frame)
        # leaves paper in the window: the lit pixels' mean is paler than the tile, but
        # its saturated pixels still show the tile's colour.
        d_tile = np.minimum(d_tile, d0)
        # A saturated space far off the surveyed paper is no paper, even when its colour
        # has drifted nearer the paper than its own reference (a violet tile printed
        # redder over a lilac-tinted paper, seen through a white balance fitted on bluish
        # marker paper): a tile, its colour the nearest reference, if it carries a print
        # (every tile does, R-BLOCKERS-1; skin over the board does not).
        drifted = (d_tile >= d_board) & (d_board > TILE_OFF_PAPER) & ~whitish & (p70 > 0.2)
        is_tile = ((d_tile < d_board) & (p70 > 0.2)) | drifted
        ink_all = np.clip((1.0 - lum_full[is_tile] / np.maximum(tl[is_tile], 1e-6)[:, None, None]) * 1.15, 0, 1)
        out: list[list[SpaceReading]] = [[None] * n for _ in range(n)]  # type: ignore[list-item]
        # A tile whose ink is what it was in the previous frame (same warp) keeps its
        # glyph scores: only the faces that changed are matched again.
        if self._cache_version != self.stable.version or not self.reuse:
            self._cache = {}
        self._cache_version = self.stable.version
        same = np.zeros(n * n, bool)
        tiles_k = np.nonzero(is_tile)[0]
        if self._cache and len(tiles_k):
            # only confident readings are kept: a doubtful face is matched again in every
            # frame (as without reuse: each frame gives it another chance)
            have = np.array([k in self._cache and self._cache[k].confident for k in tiles_k])
            if have.any():
                old = np.stack([self._cache[k].ink if k in self._cache else ink_all[t]
                                for t, k in enumerate(tiles_k)])
                same[tiles_k] = have & (_local_change(ink_all - old) <= INK_SAME)
        cache: dict[int, _TileMemo] = {}
        pending: list[tuple[_TileMemo, np.ndarray]] = []  # tiles whose face is matched this frame
        boxes = ink_boxes(ink_all, INK_THRESHOLD).tolist()
        t = 0
        for k in range(n * n):
            r, cc = divmod(k, n)
            if is_tile[k]:
                ink = ink_all[t]
                box = boxes[t]
                t += 1
            if not is_tile[k] or (drifted[k] and box[0] < MIN_PRINT * ink.size):
                # no tile (a space only far off the paper, without a print, is none either)
                conf = 0.0 if is_tile[k] else _unit((d_tile[k] - d_board[k]) / 0.08)
                out[r][cc] = SpaceReading(False, None, conf, None, 0, 0, float(p70[k]), float(d_tile[k]), 0.0,
                                          float(d_board[k]), bool(whitish[k]))
                continue
            dist, margin = float(d0[k]), float(d1[k] - d0[k])
            conf = _unit(margin / 0.08) * _unit(1.5 - dist / 0.15)
            if same[k]:
                prev = self._cache[k]
                memo = _TileMemo(ink, prev.count, prev.height, prev.width, prev.scores)
            else:
                memo = _TileMemo(ink, box[0], box[4] / PPM, box[3] / PPM)
                canvas = normalise_ink(ink, INK_THRESHOLD, box)
                if canvas is not None:
                    pending.append((memo, canvas))
            out[r][cc] = SpaceReading(True, self.colour_names[int(order[k, 0])], conf, None, 0.0, 0.0, float(p70[k]),
                                      dist, memo.count / ink.size, float(d_board[k]), drifted=bool(drifted[k]))
            cache[k] = memo
        self.matched = len(pending)  # faces matched against the glyph bank this frame
        if pending:
            per_new, best_new, x_new = self.glyphs.score_rows(np.array([canvas for _, canvas in pending]))
            for j, (memo, _) in enumerate(pending):
                memo.scores = (per_new[j], best_new[j], x_new[j])
        self._cache = cache if self.reuse else {}
        faces = [(k, memo) for k, memo in cache.items() if memo.scores is not None]
        if faces:
            text = self.glyphs.is_text
            names = self.glyphs.names
            matches = self.glyphs.decide_many(np.array([memo.scores[0] for _, memo in faces]))
            # how blurred this frame's faces are: the blur of the templates that fit them
            frame_blur = float(np.median([self.glyphs.blur_of(memo.scores[1], m.best)
                                          for (_, memo), m in zip(faces, matches)]))
            # In a blurred frame, faces no template fits clearly are tried again against
            # smeared templates (a print streaked by motion); a sharp frame has no streaks.
            doubt = [i for i, m in enumerate(matches) if m.face is None] if frame_blur > SHARP_BLUR else []
            streaked: dict[int, GlyphMatch] = {}
            if doubt:
                per_s = self.glyphs.streak_scores(np.array([faces[i][1].scores[2] for i in doubt]))
                per_s = np.maximum(per_s, np.array([faces[i][1].scores[0] for i in doubt]))
                streaked = dict(zip(doubt, self.glyphs.decide_many(per_s)))
            for i, ((k, memo), m) in enumerate(zip(faces, matches)):
                r, cc = divmod(k, n)
                row, best, x = memo.scores
                height = memo.height
                both_text = text[names.index(m.best)] and text[names.index(m.second)]
                if m.face is None and m.score >= 0.6 and CLOSE_MARGIN <= m.margin \
                        and (both_text or frame_blur <= SHARP_BLUR) \
                        and self.glyphs.discriminate(x, best, m.best, m.second) >= CLOSE_DISCRIMINATE:
                    # two characters alike overall (B and 8): decided where they differ
                    # (symbols only in a sharp frame: blur rounds a diamond or a star toward a sun)
                    m = GlyphMatch(m.best, m.score, m.margin, m.best, m.second)
                if m.face is None and i in streaked:
                    m = streaked[i]
                # Letters and digits are printed at one height: a "letter" much taller
                # or shorter than the letters read so far is a symbol that looks like
                # one (a crescent like a C); read it among the other faces, if one fits
                # nearly as well (REDIRECT_GAP); else it is unread (a blurred H's box
                # is no letter's height, and no symbol's shape either).
                if m.face is not None and text[names.index(m.face)] and self.letter_mm:
                    if abs(height - self.letter_mm) > 0.12 * self.letter_mm:
                        as_symbol = self.glyphs.decide(row, ~text)
                        m = as_symbol if as_symbol.score >= m.score - REDIRECT_GAP else \
                            GlyphMatch(None, m.score, m.margin, m.best, m.second)
                    elif m.margin > 0.08:
                        self._heights.append(height)
                if m.face is not None and self.letter_mm and not _plausible_size(
                        m.face == self.glyphs.wild, height / self.letter_mm, memo.width / max(height, 1e-6)):
                    m = GlyphMatch(None, m.score, m.margin, m.best, m.second)
                s = out[r][cc]
                s.face, s.face_score, s.face_margin = m.face, m.score, m.margin
                memo.confident = m.face is not None and m.margin >= KEEP_MARGIN
                if m.face is not None and text[names.index(m.face)] and not self.letter_mm \
                        and m.margin > 0.08:
                    self._heights.append(height)
            self._heights = self._heights[-60:]
            if len(self._heights) >= 1:
                self.letter_mm = float(np.median(self._heights))
        return out


@dataclass
class _TileMemo:
    """What reading one tile leaves for the next frame (see INK_SAME)."""

    ink: np.ndarray  # the print's ink image (0 = tile, 1 = full ink)
    count: int  # ink pixels
    height: float  # the print's height, mm
    width: float  # the print's width, mm
    scores: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # its (per, best, X) rows of GlyphBank.score_rows
    confident: bool = False  # its face was read by KEEP_MARGIN or more


def _plausible_size(wild: bool, height: float, aspect: float) -> bool:
    """Whether a print ``height`` letter heights high and ``aspect`` (width / height)
    wide can be a face read as the word (``wild``) or as another face.

    Every face but the word is printed about as tall as the letters (a symbol fills the
    same height as a letter: blur and shape change that by well under FACE_HEIGHT_TOL);
    the word ``BLOCKERS!`` is a line of nine letters on the same tile: low and wide. A
    "face" of another size is part of a print (a blurred stroke, the word's dot) or
    something else: it is not read."""
    if wild:
        return height <= WILD_MAX_HEIGHT and aspect >= WILD_MIN_ASPECT
    return abs(height - 1.0) <= FACE_HEIGHT_TOL


def _local_change(diff: np.ndarray) -> np.ndarray:
    """Per image of ``diff`` (N, h, w): the largest absolute 3 x 3 mean (zero outside)."""
    N, h, w = diff.shape
    pad = np.zeros((N, h + 2, w + 2), np.float32)
    pad[:, 1:-1, 1:-1] = diff
    box = cv2.boxFilter(pad.reshape(N * (h + 2), w + 2), -1, (3, 3), normalize=True,
                        borderType=cv2.BORDER_CONSTANT)
    box = box.reshape(N, h + 2, w + 2)[:, 1:-1, 1:-1]
    return np.abs(box).reshape(N, -1).max(axis=1)


def _unit(v: float) -> float:
    """``v`` clipped to 0..1 (a Python float)."""
    return min(max(float(v), 0.0), 1.0)


def board_reference_lin(survey: dict | None, kit: Any) -> np.ndarray:
    """The board paper's reference colour (normalised linear RGB)."""
    from vision.cards import lab_to_linear

    lab = ((survey or {}).get("board") or {}).get("lab")
    if lab is not None:
        return np.clip(lab_to_linear(lab), 1e-4, None)
    return srgb_to_linear(np.array(kit.blockers.board, float))
