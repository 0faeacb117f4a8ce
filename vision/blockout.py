"""Block Out! stack from the camera: how many blocks stand on the base, which, bottom to top.

The referee uses this to confirm a fall (issue 10: "where the camera watches the stack,
confirm a fall by the stack's height"): a stack that fell is shorter, or gone.

How it reads the stack (analysis by synthesis, geometry from the kit and the pose):

* Every pixel around the base is labelled (``other``, ``base`` or one of the kit's block
  colours) in linear light balanced twice: against the markers' paper (the survey's white
  balance and light field, :mod:`vision.colours`) and then against the base's own top
  face, measured on its corners in every frame (a neutral reference right beside the
  blocks; the paper is printed with its own drift). The base's nominal colour is not in
  kit.json nor in the survey: :data:`BASE_RGB` (a kit ``blockout.base_rgb`` entry wins).
  Chromatic blocks are matched by chromaticity to the survey's piece references, with
  their weakest channel kept near zero (skin and wood are near yellow in hue, never in
  saturation); black by luminance against the base's top face. The table's colour is
  measured on a ring around the base in every frame and counts as ``other``.
* For every height hypothesis ``n`` = 0..9 the stack is fitted from the top down: the top
  block is fully visible, so its box (25 mm tall lying down, on top of ``n - 1`` blocks and
  the base, long axis along x for even levels and along y for odd ones, the kit's
  three lengths, small offsets and turns) is projected with the board pose and its
  silhouette (top face and the side faces towards the camera) matched to the labels;
  each block below is matched on what the blocks above leave visible. Each block's colour
  is the label that fills its silhouette best among the (colour, size) pieces not used
  above it (the kit has one block of each).
* Each hypothesis is rendered as a label image (base, then the blocks bottom up, nearer
  blocks hiding farther ones) and compared pixel by pixel with the observed labels; the
  height is the hypothesis with the lowest cost. A wrong height puts the top face at
  the wrong height: it projects bigger or smaller and shifted (the scale and parallax of
  25 mm), and it leaves the side faces' colour bands (one per level) unexplained.

Hands: pixels of no kit colour and not the table over the base's top face, or the base's
corners no longer the base's colour (a hand or an arm between camera and stack), make the
stack ``occluded`` (``["stack"]``, as the truth of observation.md): then nothing is guessed
(``state.stack`` is ``[]`` and the frame is not stable). A hand anywhere else over the play
area (a lit blob of neither the table's colour nor glare) keeps the frame from being
stable but does not hide the stack. Stability: :class:`vision.motion.StabilityGate`.

Extra fields (documented additions to observation.md's ``blockout`` state):
``state.height_blocks`` (the number of blocks, ``null`` when occluded) and
``state.block_confidence`` (one number 0..1 per block, bottom to top). The observation's
``confidence`` is the height's confidence: the posterior of the chosen height among all
heights, times how much of the chromatic block pixels the chosen stack explains (a stack
the model cannot draw is no sure reading; from 1 at :data:`EXPLAINED_FULL` to 0 at
:data:`EXPLAINED_MIN`), times the pose confidence. The Block Out! referee acts on views
of confidence >= 0.8 only.

Accuracy needs the lens calibrated (``bloxcam calibrate`` with ChArUco frames): the
stack's top stands up to 245 mm above the table, where a default lens's focal length and
principal point errors move it by more than a block.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from vision.board import BoardLost, BoardView, sample
from vision.cards import paper_points
from vision.colours import LINEAR_LUT, ColourModel, bgr_to_linear, confidence_from_costs
from vision.motion import StabilityGate

from calibration.colour import srgb_to_linear

MAX_BLOCKS = 9
# Where the base's top face is sampled (mm from its centre, along both axes): outside
# any block lying on it (75 mm long, turned 4 degrees, offset 4 mm reaches ~45 mm).
BASE_CORNER_MM = (50.0, 56.0)
CHROMA_TOL = 0.22  # chromaticity distance (r, g, b over their sum) to a reference
WEAK_CHANNEL_TOL = 0.075  # how far a saturated colour's weakest channel fraction may rise
# the confidence falls from 1 to 0 as the chosen stack explains from EXPLAINED_FULL to
# EXPLAINED_MIN of the block-coloured pixels
EXPLAINED_FULL, EXPLAINED_MIN = 0.9, 0.75
MISMATCH_WEIGHT = 3.0  # a block candidate: pixels of its colour minus this times the others it covers
# The base's nominal sRGB colour (a dark neutral grey, as calibration.render draws it);
# kit.json has no entry for it yet.
BASE_RGB = (90, 90, 95)
BASE_CHROMA_TOL = 0.1  # a base corner further than this from the base's colour is covered (a hand)
OCCLUDED_FRACTION = 0.06  # foreign pixels over the base's top face that mean a hand
# The search grid of a block's offset from the base centre and its turn: steps and the
# number of steps either side (a coarse start, then a climb on the grid).
GRID_STEP_MM = 0.75
GRID_STEP_DEG = 1.0
GRID_RANGE = (8, 5)  # +-6 mm, +-5 degrees
SHADE_SIGMA = 0.12  # spread of log luminance within a lit face (noise, texture)
SHADE_WEIGHT = 1.0  # weight of the shading term against the label term
TARGET_PPMM = 1.2  # the region around the stack is looked at with about this many px per mm
TABLE_STEP_MM = 6.0  # probe spacing over the play area's table (hands away from the stack)
SHADOW_FRACTION = 0.6  # table probes darker than this fraction of the table are shade, not hands
HAND_MIN_MM2 = 2500.0  # a blob of foreign colour this large over the table is a hand or an arm
# Labels.
OTHER, BASE = 0, 1


@dataclass
class Block:
    color: str
    size: str
    dx: float
    dy: float
    turn: float
    visible_px: int
    fill: float  # fraction of its visible silhouette in its colour
    hull: np.ndarray  # ROI pixel polygon (subpixel units, shift 2)
    faces: list[tuple[int, np.ndarray]]  # (face class, ROI polygon) of the faces towards the camera


@dataclass
class Hypothesis:
    blocks: list[Block]
    cost: float


def _rot(a_deg: float) -> np.ndarray:
    a = np.radians(a_deg)
    return np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])


def box_corners(cx: float, cy: float, length: float, width: float, turn_deg: float, z0: float,
                z1: float) -> np.ndarray:
    """The 8 corners (board mm) of a box lying between heights z0 and z1 (z down)."""
    half = np.array([[-length / 2, -width / 2], [length / 2, -width / 2], [length / 2, width / 2],
                     [-length / 2, width / 2]])
    xy = half @ _rot(turn_deg).T + [cx, cy]
    return np.concatenate([np.column_stack([xy, np.full(4, z0)]), np.column_stack([xy, np.full(4, z1)])])


class Recognizer:
    """Block Out! stack from frames (see the module docstring)."""

    game = "blockout"

    def __init__(self, calibration: Any, *, stable_seconds: float = 1.0, edition: Any = None,
                 chroma_tol: float = CHROMA_TOL, occluded_fraction: float = OCCLUDED_FRACTION,
                 base_rgb: tuple[float, float, float] | None = None) -> None:
        self.calibration = calibration
        self.kit = calibration.kit
        u = self.kit.blockout
        self.view = BoardView(calibration, "blockout")
        self.gate = StabilityGate(stable_seconds)
        self.colours = ColourModel(calibration.survey)
        self.chroma_tol = chroma_tol
        self.occluded_fraction = occluded_fraction
        w, h = u.play_area_mm
        self.centre = (w / 2.0, h / 2.0)
        self.base_mm = float(u.base_mm)
        self.base_h = float(u.base_height_mm)
        # the base's colour is not in kit.json (nor in the survey): a kit entry wins
        raw = ((getattr(self.kit, "raw", None) or {}).get("blockout") or {})
        base_rgb = base_rgb or tuple(raw.get("base_rgb", BASE_RGB))
        self.sizes = {name: (float(v[0]), float(v[1]), float(v[2])) for name, v in u.sizes.items()}
        self.block_h = max(v[1] for v in self.sizes.values())
        self.colour_names = list(u.colors)
        self.size_names = list(self.sizes)
        refs = []
        for name in self.colour_names:
            lin = self.colours.ref_lin.get(name)
            if lin is None:
                lin = srgb_to_linear(np.array(u.colors[name], float))
            refs.append(np.asarray(lin, float))
        self.ref_lin = np.array(refs)
        chroma = self.ref_lin / self.ref_lin.sum(axis=1, keepdims=True)
        # Colours close to grey (black) carry no hue: told from the base by luminance.
        self.achromatic = np.linalg.norm(chroma - 1 / 3, axis=1) < 0.1
        self.ref_chroma = chroma
        self.ref_lum = self.ref_lin.mean(axis=1)
        self.base_nominal = srgb_to_linear(np.array(base_rgb, float))
        self._paper = np.concatenate(paper_points(self.kit, "blockout"))
        self._paper_lin = srgb_to_linear(np.array((240, 240, 236), float))
        self._geo_version = -1
        self._geo: dict[str, Any] = {}
        self.last: dict[str, Any] = {}
        self._last_frame: np.ndarray | None = None
        self._last_version = -1

    # ---------------------------------------------------------------- geometry
    def _geometry(self, frame: np.ndarray) -> dict[str, Any]:
        if self._geo_version == self.view.version and self._geo:
            return self._geo
        cx, cy = self.centre
        q = self.base_mm / 2
        top = -(self.base_h + MAX_BLOCKS * self.block_h + 5)
        longest = max(v[2] for v in self.sizes.values())
        r = max(q, longest / 2 + 8) + 4
        col = np.array([[cx + sx * r, cy + sy * r, z] for sx in (-1, 1) for sy in (-1, 1) for z in (0.0, top)])
        px = self.view.project(col)
        H, W = frame.shape[:2]
        x0, y0 = np.floor(px.min(axis=0)).astype(int) - 4
        x1, y1 = np.ceil(px.max(axis=0)).astype(int) + 5
        x0, y0, x1, y1 = max(int(x0), 0), max(int(y0), 0), min(int(x1), W), min(int(y1), H)
        origin = np.array([x0, y0], float)
        # px per mm at the base: the region is scaled to about TARGET_PPMM (less work,
        # and the averaging takes the sensor noise down)
        p = self.view.project(np.array([[cx, cy, -self.base_h], [cx + 25, cy, -self.base_h]]))
        ppmm = float(np.linalg.norm(p[1] - p[0])) / 25
        s = min(1.0, TARGET_PPMM / max(ppmm, 1e-6))
        shape = (max(8, int(round((y1 - y0) * s))), max(8, int(round((x1 - x0) * s))))
        sx_, sy_ = shape[1] / (x1 - x0), shape[0] / (y1 - y0)
        s = 0.5 * (sx_ + sy_)
        base = box_corners(cx, cy, self.base_mm, self.base_mm, 0.0, 0.0, -self.base_h)
        base_hull = self._hull(self._to_roi(self.view.project(base), origin, s))
        base_top = self._to_roi(self.view.project(base[4:]), origin, s)
        a, b = BASE_CORNER_MM
        f = np.linspace(a, b, 3)
        corners = []
        for sx in (-1, 1):
            for sy in (-1, 1):
                corners.append(np.array([[cx + sx * u, cy + sy * v, -self.base_h] for u in f for v in f]))
        ang = np.linspace(0, 2 * np.pi, 48, endpoint=False)
        ring = np.concatenate([np.column_stack([cx + rr * np.cos(ang), cy + rr * np.sin(ang), np.zeros_like(ang)])
                               for rr in (q + 15, q + 30)])
        top_mask = np.zeros(shape, np.uint8)
        cv2.fillConvexPoly(top_mask, np.round(base_top * 4).astype(np.int32), 1, cv2.LINE_8, 2)
        # the table of the play area away from the stack: hands anywhere over it
        w_mm, h_mm = self.kit.area_mm("blockout")
        g = np.arange(TABLE_STEP_MM / 2, w_mm, TABLE_STEP_MM)
        gy = np.arange(TABLE_STEP_MM / 2, h_mm, TABLE_STEP_MM)
        tx, ty = np.meshgrid(g, gy)
        tpts = np.column_stack([tx.ravel(), ty.ravel()])
        tpx = self.view.project(tpts)
        column = cv2.convexHull(np.round(px).astype(np.float32))
        inside = np.array([cv2.pointPolygonTest(column, (float(a), float(b_)), False) >= 0 for a, b_ in tpx])
        on = ~inside & (tpx[:, 0] >= 0) & (tpx[:, 1] >= 0) & (tpx[:, 0] < W - 1) & (tpx[:, 1] < H - 1)
        self._geo = {"roi": (x0, y0, x1, y1), "origin": origin,
                     "table_mm": tpts, "table_px": tpx, "table_on": on.reshape(tx.shape), "scale": s,
                     "shape": shape, "base_hull": base_hull,
                     "top_mask": top_mask > 0, "corners": [self.view.project(c) for c in corners],
                     "ring": self.view.project(ring), "ring_mm": ring[:, :2], "ppmm": ppmm * s,
                     "paper_px": self.view.project(self._paper)}
        self._geo_version = self.view.version
        return self._geo

    @staticmethod
    def _to_roi(px: np.ndarray, origin: np.ndarray, s: float) -> np.ndarray:
        """Frame pixels -> pixels of the scaled region (pixel centres at integers)."""
        return (np.asarray(px) - origin + 0.5) * s - 0.5

    @staticmethod
    def _hull(px: np.ndarray) -> np.ndarray:
        return cv2.convexHull(np.round(np.asarray(px) * 4).astype(np.int32))

    # ------------------------------------------------------------------ labels
    def _balance(self, frame: np.ndarray, geo: dict[str, Any]):
        vals = sample(frame, geo["paper_px"])
        ok = ~np.isnan(vals).any(axis=1)
        obs = bgr_to_linear(vals[ok])
        exp_ = np.tile(self._paper_lin, (int(ok.sum()), 1))
        return self.colours.balance(obs, exp_, self._paper[ok])

    def labels(self, frame: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        """Per-pixel labels of the region around the stack (0 other, 1 base, 2+k colour k)."""
        geo = self._geometry(frame)
        x0, y0, x1, y1 = geo["roi"]
        bal = self._balance(frame, geo)
        level = float(bal.field(np.array([self.centre]))[0])
        scale = (1.0 / (bal.gains * level)).astype(np.float32)[::-1]  # BGR order

        def at(px: np.ndarray) -> np.ndarray:
            v = sample(frame, px)
            ok = ~np.isnan(v).any(axis=1)
            return bgr_to_linear(v[ok]) * (1.0 / (bal.gains * level))[None, :]

        # The base's top face (the corners most like the others: a tall stack seen from
        # the side may hide one) is the neutral reference right beside the blocks: the
        # markers' paper is printed with its own drift, the base is not.
        cm = np.array([np.median(at(c), axis=0) for c in geo["corners"]])
        nominal_chroma = self.base_nominal / self.base_nominal.sum()
        good = np.linalg.norm(cm / np.maximum(cm.sum(axis=1, keepdims=True), 1e-6) - nominal_chroma, axis=1) \
            < BASE_CHROMA_TOL
        base_seen = int(good.sum())
        base_lin = np.median(cm[good] if base_seen else cm, axis=0)
        g2 = self.base_nominal / np.maximum(base_lin, 1e-6)
        g2 = g2 / np.exp(np.mean(np.log(g2)))  # colour only: the level stays measured
        base_lin = base_lin * g2
        base_lum = float(base_lin.mean())
        base_chroma = base_lin / max(base_lin.sum(), 1e-6)
        ring = at(geo["ring"]) * g2[None, :]
        table_lin = np.median(ring, axis=0)
        table_chroma = table_lin / max(table_lin.sum(), 1e-6)
        table_lum = float(table_lin.mean())
        roi = frame[y0:y1, x0:x1]
        lin = cv2.LUT(roi, np.ascontiguousarray(np.repeat(LINEAR_LUT[:, None], 3, axis=1)).reshape(1, 256, 3))
        lin = lin * (scale * g2[::-1].astype(np.float32))[None, None, :]
        if geo["scale"] < 0.95:
            lin = cv2.resize(lin, geo["shape"][::-1], interpolation=cv2.INTER_AREA)
        else:
            lin = cv2.resize(cv2.blur(lin, (3, 3)), geo["shape"][::-1], interpolation=cv2.INTER_LINEAR)
        total = lin.sum(axis=2) + 1e-6
        chrom = lin / total[..., None]  # b, g, r order
        lum = total / 3.0
        info: dict[str, Any] = {"hand_mm2": self._table_hand(frame, geo, bal), "balance_inliers": bal.inliers,
                                "loglum": np.log(lum + 1e-3).astype(np.float32), "base_gains": g2,
                                "base_lum": base_lum, "table_lum": table_lum, "base_corners_seen": base_seen}
        # prototypes in chromaticity (RGB order -> BGR for the image)
        protos = [self.ref_chroma[i][::-1] for i in range(len(self.colour_names)) if not self.achromatic[i]]
        proto_lab = [2 + i for i in range(len(self.colour_names)) if not self.achromatic[i]]
        protos.append(base_chroma[::-1])
        proto_lab.append(-1)  # achromatic: decided by luminance below
        tdist = min([float(np.linalg.norm(table_chroma - c)) for c in
                     [self.ref_chroma[i] for i in range(len(self.colour_names))] + [base_chroma]])
        if tdist > 0.05:
            protos.append(table_chroma[::-1])
            proto_lab.append(OTHER)
        P = np.array(protos, np.float32)
        d = np.sqrt(((chrom[:, :, None, :] - P[None, None]) ** 2).sum(axis=3))
        j = np.argmin(d, axis=2)
        dmin = np.take_along_axis(d, j[..., None], axis=2)[..., 0]
        lab = np.array(proto_lab, np.int16)[j]
        # Very dark pixels have no reliable chromaticity: they are black (or shadow).
        dark_idx = [2 + i for i in range(len(self.colour_names)) if self.achromatic[i]]
        dark_ref = float(self.ref_lum[self.achromatic].mean()) if self.achromatic.any() else 0.0
        out = np.full(lab.shape, OTHER, np.uint8)
        chromatic = (lab >= 2) & (dmin < self.chroma_tol)
        # A saturated print keeps its weakest channel near zero under any light, print
        # drift or clipping of the strong channels; skin and wood, near in hue, do not.
        for i in range(len(self.colour_names)):
            if not self.achromatic[i]:
                w = int(np.argmin(self.ref_chroma[i]))
                chromatic &= ~((lab == 2 + i) & (chrom[..., 2 - w] > self.ref_chroma[i][w] + WEAK_CHANNEL_TOL))
        out[chromatic] = lab[chromatic]
        neutral = (lab == -1) & (dmin < self.chroma_tol)
        if dark_idx:
            # geometric middle between the black reference and the base's top face;
            # below it a pixel is black unless it is a dark table's own colour (the
            # chromaticity of a dark pixel is noisy, so a light table never claims it)
            thr = float(np.sqrt(max(dark_ref, 1e-4) * max(base_lum, 1e-4)))
            dark = (lum < thr) & ~chromatic
            if table_lum < 1.5 * thr:
                dark &= ~(lab == OTHER)
            out[dark] = dark_idx[0]
            out[neutral & ~dark & (lum >= thr)] = BASE
        else:
            out[neutral] = BASE
        return out, info

    def _table_hand(self, frame: np.ndarray, geo: dict[str, Any], bal: Any) -> float:
        """Area (mm^2) of the largest blob over the play area's table (away from the
        stack) that is neither the table's colour, its shade, nor a whitish glare."""
        on = geo["table_on"]
        if not on.any():
            return 0.0
        v = sample(frame, geo["table_px"])
        lin = bal.normalise(bgr_to_linear(np.nan_to_num(v)), geo["table_mm"])
        tot = lin.sum(axis=1) + 1e-6
        chrom = lin / tot[:, None]
        sel = on.ravel()
        ref = np.median(chrom[sel], axis=0)
        d_tab = np.linalg.norm(chrom - ref, axis=1)
        # glare: the table's colour washed towards white (its chromaticity on the segment
        # from the table's to grey's)
        grey = np.full(3, 1 / 3)
        seg = grey - ref
        tpar = np.clip(((chrom - ref) @ seg) / max(float(seg @ seg), 1e-9), 0.0, 1.0)
        d_grey = np.linalg.norm(chrom - (ref + tpar[:, None] * seg[None, :]), axis=1)
        # shade (the stack's own shadow) has no reliable colour; a hand is lit, above the table
        lit = tot > SHADOW_FRACTION * float(np.median(tot[sel]))
        foreign = (d_tab > 0.07) & (d_grey > 0.05) & lit & sel
        m = foreign.reshape(on.shape).astype(np.uint8)
        if not m.any():
            return 0.0
        _n, _lab, stats, _c = cv2.connectedComponentsWithStats(m, connectivity=8)
        return float(stats[1:, cv2.CC_STAT_AREA].max()) * TABLE_STEP_MM ** 2

    # -------------------------------------------------------------- hypotheses
    def _level(self, geo: dict[str, Any], k: int) -> dict[str, Any]:
        """Level ``k``'s candidate boxes on the search grid, computed when first asked for
        and kept with the geometry (they depend on the pose only)."""
        levels = geo.setdefault("levels", {})
        if k not in levels:
            levels[k] = {"z0": -(self.base_h + k * self.block_h), "axis": 0.0 if k % 2 == 0 else 90.0, "cand": {}}
        return levels[k]

    def _candidate(self, geo: dict[str, Any], lv: dict[str, Any], key: tuple[int, int, int, int]) -> dict[str, Any]:
        c = lv["cand"].get(key)
        if c is not None:
            return c
        si, ix, iy, it = key
        cx, cy = self.centre
        H, W = geo["shape"]
        w_, _h, l_ = self.sizes[self.size_names[si]]
        z0 = lv["z0"]
        pts = box_corners(cx + ix * GRID_STEP_MM, cy + iy * GRID_STEP_MM, l_, w_, lv["axis"] + it * GRID_STEP_DEG,
                          z0, z0 - self.block_h)
        p = self._to_roi(self.view.project(pts), geo["origin"], geo["scale"])
        hull = self._hull(p)
        bx0, by0 = np.floor(p.min(axis=0)).astype(int)
        bx1, by1 = np.ceil(p.max(axis=0)).astype(int) + 1
        bx0, by0, bx1, by1 = max(bx0, 0), max(by0, 0), min(bx1, W), min(by1, H)
        if bx1 <= bx0 or by1 <= by0:
            idx = np.zeros(0, np.int32)
        else:
            m = np.zeros((by1 - by0, bx1 - bx0), np.uint8)
            cv2.fillConvexPoly(m, hull - np.array([bx0 * 4, by0 * 4], np.int32), 1, cv2.LINE_8, 2)
            iy_, ix_ = np.nonzero(m)
            idx = ((iy_ + by0) * W + ix_ + bx0).astype(np.int32)
        c = {"idx": idx, "hull": hull, "pts": pts, "px": p}
        lv["cand"][key] = c
        return c

    def _fit(self, labels: np.ndarray, n: int, geo: dict[str, Any]) -> Hypothesis:
        """Fit ``n`` blocks from the top down (see the module docstring)."""
        K = 2 + len(self.colour_names)
        # pixels hidden by the blocks placed above get the extra label K
        flat = labels.ravel().copy()
        used: set[tuple[str, str]] = set()
        blocks: list[Block] = []
        K = 2 + len(self.colour_names)
        mx, mt = GRID_RANGE
        for k in range(n - 1, -1, -1):
            lv = self._level(geo, k)
            memo: dict[tuple[int, int, int, int], tuple[float, str | None, int, float]] = {}

            def evaluate(key: tuple[int, int, int, int]) -> tuple[float, str | None, int, float]:
                if key in memo:
                    return memo[key]
                idx = self._candidate(geo, lv, key)["idx"]
                counts = np.bincount(flat[idx], minlength=K + 1)[:K]
                vis = int(counts.sum())
                s = self.size_names[key[0]]
                cb, sb = None, -1e18
                for j, cname in enumerate(self.colour_names):
                    if (cname, s) in used:
                        continue
                    sc = counts[2 + j] - MISMATCH_WEIGHT * (vis - counts[2 + j])
                    if sc > sb:
                        cb, sb = cname, sc
                fill = counts[2 + self.colour_names.index(cb)] / max(vis, 1) if cb else 0.0
                memo[key] = (sb, cb, vis, float(fill))
                return memo[key]

            cx_ = [a * (mx // 2) for a in (-1, 0, 1)]
            start = [(si, ix, iy, 0) for si in range(len(self.size_names)) for ix in cx_ for iy in cx_]
            best = max(start, key=lambda c: evaluate(c)[0])
            for step in (2, 1):  # climb on the grid, one coordinate at a time, coarse then fine
                for _ in range(8):
                    si, ix, iy, it = best
                    nb = [(si, ix + a, iy + b, it + c) for a, b, c in
                          ((step, 0, 0), (-step, 0, 0), (0, step, 0), (0, -step, 0), (0, 0, step), (0, 0, -step))
                          if abs(ix + a) <= mx and abs(iy + b) <= mx and abs(it + c) <= mt]
                    nxt = max(nb, key=lambda c: evaluate(c)[0])
                    if evaluate(nxt)[0] <= evaluate(best)[0]:
                        break
                    best = nxt
            sc, colour, vis, fill = evaluate(best)
            if colour is None:
                break
            cand = self._candidate(geo, lv, best)
            si, ix, iy, it = best
            b = Block(colour, self.size_names[si], ix * GRID_STEP_MM, iy * GRID_STEP_MM, it * GRID_STEP_DEG, vis, fill,
                      cand["hull"], self._faces(cand["pts"], cand["px"]))
            blocks.append(b)
            used.add((b.color, b.size))
            flat[cand["idx"]] = K
        blocks.reverse()
        return Hypothesis(blocks, 0.0)

    def _faces(self, pts: np.ndarray, px: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """The faces of a box (corners ``pts`` in mm, ``px`` in ROI pixels) that face the
        camera, with their class: 1 top, 2..5 sides facing +x, -x, +y, -y."""
        cam = self.view.camera_position()
        faces = [(1, np.round(px[4:] * 4).astype(np.int32))]
        for i in range(4):
            j = (i + 1) % 4
            mid = 0.5 * (pts[i, :2] + pts[j, :2])
            centre = pts[:4, :2].mean(axis=0)
            nrm = mid - centre
            if float(np.dot(nrm, cam[:2] - mid)) <= 0:
                continue
            cls = (2 if nrm[0] > 0 else 3) if abs(nrm[0]) >= abs(nrm[1]) else (4 if nrm[1] > 0 else 5)
            faces.append((cls, np.round(px[[i, j, 4 + j, 4 + i]] * 4).astype(np.int32)))
        return faces

    def _shading_cost(self, hyp: Hypothesis, pred: np.ndarray, labels: np.ndarray, loglum: np.ndarray) -> float:
        """Faces of one colour and one orientation are lit alike: the spread of the
        luminance within each such group, as the hypothesis draws the faces. A block
        hidden in the same colour below (or a block imagined on top of one) draws
        face boundaries where the light does not change, or misses them where it does."""
        faces = np.zeros(pred.shape, np.uint8)
        ident = np.zeros(pred.shape, np.uint8)
        for i, b in enumerate(hyp.blocks):
            for cls, poly in b.faces:
                cv2.fillConvexPoly(faces, poly, cls, cv2.LINE_8, 2)
                cv2.fillConvexPoly(ident, poly, 1 + (i * 6 + cls) % 250, cv2.LINE_8, 2)
        # a pixel off a face's edge is mixed light (and the fit is good to a pixel)
        k3 = np.ones((3, 3), np.uint8)
        edge = cv2.dilate(ident, k3) != cv2.erode(ident, k3)
        ok = (pred >= 2) & (pred == labels) & (faces > 0) & ~edge
        for i, dark in enumerate(self.achromatic):
            if dark:  # a dark face's luminance is mostly noise
                ok &= pred != 2 + i
        if not ok.any():
            return 0.0
        # log luminance = the colour's albedo + the face orientation's light: the light
        # on a face orientation is shared by every colour, so a face imagined where
        # another face is seen cannot bring its own light level with it
        col = pred[ok].astype(np.int32) - 2
        fc = faces[ok].astype(np.int32)
        x = loglum[ok].astype(np.float64)
        nc, nf = len(self.colour_names), 6
        a = np.zeros(nc)
        b = np.zeros(nf)
        cnt_c = np.maximum(np.bincount(col, minlength=nc), 1)
        cnt_f = np.maximum(np.bincount(fc, minlength=nf), 1)
        for _ in range(3):
            a = np.bincount(col, weights=x - b[fc], minlength=nc) / cnt_c
            b = np.bincount(fc, weights=x - a[col], minlength=nf) / cnt_f
        r2 = (x - a[col] - b[fc]) ** 2 / SHADE_SIGMA ** 2
        return float(np.minimum(r2, 1.0).sum())

    def render(self, hyp: Hypothesis, shape: tuple[int, int], geo: dict[str, Any]) -> np.ndarray:
        """The label image a hypothesis predicts."""
        pred = np.full(shape, OTHER, np.uint8)
        cv2.fillConvexPoly(pred, geo["base_hull"], BASE, cv2.LINE_8, 2)
        for b in hyp.blocks:
            cv2.fillConvexPoly(pred, b.hull, 2 + self.colour_names.index(b.color), cv2.LINE_8, 2)
        return pred

    def _cost_matrix(self) -> np.ndarray:
        K = 2 + len(self.colour_names)
        C = np.ones((K, K), np.float32)
        np.fill_diagonal(C, 0.0)
        for i, dark in enumerate(self.achromatic):
            if dark:
                C[OTHER, 2 + i] = 0.5  # shadows on the table
                C[BASE, 2 + i] = 0.5  # the base's sides in shade
        C[OTHER, BASE] = 0.6
        return C

    def read(self, frame: np.ndarray) -> dict[str, Any]:
        """Labels, every hypothesis and the chosen one (for tests and the overlay)."""
        geo = self._geometry(frame)
        labels, info = self.labels(frame)
        shape = labels.shape
        C = self._cost_matrix()
        hyps = []
        costs = []
        for n in range(MAX_BLOCKS + 1):
            hyp = self._fit(labels, n, geo)
            if len(hyp.blocks) != n:
                break
            pred = self.render(hyp, shape, geo)
            hyp.cost = (float(C[pred, labels].sum())
                        + SHADE_WEIGHT * self._shading_cost(hyp, pred, labels, info["loglum"]))
            hyps.append(hyp)
            costs.append(hyp.cost)
        costs_a = np.array(costs)
        best = int(np.argmin(costs_a))
        # how much of what looks like blocks the chosen stack explains: a stack the
        # model cannot draw (a bad fit) is not a sure reading, whatever its rivals cost
        pred = self.render(hyps[best], shape, geo)
        # (the chromatic colours only: black is also what shadows and dark tables look like)
        blockish = np.isin(labels, [2 + i for i in range(len(self.colour_names)) if not self.achromatic[i]])
        enough = blockish.sum() >= 0.3 * (25 * geo["ppmm"]) ** 2
        explained = float(np.mean(pred[blockish] == labels[blockish])) if enough else 1.0
        # temperature: a quarter of a block's top face in pixels
        temp = 0.25 * (25 * geo["ppmm"]) ** 2
        conf = float(confidence_from_costs(costs_a, temp))
        # a hand is a blob, not the thin mixed edges between faces (blur, defocus)
        k = max(3, int(round(4 * geo["ppmm"])) | 1)
        blob = cv2.morphologyEx((labels == OTHER).astype(np.uint8), cv2.MORPH_OPEN, np.ones((k, k), np.uint8))
        foreign = float(np.mean(blob[geo["top_mask"]])) if geo["top_mask"].any() else 0.0
        conf *= float(np.clip((explained - EXPLAINED_MIN) / (EXPLAINED_FULL - EXPLAINED_MIN), 0.0, 1.0))
        return {"labels": labels, "hypotheses": hyps, "costs": costs, "best": best, "confidence": conf,
                "explained": explained,
                "foreign": foreign, "geo": geo, **info}

    # ------------------------------------------------------------------ public
    def process(self, frame_bgr: np.ndarray, t: float, index: int, lores: np.ndarray | None = None) -> dict:
        obs: dict[str, Any] = {"game": "blockout", "frame": int(index), "t": round(float(t), 4), "stable": False,
                               "occluded": [], "confidence": 0.0,
                               "state": {"stack": [], "height_blocks": None, "block_confidence": []}}
        self.view.update(frame_bgr)
        try:
            # the very same picture again (a replayed still, a repeated frame): same reading
            same = (self._last_frame is not None and self._last_version == self.view.version
                    and self._last_frame.shape == frame_bgr.shape and np.array_equal(self._last_frame, frame_bgr))
            r = self.last if same else self.read(frame_bgr)
        except BoardLost:
            self.gate.update(frame_bgr, t, blocked=True, lores=lores)
            obs["error"] = "board markers not found"
            return obs
        self.last = r
        self._last_frame = frame_bgr.copy()
        self._last_version = self.view.version
        # a hand over the stack: foreign colour over the base, or the base's corners hidden
        occluded = r["foreign"] > self.occluded_fraction or r.get("base_corners_seen", 4) < 2
        hand = occluded or r.get("hand_mm2", 0.0) >= HAND_MIN_MM2
        motion = self.gate.update(frame_bgr, t, blocked=hand or self.view.confidence == 0, lores=lores)
        if occluded:
            obs["occluded"] = ["stack"]
            return obs
        hyp = r["hypotheses"][r["best"]]
        stack = [{"color": b.color, "size": b.size} for b in hyp.blocks]
        # a block's confidence: how well its colour fills what is seen of it, and how much is seen
        face = 0.2 * (25 * r["geo"]["ppmm"]) ** 2
        bconf = [round(float(np.clip(b.fill, 0, 1)) * min(1.0, b.visible_px / max(1.0, face)), 3) for b in hyp.blocks]
        obs["stable"] = bool(motion.stable)
        obs["state"] = {"stack": stack, "height_blocks": len(stack), "block_confidence": bconf}
        obs["confidence"] = round(float(r["confidence"] * self.view.confidence), 4)
        return obs

    def overlay(self, frame_bgr: np.ndarray, observation: dict) -> np.ndarray:
        out = frame_bgr.copy()
        if self.view.pose is None or not self._geo:
            return out
        geo = self._geo
        o, s = geo["origin"] * 4, geo["scale"]

        def frame_poly(hull: np.ndarray) -> np.ndarray:
            return np.round((hull.reshape(-1, 2) / 4 + 0.5) / s * 4 - 2 + o).astype(np.int32)

        if observation.get("occluded"):
            cv2.polylines(out, [frame_poly(geo["base_hull"])], True, (0, 0, 255), 2, cv2.LINE_AA, 2)
            return out
        cv2.polylines(out, [frame_poly(geo["base_hull"])], True, (200, 200, 200), 1, cv2.LINE_AA, 2)
        r = self.last
        hyps = r.get("hypotheses") or []
        n = observation.get("state", {}).get("height_blocks")
        if n is not None and n < len(hyps):
            for b in hyps[n].blocks:
                cv2.polylines(out, [frame_poly(b.hull)], True, (0, 255, 0), 1, cv2.LINE_AA, 2)
        x0, y0 = int(geo["origin"][0]), int(geo["origin"][1])
        cv2.putText(out, f"{n} blocks", (x0, max(12, y0 - 4)), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (255, 255, 255), 1,
                    cv2.LINE_AA)
        return out


def score(truth: dict, observed: dict) -> dict[str, tuple[int, int]]:
    """Metrics for ``bloxcam evaluate``: (errors, total) each.

    * ``stack_height``: the number of blocks wrong, over frames whose stack is visible in
      the truth and not reported occluded (what confirms a fall);
    * ``block_color`` / ``block_size``: per level of the true stack, read wrong (a
      missing level counts as wrong), over the same frames;
    * ``stack_hidden``: visible stacks reported occluded (caution, not an error of reading);
    * ``occlusion_missed``: truth-occluded stacks not reported occluded."""
    t_occ = "stack" in (truth.get("occluded") or [])
    o_occ = "stack" in (observed.get("occluded") or [])
    ts = (truth.get("state") or {}).get("stack") or []
    os_ = (observed.get("state") or {}).get("stack") or []
    out = {"stack_height": (0, 0), "block_color": (0, 0), "block_size": (0, 0), "stack_hidden": (0, 0),
           "occlusion_missed": (0, 0)}
    if t_occ:
        out["occlusion_missed"] = (int(not o_occ), 1)
        return out
    out["stack_hidden"] = (int(o_occ), 1)
    if o_occ:
        return out
    out["stack_height"] = (int(len(ts) != len(os_)), 1)
    ce = sum(1 for i, b in enumerate(ts) if i >= len(os_) or os_[i].get("color") != b.get("color"))
    se = sum(1 for i, b in enumerate(ts) if i >= len(os_) or os_[i].get("size") != b.get("size"))
    out["block_color"] = (ce, len(ts))
    out["block_size"] = (se, len(ts))
    return out
