"""Hands and arms over the board: which cells they cover.

Learned from the survey, not from skin RGB constants: everything that may lie on the
board has a surveyed (or kit) reference colour: the board's spaces (and so the Blox
blocks, printed in the same colours), the pieces (figures, chips, tiles, card shapes).
Shading, shadows and light fall-off change a colour's level but not its
*chromaticity* (r, g, b over their sum, in balanced linear light), so a pixel is
*explained* when its chromaticity lies near one of the references or near a mix of two
board colours (pixels on a border between spaces). Dark pixels carry no reliable
chromaticity and count as explained.

Regions that are not board colour (opened to drop isolated pixels and thin mixed
edges) are pieces or hands. A region is a hand when it is larger than any piece
(``large_cells`` of a cell), or when it is at least ``min_area_cells`` of a cell and a
quarter of it is no kit colour at all (skin can come close to a brown figure or a
chip, but a whole hand is never all piece colours). Without ``space:`` references
(games without a board colour map) every reference counts as board colour. The work is done on a low-resolution copy of the part of the frame around
the board (about 0.5 px per mm), so it costs about a millisecond.

A mix of two board colours is only ever a thin band where they meet; with
``mix_width_px`` a region at least that wide (low-res pixels) that only such a mix
explains is foreign too (pale skin can lie near a mix of cream and purple spaces).

An arm resting across the board's edge may show over the board only as a sliver the
size of a figure, and figures are known only by their nominal colours (an off-print one
is no kit colour either). With ``table_band_mm`` a band of table round the board is
watched as well: what there is neither the table (the band's median colour) nor a kit
colour, over at least ``BAND_MIN_CELLS`` and joined to something of no kit colour over
the board, is a hand. (The table's colour is not known beforehand, and oak looks like
skin: the band is judged against itself. Where skin and table look alike it sees
nothing, and the rules above stand alone.)

API: ``HandDetector(view, colours, reference_keys=None, *, grow_px=7, mix_width_px=None, table_band_mm=0, ...)``
(``grow_px``: how much the mask is grown, in low-res pixels, for a hand's soft edge); ``detect(frame, balance)
-> Hands`` with ``mask`` (low-res bool image), ``any``, ``cell_cover`` ((n,n) covered
fraction of each cell's board square, or None without a grid), ``covered(px)`` (are
frame pixels under a hand) and ``cover_of_points(pts_mm)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from vision.board import BoardView
from vision.colours import LINEAR_LUT, ColourModel, FrameBalance, chromaticity, segment_distance

BAND_GAP_MM = 3.0  # the table band starts this far beyond the marked area's edge (its print's edge mixes)
BAND_MIN_PIXELS = 40  # low-res pixels of table needed to say what the table looks like
TABLE_BRIGHTER = 1.8  # a band pixel this many times as bright as the table is no table (shadows only darken)
BAND_MIN_CELLS = 0.6  # table band area (in cells) of a region reaching over the board that makes it a hand
RIM_MM = 8.0  # an arm across the edge shows this close to it over the board


@dataclass
class Hands:
    mask: np.ndarray  # bool, low-res image of the region around the board
    origin: tuple[int, int]  # frame pixel of the low-res image's corner
    step: float  # frame pixels per low-res pixel
    any: bool
    cell_cover: np.ndarray | None
    area_cells: float  # total hand area in cells

    def covered(self, px: np.ndarray) -> np.ndarray:
        """Whether frame pixels (N,2) are under a hand."""
        px = np.asarray(px, np.float64).reshape(-1, 2)
        u = np.floor((px[:, 0] - self.origin[0]) / self.step).astype(int)
        v = np.floor((px[:, 1] - self.origin[1]) / self.step).astype(int)
        H, W = self.mask.shape
        ok = (u >= 0) & (v >= 0) & (u < W) & (v < H)
        out = np.zeros(len(px), bool)
        out[ok] = self.mask[v[ok], u[ok]]
        return out


@dataclass
class _Geometry:
    version: int
    origin: tuple[int, int]
    size: tuple[int, int]  # frame crop w, h
    step: float
    small: tuple[int, int]  # low-res w, h
    inside: np.ndarray  # low-res pixels over the board area (+ margin)
    basis: np.ndarray  # (len(inside_idx), 6) light-field basis at the inside pixels' board points
    cell_lat: np.ndarray | None  # (n*n, K) flat low-res indices of a lattice per cell (-1 outside)
    cell_area_px: float
    inside_idx: np.ndarray  # flat indices of the inside pixels
    band_idx: np.ndarray  # flat indices of the table band's pixels (table_band_mm; empty when off)
    band_basis: np.ndarray  # (len(band_idx), 6) light-field basis there
    rim: np.ndarray  # low-res bool image: the board's pixels next to its edge (where an arm crosses it)


class HandDetector:
    """Find hands over the board (see the module docstring)."""

    def __init__(self, view: BoardView, colours: ColourModel, reference_keys: list[str] | None = None, *,
                 px_per_mm: float = 0.4, chroma_tol: float = 0.055, min_area_cells: float = 0.6,
                 dark: float = 0.05, margin_mm: float = 10.0, height_mm: float = 80.0,
                 large_cells: float = 1.2, grow_px: int = 7, mix_width_px: int | None = None,
                 table_band_mm: float = 0.0) -> None:
        self.view = view
        self.colours = colours
        keys = reference_keys or list(colours.refs)
        self.points = np.array([chromaticity(colours.ref_lin[k]) for k in keys], np.float32)
        board = [k for k in keys if k.startswith("space:")]
        self.segments = [(chromaticity(colours.ref_lin[a]), chromaticity(colours.ref_lin[b]))
                         for i, a in enumerate(board) for b in board[i + 1:]]
        # Distance from every chromaticity (r, g; b = 1 - r - g) to the explained set,
        # tabulated once: to the board colours and their mixes, and to every reference.
        q = 160
        gr, gg = np.meshgrid(np.linspace(0, 1, q + 1), np.linspace(0, 1, q + 1), indexing="ij")
        grid = np.column_stack([gr.ravel(), gg.ravel(), 1 - gr.ravel() - gg.ravel()])
        d_board = np.full(len(grid), np.inf)
        for a, b in self.segments:
            d_board = np.minimum(d_board, segment_distance(grid, a, b) ** 2)
        board_pts = np.array([chromaticity(colours.ref_lin[k]) for k in board], np.float32)
        if len(board_pts):
            d_board = np.minimum(d_board, ((grid[:, None, :] - board_pts[None]) ** 2).sum(axis=2).min(axis=1))
        d_pure = ((grid[:, None, :] - self.points[None]) ** 2).sum(axis=2).min(axis=1)
        d_all = np.minimum(d_board, d_pure)
        self._lut = d_all.reshape(q + 1, q + 1).astype(np.float32)
        self._grid = grid.astype(np.float32)
        # Distance to one colour alone (for mix_width_px): any kit colour, or a board
        # colour whitened by glare (glare adds the light's white: that is no mix of two
        # spaces either).
        white = np.full(3, 1 / 3, np.float32)
        for p in board_pts:
            d_pure = np.minimum(d_pure, segment_distance(grid, p, white) ** 2)
        self._lut_unmixed = d_pure.reshape(q + 1, q + 1).astype(np.float32)
        self._surveyed_luts = (self._lut, self._lut_unmixed)
        self.learnt: dict[str, np.ndarray] = {}  # chromaticities learnt on this table (learn_colour)
        # Without board colours (no ``space:`` references) every reference counts as "board".
        self._lut_board = d_board.reshape(q + 1, q + 1).astype(np.float32) if board else self._lut
        self.px_per_mm = px_per_mm
        self.chroma_tol = chroma_tol
        self.min_area_cells = min_area_cells
        self.large_cells = large_cells
        self.grow_px = grow_px
        self.mix_width_px = mix_width_px
        self.dark = dark
        self.margin_mm = margin_mm
        self.height_mm = height_mm
        self.table_band_mm = table_band_mm
        self._geo: _Geometry | None = None

    def learn_colour(self, key: str, lin_rgb: np.ndarray) -> None:
        """A colour of a piece as seen on this table (balanced linear light), explained from
        now on besides the references: the kit gives pieces only a nominal colour, and a
        print off it by more than ``chroma_tol`` made two neighbouring point chips pass
        for a hand. A key learnt again replaces its earlier colour."""
        self.learnt[key] = chromaticity(np.asarray(lin_rgb, np.float64)).astype(np.float32)
        pts = np.array(list(self.learnt.values()), np.float32)
        d = ((self._grid[:, None, :] - pts[None]) ** 2).sum(axis=2).min(axis=1).reshape(self._lut.shape)
        lut, unmixed = self._surveyed_luts
        self._lut = np.minimum(lut, d)
        self._lut_unmixed = np.minimum(unmixed, d)
        if self._lut_board is lut:  # no board colours: every reference counts as board
            self._lut_board = self._lut

    def _geometry(self, frame: np.ndarray) -> _Geometry:
        v = self.view
        if self._geo is not None and self._geo.version == v.version:
            return self._geo
        H, W = frame.shape[:2]
        w_mm, h_mm = v.kit.area_mm(v.game)
        m = max(self.margin_mm, self.table_band_mm)
        low = v.area_polygon(m)
        # Pieces stand up to height_mm above the board: watch where they can appear too.
        top = v.project(np.array([[-m, -m, -self.height_mm], [w_mm + m, -m, -self.height_mm],
                                  [w_mm + m, h_mm + m, -self.height_mm], [-m, h_mm + m, -self.height_mm]]))
        pts = np.concatenate([low, top])
        x0, y0 = np.floor(pts.min(axis=0)).astype(int)
        x1, y1 = np.ceil(pts.max(axis=0)).astype(int) + 1
        x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, W), min(y1, H)
        span = float(np.linalg.norm(low[0] - low[len(low) // 4]))  # far edge in px
        ppm_frame = span / (w_mm + 2 * m)
        step = max(1.0, ppm_frame / self.px_per_mm)
        sw, sh = max(8, int(round((x1 - x0) / step))), max(8, int(round((y1 - y0) / step)))
        stepx, stepy = (x1 - x0) / sw, (y1 - y0) / sh
        step = 0.5 * (stepx + stepy)
        uu, vv = np.meshgrid((np.arange(sw) + 0.5) * stepx + x0 - 0.5, (np.arange(sh) + 0.5) * stepy + y0 - 0.5)
        px = np.column_stack([uu.ravel(), vv.ravel()])
        xy = v.to_plane(px, 0.0)
        # Only the board itself: the table around it may be any colour (oak looks like skin).
        inside = (xy[:, 0] > 1) & (xy[:, 1] > 1) & (xy[:, 0] < w_mm - 1) & (xy[:, 1] < h_mm - 1)
        s = 100.0
        x, y = xy[:, 0] / s, xy[:, 1] / s
        basis = np.stack([np.ones_like(x), x, y, x * x, x * y, y * y], axis=1).astype(np.float32)
        cell_lat = None
        cell_area = 1.0
        grid = v.kit.grid(v.game)
        if grid is not None:
            n, sz = grid
            f = (np.arange(5) + 0.5) / 5
            lat = np.array([(a, b) for b in f for a in f]) * sz
            cells = []
            for r in range(n):
                for c in range(n):
                    p = v.project(lat + [c * sz, r * sz])
                    iu = np.floor((p[:, 0] - x0) / stepx).astype(int)
                    iv = np.floor((p[:, 1] - y0) / stepy).astype(int)
                    ok = (iu >= 0) & (iv >= 0) & (iu < sw) & (iv < sh)
                    cells.append(np.where(ok, iv * sw + iu, -1))
            cell_lat = np.array(cells)
            poly = v.cell_polygon(n // 2, n // 2)
            cell_area = float(cv2.contourArea(poly.astype(np.float32))) / (stepx * stepy)
        else:
            cell_area = (40.0 * self.px_per_mm) ** 2
        inside_idx = np.nonzero(inside)[0]
        band_idx = np.nonzero(self._band(xy, w_mm, h_mm))[0]
        rim = inside & ((xy[:, 0] < RIM_MM) | (xy[:, 1] < RIM_MM)
                        | (xy[:, 0] > w_mm - RIM_MM) | (xy[:, 1] > h_mm - RIM_MM))
        self._geo = _Geometry(v.version, (x0, y0), (x1 - x0, y1 - y0), step, (sw, sh), inside.reshape(sh, sw),
                              basis[inside_idx], cell_lat, cell_area, inside_idx, band_idx, basis[band_idx],
                              rim.reshape(sh, sw))
        return self._geo

    def _band(self, xy: np.ndarray, w_mm: float, h_mm: float) -> np.ndarray:
        """Board-plane points (N,2) in the table band: beyond an edge of the marked area
        by BAND_GAP_MM to ``table_band_mm``, along the edge clear of the corner markers
        and their quiet zones (by BAND_GAP_MM too)."""
        B = self.table_band_mm
        if B <= BAND_GAP_MM:
            return np.zeros(len(xy), bool)
        q = self.view.kit.markers.quiet_zone_mm + BAND_GAP_MM
        x, y = xy[:, 0], xy[:, 1]
        along_x = (x > q) & (x < w_mm - q)
        along_y = (y > q) & (y < h_mm - q)
        beyond_y = ((y < -BAND_GAP_MM) & (y > -B)) | ((y > h_mm + BAND_GAP_MM) & (y < h_mm + B))
        beyond_x = ((x < -BAND_GAP_MM) & (x > -B)) | ((x > w_mm + BAND_GAP_MM) & (x < w_mm + B))
        return (along_x & beyond_y) | (along_y & beyond_x)

    def _small(self, frame: np.ndarray, g: _Geometry) -> np.ndarray:
        x0, y0 = g.origin
        crop = frame[y0:y0 + g.size[1], x0:x0 + g.size[0]]
        return cv2.resize(crop, g.small, interpolation=cv2.INTER_AREA).reshape(-1, 3)

    def _light(self, small: np.ndarray, idx: np.ndarray, basis: np.ndarray, balance: FrameBalance
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """At the low-res pixels ``idx``: chromaticity (N,2: r, g of (r, g, b) / sum) and
        its entry in the tables, and luminance over the light field (balanced linear light)."""
        # Channel by channel (numpy's loops then run over the pixels, not over three channels).
        bgr = np.take(LINEAR_LUT, np.take(small, idx, axis=0))
        gains = balance.gains.astype(np.float32)
        r, gr, b = bgr[:, 2] / gains[0], bgr[:, 1] / gains[1], bgr[:, 0] / gains[2]
        level = np.exp(basis @ balance.coef.astype(np.float32))
        total = r + gr + b
        lum = total / (3.0 * level)
        norm = np.maximum(total, 1e-6)
        chroma = np.column_stack([r / norm, gr / norm])
        q = self._lut.shape[0] - 1
        iu = np.clip((chroma[:, 0] * q + 0.5).astype(np.int32), 0, q)
        iv = np.clip((chroma[:, 1] * q + 0.5).astype(np.int32), 0, q)
        return chroma, iu * (q + 1) + iv, lum

    def _unexplained(self, small: np.ndarray, balance: FrameBalance, g: _Geometry) -> tuple[np.ndarray, np.ndarray]:
        """Low-res bool images: pixels no kit colour explains, and pixels that are not a
        board colour (nor a mix of two), before cleaning."""
        idx = g.inside_idx
        _, entry, lum = self._light(small, idx, g.basis, balance)
        lit = lum > self.dark
        tol2 = self.chroma_tol ** 2
        bad = np.zeros(g.small[0] * g.small[1], bool)
        bad_in = (np.take(self._lut, entry) > tol2) & lit
        bad[idx] = bad_in
        notboard = np.zeros(g.small[0] * g.small[1], bool)
        notboard[idx] = (np.take(self._lut_board, entry) > tol2) & lit
        shape = (g.small[1], g.small[0])
        if self.mix_width_px:
            # A mix of two board colours is only ever a thin band where two spaces (or
            # a block's edge and a space) meet; a region wide across that no single kit
            # colour explains is foreign (pale skin lies near a cream/pink mix).
            mix = np.zeros(g.small[0] * g.small[1], np.uint8)
            mix[idx] = (np.take(self._lut_unmixed, entry) > tol2) & lit & ~bad_in
            k = int(self.mix_width_px)
            wide = cv2.morphologyEx(mix.reshape(shape), cv2.MORPH_OPEN, np.ones((k, k), np.uint8)).astype(bool)
            bad = bad | wide.ravel()
            notboard = notboard | wide.ravel()
        return bad.reshape(shape), notboard.reshape(shape)

    def _table_foreign(self, small: np.ndarray, balance: FrameBalance, g: _Geometry) -> np.ndarray:
        """Low-res bool image: pixels of the table band (``table_band_mm``) that are
        neither the table nor any kit colour. The table is what most of the band shows
        (its median level, and chromaticity where it is lit; an arm covers a few spaces'
        length of a band that runs all round the board). A lit pixel is foreign when its
        chromaticity is off the table's by more than ``chroma_tol``, or when it is
        TABLE_BRIGHTER times as bright: a shadow only darkens the table, and a pale arm
        on a dark table is the same hue. Pieces (a far tower's top seen past the edge)
        are kit colours, and not foreign."""
        out = np.zeros(g.small[0] * g.small[1], bool)
        if len(g.band_idx) < BAND_MIN_PIXELS:
            return out.reshape(g.small[1], g.small[0])
        chroma, entry, lum = self._light(small, g.band_idx, g.band_basis, balance)
        lit = lum > self.dark
        # The table's level from all of the band: a dark table (dark blue, walnut in dim
        # light) is darker than ``dark`` all over, and its few lit pixels are what lies on it.
        table_lum = float(np.median(lum))
        off_table = lum > TABLE_BRIGHTER * max(table_lum, 1e-6)
        if table_lum > self.dark and lit.sum() >= BAND_MIN_PIXELS:  # its hue tells only where it is lit
            table_chroma = np.median(chroma[lit], axis=0)
            off_table |= ((chroma - table_chroma) ** 2).sum(axis=1) > self.chroma_tol ** 2
        out[g.band_idx] = lit & off_table & (np.take(self._lut, entry) > self.chroma_tol ** 2)
        return out.reshape(g.small[1], g.small[0])

    def detect(self, frame: np.ndarray, balance: FrameBalance) -> Hands:
        g = self._geometry(frame)
        small = self._small(frame, g)
        bad, notboard = self._unexplained(small, balance, g)
        # Regions that are not board colour: pieces (small) or hands (large). A region
        # is a hand when it is larger than any piece, or large enough and partly of no
        # kit colour at all (skin can be close to a brown figure or a chip, never all of it).
        m = cv2.morphologyEx(notboard.astype(np.uint8), cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
        count, labels, stats, _ = cv2.connectedComponentsWithStats(m, connectivity=8)
        keep = np.zeros(count, bool)
        min_px = self.min_area_cells * g.cell_area_px
        # Thin rings of mixed colour round a piece are not foreign: open them away.
        core = cv2.morphologyEx(bad.astype(np.uint8), cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
        if count > 1:
            foreign = np.bincount(labels.ravel()[core.ravel() > 0], minlength=count).astype(float)
            area = stats[:, cv2.CC_STAT_AREA].astype(float)
            keep = (area >= self.large_cells * g.cell_area_px) | ((area >= min_px) & (foreign >= 0.25 * area))
            keep[0] = False
        mask = keep[labels]
        # (Nothing of no kit colour where the board meets the table: no arm across the edge.)
        if len(g.band_idx) and np.any(core[g.rim]):
            mask |= self._over_the_edge(core, self._table_foreign(small, balance, g), g)
        area = float(mask.sum()) / max(g.cell_area_px, 1e-9)
        if mask.any():
            # A hand's soft edge and the fingers' thin gaps: grow the mask a little.
            k = max(int(self.grow_px), 1)
            mask = cv2.dilate(mask.astype(np.uint8), np.ones((k, k), np.uint8)).astype(bool)
        cover = None
        if g.cell_lat is not None:
            n = int(round(np.sqrt(len(g.cell_lat))))
            flat = mask.ravel()
            lat = g.cell_lat
            hit = np.where(lat >= 0, flat[np.clip(lat, 0, None)], False)
            cover = hit.mean(axis=1).reshape(n, n)
        return Hands(mask, g.origin, g.step, bool(mask.any()), cover, area)

    def _over_the_edge(self, over_board: np.ndarray, table_foreign: np.ndarray, g: _Geometry) -> np.ndarray:
        """Low-res bool image of the regions of no kit colour over the board
        (``over_board``, opened) joined to something foreign on the table beyond its
        edge (``table_foreign``) of at least BAND_MIN_CELLS: an arm resting across the
        edge. Over the board alone such a sliver may be no larger than a figure, and no
        surer of being no kit colour (figures are known by their nominal colours only);
        no piece covers that much table. (Something lying on the table by itself, a
        phone, is joined to nothing over the board.) The two parts are a few pixels
        apart (the board's edge is read by neither): they are joined across that gap."""
        beyond = cv2.morphologyEx(table_foreign.astype(np.uint8), cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
        if beyond.sum() < BAND_MIN_CELLS * g.cell_area_px:
            return np.zeros_like(table_foreign)
        both = (over_board > 0) | (beyond > 0)
        joined = cv2.dilate(both.astype(np.uint8), np.ones((5, 5), np.uint8))
        count, labels = cv2.connectedComponents(joined, connectivity=8)
        on_board = np.bincount(labels[over_board > 0], minlength=count)
        on_table = np.bincount(labels[beyond > 0], minlength=count)
        arm = (on_board > 0) & (on_table >= BAND_MIN_CELLS * g.cell_area_px)
        arm[0] = False
        return arm[labels] & both
