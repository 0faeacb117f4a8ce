"""Bloxo cards on the table: find them, put them on the card grid, read their quadrants.

Private helper of :mod:`vision.bloxo` (issue 9). Works in the board frame of
``table-kit.md`` through :class:`vision.board.BoardView`; nothing here knows how a scene
was drawn, only the kit file (card, quadrant and shape sizes, the play area) and the
surveyed colour references.

How a frame is read:

1. The play area is warped top-down at 1 px/mm (cached maps per pose) and converted to
   linear light, white-balanced per frame against the markers' white paper (the light
   may change between the survey and this frame).
2. The card faces are what is dark (a threshold between the face as measured in this
   frame and the darkest card colour); shapes are the bright holes in them: blobs of
   shape size ringed by black face (an opening first cuts the necks blur draws
   between a shape and the table; a second look at a higher threshold, and a third
   that counts whatever lies outside the card faces as face, separate shapes blur has
   joined to the table; a fourth, with the face threshold relative to the brightest
   shape nearby, separates bright shapes strong defocus has joined into chains; all
   are skipped when the first look's whole cards cover every pixel of face: nothing
   is left for them to find). Hands and arms are what
   is neither table nor card; on a table as dark as the card faces, what reaches in
   over the play area's edge.
3. Each shape's colour is classified by chromaticity (shading and light level do not
   matter) from its brighter pixels. Its shape is classified from its outline alone,
   not from its colour: the shape's grey patch is correlated with the kit's shape
   names drawn as ideal outlines at every rotation and blurred like this frame (the
   frame's defocus or motion blur is measured on its shapes: the candidate blur whose
   templates fit all of them best), see :class:`ShapeTemplates`; a doubtful shape (a
   poor or narrow fit, or a name its colour contradicts) is looked at again with its
   patch moved to each name's best place (a blob's centroid may lie off its shape's
   centre), the same search for every name. The two must agree
   (R-BLOXO-1); a disagreement is reported, never silently resolved (next to a hand or
   a glare spot it makes the card occluded). An unchanged frame, or a blob unchanged
   since the previous frame (same place, size and colour), keeps its reading.
4. Shapes lie near a lattice of quadrant centres (the card grid of R-BLOXO-2 halved).
   Four shapes in the four quadrant slots of one grid position make a card; its pose
   (offset, rotation) is fitted from the four centroids. Cards within the kit's
   tolerance are on the grid; four shapes forming a card elsewhere are a card far off
   the grid or lying on another card, reported as such. Grid positions with only some
   of their shapes visible are occluded (a hand, glare, or a card on top), not guessed.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

from calibration.colour import srgb_lut, srgb_to_linear
from vision.colours import centred_unit_rows, segment_distance

_LUT = srgb_lut()
_LUT3 = np.ascontiguousarray(np.repeat(_LUT[:, None], 3, axis=1)).reshape(1, 256, 3)
PAPER_NOMINAL = (240, 240, 236)  # the markers' paper, the white the survey balances against

COARSE_PPM = 1.0
_DISK3 = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (3, 3))
_DISK7 = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (7, 7))
_DISK11 = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (11, 11))
_SQUARE3 = np.ones((3, 3), np.uint8)


# ------------------------------------------------------------------------ light


def to_linear(bgr: np.ndarray) -> np.ndarray:
    """BGR uint8 -> linear RGB float32 (same shape)."""
    return cv2.LUT(bgr, _LUT3)[..., ::-1]


def lab_to_linear(lab: Any) -> np.ndarray:
    """CIELAB (D65) -> linear RGB, the inverse of :func:`calibration.colour.linear_to_lab`."""
    L, a, b = (float(v) for v in lab)
    fy = (L + 16) / 116
    fx, fz = fy + a / 500, fy - b / 200

    def inv(f: float) -> float:
        return f ** 3 if f > 6 / 29 else 3 * (6 / 29) ** 2 * (f - 4 / 29)

    m = np.array([[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750],
                  [0.0193339, 0.1191920, 0.9503041]])
    xyz = np.array([inv(fx), inv(fy), inv(fz)]) * m.sum(axis=1)
    return np.linalg.solve(m, xyz)


def paper_points(kit: Any, game: str) -> list[np.ndarray]:
    """Board points (mm) on each marker's white paper quiet zone, one array per marker."""
    q = kit.markers.quiet_zone_mm
    s = kit.markers.size_mm
    out = []
    for corners in kit.marker_corners(game).values():
        x0, y0 = corners[:, 0].min(), corners[:, 1].min()
        pts = [(x0 - q / 2, y0 + s * t) for t in np.linspace(0.15, 0.85, 5)]
        pts += [(x0 + s * t, y0 - q / 2) for t in np.linspace(0.15, 0.85, 5)]
        pts += [(x0 + s + q / 2, y0 + s * t) for t in np.linspace(0.15, 0.85, 5)]
        pts += [(x0 + s * t, y0 + s + q / 2) for t in np.linspace(0.15, 0.85, 5)]
        out.append(np.array(pts, float))
    return out


class WhiteReference:
    """Per-frame white balance against white paper seen in every frame.

    ``gains`` map the paper's linear RGB onto its nominal colour. Paper covered by a
    hand or in deep shadow is recognised as an outlier (much darker or much less
    neutral than the others) and left out; with no paper at all the last gains stay."""

    def __init__(self, groups_mm: list[np.ndarray], nominal_rgb: tuple[int, int, int] = PAPER_NOMINAL,
                 initial: Any = None) -> None:
        self.groups = groups_mm
        self.nominal = srgb_to_linear(np.array(nominal_rgb, float))
        self.gains = np.asarray(initial, float) if initial is not None else np.ones(3)
        self.level = 1.0  # paper brightness relative to nominal, this frame
        self._px: list[np.ndarray] | None = None
        self._version = -1

    def update(self, frame_bgr: np.ndarray, view: Any, version: int | None = None) -> np.ndarray:
        from vision.board import sample

        ver = view.version if version is None else version
        if self._version != ver or self._px is None:
            self._px = [view.project(g) for g in self.groups]
            self._version = ver
        cols = []
        # one sampling call for every marker's points
        values = sample(frame_bgr, np.concatenate(self._px))
        counts = [len(p) for p in self._px]
        if len(set(counts)) == 1 and not np.isnan(values).any():
            # (the usual case: every point on the image) one median for all markers at once
            lin = _LUT[np.clip(np.round(values), 0, 255).astype(np.uint8)][:, ::-1]
            cols = list(np.median(lin.reshape(len(counts), counts[0], 3), axis=1)) if counts[0] >= 4 else []
        else:
            for v in np.split(values, np.cumsum(counts)[:-1]):
                v = v[~np.isnan(v).any(axis=1)]
                if len(v) < 4:
                    continue
                lin = _LUT[np.clip(np.round(v), 0, 255).astype(np.uint8)][:, ::-1]
                cols.append(np.median(lin, axis=0))
        if not cols:
            return self.gains
        cols_a = np.array(cols)
        bright = cols_a.sum(axis=1)
        chroma = (cols_a.max(axis=1) - cols_a.min(axis=1)) / np.maximum(cols_a.max(axis=1), 1e-6)
        ok = (bright >= 0.6 * bright.max()) & (chroma <= np.median(chroma) + 0.15)
        ref = np.median(cols_a[ok], axis=0)
        if np.all(ref > 1e-4):
            self.gains = self.nominal / ref
            self.level = float(ref.sum() / self.nominal.sum())
        return self.gains


@dataclass
class ColourRefs:
    """Reference colours (normalised linear RGB) and their chromaticities."""

    names: list[str]
    linear: np.ndarray  # (K, 3)

    @property
    def chroma(self) -> np.ndarray:
        return self.linear / self.linear.sum(axis=1, keepdims=True)

    @staticmethod
    def from_survey(survey: dict | None, names: list[str], fallback_rgb: dict[str, tuple]) -> "ColourRefs":
        """References from the survey's ``pieces`` (keys ``name`` or ``*:name``) in CIELAB,
        the kit's nominal colour when the survey lacks one."""
        pieces = (survey or {}).get("pieces", {})
        lins = []
        for n in names:
            entry = pieces.get(n) or next((v for k, v in pieces.items() if k.split(":")[-1] == n), None)
            if entry and entry.get("lab") is not None:
                lins.append(np.clip(lab_to_linear(entry["lab"]), 1e-4, None))
            else:
                lins.append(srgb_to_linear(np.array(fallback_rgb[n], float)))
        return ColourRefs(list(names), np.array(lins))

    def classify_many(self, lin: np.ndarray) -> list[tuple[int, float, float]]:
        """:meth:`classify` of each row of ``lin`` (N, 3)."""
        lin = np.asarray(lin, float).reshape(-1, 3)
        s = lin.sum(axis=1)
        d = np.linalg.norm(self.chroma[None] - lin[:, None] / np.maximum(s, 1e-300)[:, None, None], axis=2)
        order = np.argsort(d, axis=1)
        rows = np.arange(len(lin))
        d0 = d[rows, order[:, 0]]
        d1 = d[rows, order[:, 1]] if d.shape[1] > 1 else np.full(len(lin), 9.0)
        # (plain Python values at once: indexing numpy per row costs more than the rest)
        return [(k, a, m) if ok else (-1, 9.0, 0.0)
                for k, a, m, ok in zip(order[:, 0].tolist(), d0.tolist(), (d1 - d0).tolist(), (s > 1e-6).tolist())]

    def classify(self, lin: np.ndarray) -> tuple[int, float, float]:
        """(index, chromaticity distance, margin to the second best) of one colour."""
        return self.classify_many(np.asarray(lin, float).reshape(1, 3))[0]


class StableWarp:
    """Top-down warp maps that survive a pose re-found at (nearly) the same place.

    :class:`vision.board.BoardView` starts a new pose version whenever the pose tracker
    re-finds the board; with a default (uncalibrated) lens the markers never fit the
    pose within the tracker's tolerance, so that happens on every frame although the
    board has not moved. Rebuilding the maps (and forgetting what was read) each time
    would cost more than reading the frame: the maps are kept while the area's corners
    project within a quarter pixel of where they did. ``version`` counts real changes."""

    def __init__(self, view: Any, ppm: float, z: float = 0.0) -> None:
        self.view, self.ppm, self.z = view, ppm, z
        self.version = 0
        self._corners: np.ndarray | None = None
        self._maps: tuple[np.ndarray, np.ndarray] | None = None
        self._fixed: tuple[np.ndarray, np.ndarray] | None = None
        self._seen = -1

    def maps(self) -> tuple[np.ndarray, np.ndarray]:
        v = self.view
        if self._maps is not None and self._seen == v.version:
            return self._maps
        w, h = v.kit.area_mm(v.game)
        corners = v.project(np.array([[0, 0, self.z], [w, 0, self.z], [w, h, self.z], [0, h, self.z],
                                      [w / 2, h / 2, self.z]], float))
        if self._maps is None or self._corners is None or np.abs(corners - self._corners).max() > 0.25:
            mx, my = v.rectify_maps(self.ppm, 0.0, self.z)
            self._maps = (mx, my)
            # the maps in OpenCV's fixed-point form: what remap makes of float maps on
            # every call (the same pixels), made once
            self._fixed = cv2.convertMaps(mx, my, cv2.CV_16SC2)
            self._corners = corners
            self.version += 1
        self._seen = v.version
        return self._maps

    def warp(self, image: np.ndarray) -> np.ndarray:
        self.maps()
        m1, m2 = self._fixed
        return cv2.remap(image, m1, m2, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)


class PoseGuard:
    """The board pose re-checked only when it may have changed.

    :meth:`vision.board.BoardView.update` looks for the markers in every frame (with an
    uncalibrated lens it re-estimates the pose each time): on a still table that is
    most of a frame's work. The board or the camera cannot move without the markers'
    image changing, so each marker's neighbourhood (marker and quiet zone, averaged
    over 4 x 4 pixel blocks, which drowns sensor noise) is kept from the frame of the
    last check, and the next check runs only when one of them changed (any movement
    of about half a pixel or more, a hand over a marker) or ``max_age_s`` passed.
    Blocks that show the play area itself (a quiet zone's box can reach over the
    board's corner space) are left out of the comparison: a piece put down there
    changes them without anything having moved.

    A pose that passed its check (status ``ok``), was re-found from the markers at that
    check (``moved``) or was kept unverified (``unverified``: too few markers fit it) is
    reused so; a ``lost`` pose makes every frame checked. A check depends on nothing
    but the pose held and the markers' image (when no re-found pose awaits its second
    sighting, see below): while that image is unchanged a new check can only give the
    same answer. A ``moved`` pose was fitted to the very marker image kept
    for the comparison (with an uncalibrated lens the markers never fit a pose within
    the tracker's tolerance, so every check "moves" it by a fraction of a pixel, at the
    cost of a full marker search per frame); an ``unverified`` one stays unverified
    (one marker a little beyond the tolerance with an uncalibrated lens, on an
    untouched table: a full marker search per frame for nothing) until the markers'
    image changes: a hand over a marker, or taken away, changes it. A pose re-found
    and awaiting its second sighting (:attr:`vision.board.BoardView.confirming`) is
    checked on the next frame whatever its markers look like: that check confirms it.

    ``hidden``: markers covered at the last check: not decoded and without the black
    and white contrast a marker shows (a marker blurred beyond decoding keeps it).
    Something lies over them (a hand or an arm reaching in over the corner): the
    recognisers commit nothing then."""

    BLOCK = 4

    def __init__(self, view: Any, *, max_age_s: float = 10.0, level_change: float = 30.0,
                 changed_fraction: float = 0.01, marker_contrast: float = 80.0) -> None:
        self.view = view
        self.max_age_s = max_age_s
        self.level_change = level_change
        self.changed_fraction = changed_fraction
        self.marker_contrast = marker_contrast
        self.checks = 0
        self.markers_seen = len(view.kit.marker_corners(view.game))  # at the last check
        self._ref: list[np.ndarray] | None = None
        self._boxes: list[tuple[int, int, int, int]] = []
        self._keep: list[np.ndarray] = []
        self._t = -math.inf
        self._version = -1

    @property
    def hidden(self) -> int:
        return max(0, len(self.view.kit.marker_corners(self.view.game)) - self.markers_seen)

    def _crops(self, frame: np.ndarray) -> list[np.ndarray] | None:
        b = self.BLOCK
        out = []
        for x0, y0, x1, y1 in self._boxes:
            roi = frame[y0:y1, x0:x1]
            if roi.size == 0:
                return None
            g = cv2.cvtColor(roi, cv2.COLOR_BGR2GRAY) if roi.ndim == 3 else roi
            out.append(cv2.resize(g, ((x1 - x0) // b, (y1 - y0) // b), interpolation=cv2.INTER_AREA).astype(np.int16))
        return out

    def update(self, frame: np.ndarray, t: float) -> bool:
        """Re-check the pose if needed; True when it was checked this frame."""
        if self._ref is not None and self._version == self.view.version and t - self._t < self.max_age_s \
                and t >= self._t and self.view.status in ("ok", "moved", "unverified") \
                and not self.view.confirming:
            now = self._crops(frame)
            if now is not None and all(float(np.mean((np.abs(a - r) > self.level_change)[k]))
                                       <= self.changed_fraction
                                       for a, r, k in zip(now, self._ref, self._keep)):
                return False
        check = self.view.update(frame)
        self.checks += 1
        seen = set(check.seen) if check.status.value != "lost" else set()
        self._t = t
        self._version = self.view.version
        self._ref = None
        if self.view.pose is None:
            self.markers_seen = 0
            return True
        H, W = frame.shape[:2]
        kit, game = self.view.kit, self.view.game
        q = kit.markers.quiet_zone_mm
        b = self.BLOCK
        boxes = []
        covered = 0
        for mid, corners in kit.marker_corners(game).items():
            c = np.asarray(corners, float)[:, :2]
            lo, hi = c.min(axis=0) - q, c.max(axis=0) + q
            px = self.view.project(np.array([[lo[0], lo[1]], [hi[0], lo[1]], [hi[0], hi[1]], [lo[0], hi[1]]]))
            x0, y0 = np.floor(px.min(axis=0)).astype(int)
            x1, y1 = np.ceil(px.max(axis=0)).astype(int)
            x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, W), min(y1, H)
            if x1 - x0 >= 2 * b and y1 - y0 >= 2 * b:
                boxes.append((x0, y0, x0 + (x1 - x0) // b * b, y0 + (y1 - y0) // b * b))
            if mid not in seen:
                # not decoded: covered (no black-on-white contrast left where it lies)
                # or only too blurred to decode (its black and white still there)
                roi = frame[y0:y1, x0:x1]
                g = cv2.cvtColor(roi, cv2.COLOR_BGR2GRAY) if roi.ndim == 3 and roi.size else roi
                lo, hi = np.percentile(g, (5, 95)) if g.size else (0.0, 0.0)
                covered += int(hi - lo < self.marker_contrast)
        self._boxes = boxes
        self.markers_seen = len(kit.marker_corners(game)) - covered
        if boxes:
            self._ref = self._crops(frame)
            self._keep = self._off_area(frame.shape[:2])
        return True

    AREA_MARGIN_MM = 3.0  # a piece's edge or top may stand a little beyond its space

    def _off_area(self, shape: tuple[int, int]) -> list[np.ndarray]:
        """Per box: its blocks that show nothing of the play area (bool, block grid)."""
        H, W = shape
        area = np.zeros((H, W), np.uint8)
        poly = self.view.area_polygon(self.AREA_MARGIN_MM, steps=16)
        cv2.fillPoly(area, [np.round(poly * 16).astype(np.int32)], 1, cv2.LINE_8, 4)
        b = self.BLOCK
        out = []
        for x0, y0, x1, y1 in self._boxes:
            blocks = area[y0:y1, x0:x1].reshape((y1 - y0) // b, b, (x1 - x0) // b, b).max(axis=(1, 3))
            keep = blocks == 0
            out.append(keep if keep.any() else np.ones_like(keep))
        return out


class SameFrame:
    """Is this frame the one last read, give or take sensor noise?

    A still table gives the same image frame after frame; reading it again would give
    the same result. The frame is averaged over ``block`` x ``block`` pixel blocks
    (which drowns sensor noise and JPEG ringing) and compared with the blocks of the
    frame last read in full (not with the previous frame, so a slow change still adds
    up): any block whose level changed by more than ``level_change`` makes it a new
    frame. A piece put down, a hand, a change of light all change many blocks."""

    def __init__(self, block: int = 8, level_change: float = 10.0, changed_fraction: float = 0.0) -> None:
        self.block = block
        self.level_change = level_change
        self.changed_fraction = changed_fraction
        self._ref: np.ndarray | None = None
        self._looked: tuple[np.ndarray, np.ndarray] | None = None  # the frame :meth:`same` last saw, averaged

    def _small(self, frame: np.ndarray) -> np.ndarray:
        if self._looked is not None and self._looked[0] is frame:
            return self._looked[1]
        g = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY) if frame.ndim == 3 else frame
        h, w = g.shape[:2]
        return cv2.resize(g, (w // self.block, h // self.block), interpolation=cv2.INTER_AREA).astype(np.int16)

    def same(self, frame: np.ndarray) -> bool:
        """True when ``frame`` matches the one last :meth:`keep` -ed."""
        if self._ref is None:
            return False
        small = self._small(frame)
        self._looked = (frame, small)  # a frame found changed is kept after its reading
        if small.shape != self._ref.shape:
            return False
        return float(np.mean(np.abs(small - self._ref) > self.level_change)) <= self.changed_fraction

    def keep(self, frame: np.ndarray) -> None:
        """Remember ``frame`` as the one last read in full."""
        self._ref = self._small(frame)
        self._looked = None

    def forget(self) -> None:
        self._ref = self._looked = None


# ------------------------------------------------------------------------ shapes


def ideal_outline(name: str, r: float) -> list[np.ndarray]:
    """Generic outlines of the shape names a Bloxo kit can use (mm, centred, radius r).

    These are what the words mean, not any particular print: a rhombus, a disc, a
    plus-sign cross with arms a third as wide as the shape, a five-pointed star."""
    if name == "circle":
        a = np.linspace(0, 2 * np.pi, 64, endpoint=False)
        return [np.stack([r * np.cos(a), r * np.sin(a)], 1)]
    if name == "diamond":
        return [np.array([[0, -r], [0.75 * r, 0], [0, r], [-0.75 * r, 0]])]
    if name == "square":
        q = r * 0.75
        return [np.array([[-q, -q], [q, -q], [q, q], [-q, q]])]
    if name == "cross":
        w = r / 3
        return [np.array([[-w, -r], [w, -r], [w, -w], [r, -w], [r, w], [w, w], [w, r], [-w, r], [-w, w], [-r, w],
                          [-r, -w], [-w, -w]])]
    if name == "star":
        a = -np.pi / 2 + np.arange(10) * np.pi / 5
        rad = np.where(np.arange(10) % 2 == 0, r, r * 0.42)
        return [np.stack([rad * np.cos(a), rad * np.sin(a)], 1)]
    if name == "triangle":
        a = -np.pi / 2 + np.arange(3) * 2 * np.pi / 3
        return [np.stack([r * np.cos(a), r * np.sin(a)], 1)]
    if name == "heart":
        t = np.linspace(0, 2 * np.pi, 64, endpoint=False)
        x = 16 * np.sin(t) ** 3
        y = -(13 * np.cos(t) - 5 * np.cos(2 * t) - 2 * np.cos(3 * t) - np.cos(4 * t))
        return [np.stack([x, y], 1) * (r / 16.5)]
    raise ValueError(f"no outline known for the shape name {name!r}")


UPSAMPLE = 2  # outlines are traced on a 2x bilinear upsampling of the warp: sub-pixel edges


OUTLINE_MARGIN_PX = 7  # a blob's outline is looked for within its box grown by this (the grown-back tips fit)


def outline_extents(s: np.ndarray, labels: np.ndarray, ids: np.ndarray, boxes: np.ndarray, tops: np.ndarray,
                    face_level: float) -> tuple[np.ndarray, np.ndarray]:
    """Each component's outline at half height between the black face (``face_level``)
    and its own brightness (``tops``), traced on a :data:`UPSAMPLE` x bilinear
    upsampling of the brightness ``s`` (sub-pixel edges): (outline pixels of the
    upsampling, does the outline reach the edge of ``s``), one per component ``ids``
    of ``labels`` (boxes x, y, w, h).

    The outline lies inside the component grown back past its tips (it was found after
    an opening): brightness outside that is taken as face, so other blobs stay out. All
    components are traced at once: their neighbourhoods (box grown by
    :data:`OUTLINE_MARGIN_PX`, the image's edge replicated beyond it) are laid side by
    side in one wide image (OpenCV filters long rows much faster than many short ones);
    the margin keeps each one's growing and interpolation from reaching the next."""
    ids = np.asarray(ids)
    N = len(ids)
    if N == 0:
        return np.zeros(0, np.int64), np.zeros(0, bool)
    H, W = s.shape
    mg = OUTLINE_MARGIN_PX
    boxes = np.asarray(boxes, np.int64).reshape(N, 4)
    rh, rw = int(boxes[:, 3].max()) + 2 * mg, int(boxes[:, 2].max()) + 2 * mg
    y0, x0 = boxes[:, 1] - mg, boxes[:, 0] - mg  # the neighbourhoods' corners
    within = bool((y0 >= 0).all() and (x0 >= 0).all() and (y0 + rh <= H).all() and (x0 + rw <= W).all())
    pad = 0 if within else max(rh, rw)
    if pad:
        s = cv2.copyMakeBorder(s, pad, pad, pad, pad, cv2.BORDER_REPLICATE)
        labels = cv2.copyMakeBorder(labels, pad, pad, pad, pad, cv2.BORDER_CONSTANT, value=0)
    sv = _side_by_side(s, y0 + pad, x0 + pad, rh, rw).reshape(rh, N, rw)
    comp = (_side_by_side(labels, y0 + pad, x0 + pad, rh, rw) == np.repeat(ids, rw)[None]).view(np.uint8)
    tops = np.asarray(tops, np.float64)
    lo = (face_level + 0.25 * (tops - face_level)).astype(np.float32)[None, :, None]
    grown = cv2.dilate(comp, _DISK11).reshape(rh, N, rw)
    vals = np.where((grown > 0) & (sv > lo), sv, np.float32(face_level))
    u = UPSAMPLE
    up = cv2.resize(vals.reshape(rh, N * rw), (N * rw * u, rh * u), interpolation=cv2.INTER_LINEAR)
    mid = ((tops + face_level) / 2).astype(np.float32)[None, :, None]
    mask = up.reshape(rh * u, N, rw * u) > mid
    if within:
        # the outline keeps 2 px inside its neighbourhood (grown by 5 px in a margin of 7):
        # it cannot reach the image's edge
        return _count(mask), np.zeros(N, bool)
    # upsampled pixels of the image itself (the replicated border is not the image)
    urow = (u * y0[None, :] + np.arange(rh * u)[:, None])[:, :, None]  # (rh u, N, 1)
    ucol = (u * x0[:, None] + np.arange(rw * u)[None, :])[None]  # (1, N, rw u)
    mask &= (urow >= 0) & (urow < u * H) & (ucol >= 0) & (ucol < u * W)
    edge = (mask & ((urow == 0) | (urow == u * H - 1) | (ucol == 0) | (ucol == u * W - 1))).any(axis=(0, 2))
    return _count(mask), edge


def _side_by_side(image: np.ndarray, y0: np.ndarray, x0: np.ndarray, h: int, w: int) -> np.ndarray:
    """The h x w windows of ``image`` at top-left corners (y0, x0), side by side: (h, N w)."""
    return np.concatenate([image[a:a + h, b:b + w] for a, b in zip(y0.tolist(), x0.tolist())], axis=1)


class _Components:
    """The 4-connected components of a 0/1 uint8 image, as ``cv2.connectedComponentsWithStats``
    gives them, with statistics only for those of ``lo`` to ``hi`` pixels (``ids``):
    their centroids at once, their boxes (:meth:`stats`) for the few asked for.

    OpenCV's statistics pass visits every pixel; the second and third looks of
    :meth:`CardReader._segment` need them only for a few shape-sized components of
    an image that is mostly face."""

    def __init__(self, image: np.ndarray, lo: float, hi: float) -> None:
        n, self.labels = cv2.connectedComponents(image, connectivity=4)
        flat = self.labels.ravel()
        pix = np.flatnonzero(image.view(bool))  # (faster on the 0/1 image than on the labels)
        lab = flat[pix]
        self.area = np.bincount(lab, minlength=n)
        self.area[0] = flat.size - len(pix)  # the background, as OpenCV counts it
        sized = (self.area >= lo) & (self.area <= hi)
        sized[:1] = False
        self.ids = np.nonzero(sized)[0]
        keep = sized[lab]
        self._lab = lab[keep]
        self._y, self._x = np.divmod(pix[keep], image.shape[1])
        self.centroids = np.zeros((n, 2))
        with np.errstate(invalid="ignore", divide="ignore"):
            self.centroids[:, 0] = np.bincount(self._lab, self._x, n) / self.area
            self.centroids[:, 1] = np.bincount(self._lab, self._y, n) / self.area

    def stats(self, ids: np.ndarray) -> np.ndarray:
        """Rows x, y, w, h, area (as OpenCV's) for the components ``ids`` (others zero)."""
        out = np.zeros((len(self.area), 5), np.int32)
        out[:, 4] = self.area
        for i in ids:
            at = self._lab == i
            x, y = self._x[at], self._y[at]
            out[i, :4] = x.min(), y.min(), x.max() - x.min() + 1, y.max() - y.min() + 1
        return out


def _window_sums(values: np.ndarray, n: int) -> np.ndarray:
    """Float64 sums over each of ``n`` equal windows laid side by side in ``values``
    (float32, (h, n w) or (h, n w, c)): (n,) or (n, c)."""
    cols = cv2.reduce(values, 0, cv2.REDUCE_SUM, dtype=cv2.CV_64F)[0]
    return cols.reshape(n, -1, *cols.shape[1:]).sum(axis=1)


def _count(mask: np.ndarray) -> np.ndarray:
    """True pixels of each window of a (h, N, w) bool image."""
    return mask.view(np.uint8).sum(axis=0, dtype=np.int32).sum(axis=1)


# Patches: a disc of this radius (mm) around a shape's centre; the shape is 24 mm
# across, a quadrant 35 mm: the disc holds the shape and its blur, never a neighbour.
PATCH_RADIUS_MM = 15.0
# A doubtful shape's second look (ShapeTemplates.look_again) moves its patch up to this
# far (mm, each axis) from the blob's centroid: blur joining table to a shape, or a
# threshold cutting it, moved centroids of dev scenes by up to about 5 mm.
SHIFT_MM = 5.0


def _point_blur_kernels(ppm: float) -> list[tuple[str, float, float, float]]:
    """Blurs a frame can show, in warp pixels: defocus (Gaussian, several widths) and
    motion (a line of several lengths in six directions, with a little defocus).

    Widths are in mm on the table: a wide lens high above a tilted view spreads one
    image pixel's defocus over 2 mm or more at the far side, so the widest defocus
    reaches past 3 mm (a dev scene's stars there fitted a diamond best while 2.1 mm was
    the widest). (The two widest come last: the others keep their indices.)"""
    out: list[tuple[str, float, float, float]] = [("gauss", s * ppm, 0.0, 0.0) for s in (0.45, 0.85, 1.25, 1.65, 2.1)]
    for length in (3.0, 5.0, 7.0):
        for ang in range(0, 180, 30):
            out.append(("motion", 0.6 * ppm, length * ppm, float(ang)))
    out += [("gauss", s * ppm, 0.0, 0.0) for s in (2.6, 3.2)]
    return out


def _apply_blur(img: np.ndarray, kind: str, sigma: float, length: float, ang: float) -> np.ndarray:
    if sigma > 0:
        img = cv2.GaussianBlur(img, (0, 0), sigma)
    if kind == "motion" and length >= 1:
        k = int(math.ceil(length)) | 1
        kern = np.zeros((k + 2, k + 2), np.float32)
        c = (k + 1) / 2
        dx, dy = math.cos(math.radians(ang)) * length / 2, math.sin(math.radians(ang)) * length / 2
        cv2.line(kern, (int(round((c - dx) * 16)), int(round((c - dy) * 16))),
                 (int(round((c + dx) * 16)), int(round((c + dy) * 16))), 1.0, 1, cv2.LINE_AA, 4)
        kern /= kern.sum()
        img = cv2.filter2D(img, -1, kern, borderType=cv2.BORDER_CONSTANT)
    return img


def _symmetry_period(name: str, r: float) -> float:
    """Smallest rotation (degrees) mapping the outline onto itself; 0 for a disc."""
    n = 64

    def raster(ang: float) -> np.ndarray:
        a = math.radians(ang)
        rot = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
        img = np.zeros((n, n), np.uint8)
        polys = [np.round((p / r * n * 0.45 @ rot.T + n / 2) * 16).astype(np.int32) for p in ideal_outline(name, r)]
        cv2.fillPoly(img, polys, 1, cv2.LINE_8, 4)
        return img.astype(bool)

    ref = raster(0.0)
    hits = [k for k in (2, 3, 4, 5, 6, 7, 8) if (raster(360.0 / k) ^ ref).sum() <= 0.02 * ref.sum()]
    if 7 in hits and 8 in hits:
        return 0.0
    return 360.0 / max(hits) if hits else 360.0


class ShapeTemplates:
    """Shape from the outline's grey image: normalised correlation with the kit's shape
    names drawn as ideal outlines (:func:`ideal_outline`), every rotation, blurred the
    way this frame is blurred.

    Defocus and motion blur round a star's notches and a cross's corners, so outline
    features of the blurred print lose the shape; the blurred *image* keeps it. The
    frame's blur is measured on its shapes: of a set of candidate blurs (defocus widths,
    motion lengths and directions) the one whose templates (every other rotation of
    them, see :meth:`estimate_blur`) match the shapes best over all of them (whatever
    each shape is) is the frame's, and each shape is then read
    against the templates with that blur and its nearest neighbours. A shape's reading
    is its best-matching name; the margin to the next name is its confidence."""

    def __init__(self, names: list[str], size_mm: float, ppm: float, rot_step: float = 4.0) -> None:
        self.names = list(names)
        r = size_mm / 2
        n = int(round(2 * PATCH_RADIUS_MM * ppm)) | 1
        self.n = n
        yy, xx = np.mgrid[0:n, 0:n]
        c = (n - 1) / 2
        self.mask = np.hypot(xx - c, yy - c) <= PATCH_RADIUS_MM * ppm
        self._idx = np.nonzero(self.mask.ravel())[0]
        self.blurs = _point_blur_kernels(ppm)
        hi = 8
        bases: list[np.ndarray] = []
        classes: list[int] = []
        coarse: list[int] = []  # the templates the blur is estimated with (see estimate_blur)
        for k, name in enumerate(self.names):
            period = _symmetry_period(name, r)
            angles = [0.0] if period == 0 else list(np.arange(0.0, period, rot_step))
            for j, ang in enumerate(angles):
                if j % 2 == 0:
                    coarse.append(len(bases))
                a = math.radians(ang)
                rot = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
                big = np.zeros((n * hi, n * hi), np.float32)
                polys = [np.round(((p @ rot.T) * ppm * hi + (n * hi / 2 - 0.5)) * 16).astype(np.int32)
                         for p in ideal_outline(name, r)]
                cv2.fillPoly(big, polys, 1.0, cv2.LINE_AA, 4)
                bases.append(cv2.resize(big, (n, n), interpolation=cv2.INTER_AREA))
                classes.append(k)
        self.classes = np.array(classes)
        self._starts = np.searchsorted(self.classes, np.arange(len(self.names)))
        T = np.empty((len(self.blurs), len(bases), len(self._idx)), np.float32)
        for p, blur in enumerate(self.blurs):
            for j, base in enumerate(bases):
                T[p, j] = _apply_blur(base, *blur).ravel()[self._idx]
        self.T = centred_unit_rows(T.reshape(-1, len(self._idx))).reshape(T.shape)
        self._coarse = np.ascontiguousarray(self.T[:, coarse]).reshape(-1, len(self._idx))
        self._n_coarse = len(coarse)
        self._coarse_idx = np.array(coarse)
        self._coarse_starts = np.searchsorted(self.classes[self._coarse_idx], np.arange(len(self.names)))
        self.ppm = ppm
        self._chosen: dict[tuple, np.ndarray] = {}  # the templates of the last blurs classified with, (B K, D)
        self._coarse_chosen: dict[tuple, tuple] = {}  # (the same for look_again: coarse and per-name templates)

    def patches(self, s: np.ndarray, centres: np.ndarray, tops: np.ndarray, bottoms: np.ndarray) -> np.ndarray:
        """(N, D) normalised patches of the brightness image ``s`` at sub-pixel
        ``centres`` (warp px), values 0 (face) .. 1 (the shape's own brightness).

        Each patch is re-centred on its intensity centroid (the blob's own outline may
        be cut by a threshold on one side). All patches are sampled at once (bilinear,
        the frame's edge replicated: what ``cv2.getRectSubPix`` gives one at a time)."""
        n = self.n
        c = (n - 1) / 2
        centres = np.asarray(centres, np.float64).reshape(-1, 2)
        if len(centres) == 0:
            return np.zeros((0, len(self._idx)), np.float32)
        lo = np.asarray(bottoms, np.float32).reshape(-1, 1, 1)
        span = np.maximum(np.asarray(tops, np.float32).reshape(-1, 1, 1) - lo, np.float32(1e-6))
        # (no padded copy: _sub_pixel_patches replicates the edge itself where a patch reaches over it)
        v = _unit_range(_sub_pixel_patches(s, centres, n, 0), lo, span)
        w = v * self.mask
        m = w.sum(axis=(1, 2))
        ar = np.arange(n, dtype=np.float32)
        with np.errstate(invalid="ignore", divide="ignore"):
            dx = (w.sum(axis=1) @ ar) / m - c
            dy = (w.sum(axis=2) @ ar) / m - c
        again = (m > 0) & (np.abs(dx) < 3) & (np.abs(dy) < 3) & ((np.abs(dx) > 0.2) | (np.abs(dy) > 0.2))
        if again.any():
            moved = centres[again] + np.column_stack([dx[again], dy[again]])
            v[again] = _unit_range(_sub_pixel_patches(s, moved, n, 0), lo[again], span[again])
        return centred_unit_rows(v.reshape(len(v), -1)[:, self._idx])

    def estimate_blur(self, X: np.ndarray, keep: int = 3) -> np.ndarray:
        """Indices of the ``keep`` candidate blurs that fit the patches ``X`` best.

        Every other rotation of each shape is enough to tell the blurs apart (each
        shape's best rotation is at most one 4 degree step off; the blurs are ranked
        by the mean over many shapes), at half the templates to read."""
        # one matrix product (BLAS) rather than einsum's batched one: the same sums, faster
        S = (X @ self._coarse.T).reshape(len(X), self.T.shape[0], self._n_coarse)
        best = S.max(axis=2).mean(axis=0)  # (P,)
        return np.argsort(-best)[:keep]

    def classify(self, X: np.ndarray, blurs: np.ndarray) -> list[tuple[str, float, float]]:
        """(name, score, margin to the best other name) of each normalised patch."""
        return self.readings(self.scores(X, blurs))

    def scores(self, X: np.ndarray, blurs: np.ndarray) -> np.ndarray:
        """(N, C): each normalised patch's best correlation with each shape name's
        templates (any rotation) at the candidate blurs ``blurs``."""
        key = tuple(np.asarray(blurs).tolist())
        if key not in self._chosen:  # (the frame's blur changes rarely: its templates are kept)
            self._chosen = {key: self.T[list(key)].reshape(-1, self.T.shape[2])}
        S = (X @ self._chosen[key].T).reshape(len(X), len(key), -1).max(axis=1)  # (N, K)
        return np.maximum.reduceat(S, self._starts, axis=1)

    def readings(self, per: np.ndarray) -> list[tuple[str, float, float]]:
        """(name, score, margin to the best other name) of each row of per-name scores (N, C)."""
        order = np.argsort(-per, axis=1)
        rows = np.arange(len(per))
        best = per[rows, order[:, 0]]
        margin = best - per[rows, order[:, 1]] if per.shape[1] > 1 else np.ones(len(per))
        return [(self.names[a], sc, m) for a, sc, m in zip(order[:, 0].tolist(), best.tolist(), margin.tolist())]

    def look_again(self, s: np.ndarray, centre: tuple[float, float], top: float, bottom: float,
                   blurs: np.ndarray) -> np.ndarray:
        """(C,): a doubtful shape's best correlation with each shape name, its patch
        moved to wherever each name fits best within :data:`SHIFT_MM` of the blob's
        centre (warp px ``centre`` of the brightness image ``s``, levels as in
        :meth:`patches`), at the blurs ``blurs``.

        A blob's centroid can lie several px off its shape's centre (blur joins some
        table beyond the card's edge to it; a threshold cuts one side): the template
        then meets the shape off-centre, and a round, blurred name (a diamond) fits
        what is left better than the shape's own. :meth:`patches` re-centres only small
        offsets (its intensity centroid is pulled by whatever else lies in the disc);
        here each name gets its own best place, the same search for every name (the
        reading stays the outline's, not anything else's). Every patch position on a
        2-px grid is correlated with every other rotation of each name, then each name's
        best position and the whole-px positions around it with all its rotations."""
        R = int(round(SHIFT_MM * self.ppm))
        n, w = self.n, 2 * R + 1
        lo = np.float32(bottom)
        span = np.float32(max(top - bottom, 1e-6))
        m = n + 2 * R  # the side of the patch that holds every moved patch
        big = _unit_range(_sub_pixel_patches(s, np.asarray(centre, np.float64).reshape(1, 2), m, 0)[0], lo, span)
        flat = big.ravel()
        key = tuple(np.asarray(blurs).tolist())
        if key not in self._coarse_chosen:  # the coarse templates, and each name's, at these blurs
            if len(self._coarse_chosen) >= 4:  # (a few frames' blurs kept: a view's blur may alternate)
                del self._coarse_chosen[next(iter(self._coarse_chosen))]
            ends = list(self._starts[1:]) + [self.T.shape[1]]
            self._coarse_chosen[key] = (
                np.ascontiguousarray(self.T[list(key)][:, self._coarse_idx]).reshape(-1, self.T.shape[2]).T.copy(),
                [np.ascontiguousarray(self.T[list(key), a:b].reshape(-1, self.T.shape[2]).T)
                 for a, b in zip(self._starts.tolist(), ends)])
        coarse, own = self._coarse_chosen[key]
        # a patch at position (y, x) of the w x w positions is big's disc pixels from
        # offset y m + x: each set of patches is one gather
        disc = (self._idx // n) * m + self._idx % n
        grid = np.arange(R % 2, w, 2)  # (every other position, the centre's parity: 0 is among them)
        at = (grid[:, None] * m + grid[None, :]).ravel()
        S = (centred_unit_rows(flat[at[:, None] + disc[None]]) @ coarse).reshape(len(at), len(key), -1).max(axis=1)
        best = np.maximum.reduceat(S, self._coarse_starts, axis=1).argmax(axis=0)  # each name's best position
        near = []  # each name's best position and the positions around it, as offsets
        for j in best.tolist():
            y, x = int(grid[j // len(grid)]), int(grid[j % len(grid)])
            near.append([v * m + u for v in range(max(y - 1, 0), min(y + 2, w))
                         for u in range(max(x - 1, 0), min(x + 2, w))])
        X = centred_unit_rows(flat[np.array(sum(near, []))[:, None] + disc[None]])
        out = np.empty(len(self.names), np.float32)
        k0 = 0
        for k, rows in enumerate(near):
            out[k] = (X[k0:k0 + len(rows)] @ own[k]).max()
            k0 += len(rows)
        return out


@functools.lru_cache(maxsize=4)
def shape_templates(names: tuple[str, ...], size_mm: float, ppm: float) -> ShapeTemplates:
    """The templates of a kit's shapes (built once per process: they depend only on the kit)."""
    return ShapeTemplates(list(names), size_mm, ppm)


def _sub_pixel_patches(padded: np.ndarray, centres: np.ndarray, n: int, pad: int) -> np.ndarray:
    """(N, n, n) bilinear patches of an image padded by ``pad`` px (replicated edge),
    centred on ``centres`` (N, 2) of the unpadded image: patch pixel (i, j) is the
    image at (cx - (n - 1) / 2 + j, cy - (n - 1) / 2 + i)."""
    H, W = padded.shape[:2]
    org = centres - (n - 1) / 2 + pad
    ij = np.floor(org)
    f = (org - ij).astype(np.float32)
    x0, y0 = ij[:, 0].astype(np.int64), ij[:, 1].astype(np.int64)
    if x0.min() >= 0 and y0.min() >= 0 and x0.max() + n < W and y0.max() + n < H:
        # (the usual case) the blocks picked from a view of every block: one copy, far
        # faster than indexing every pixel
        block = np.lib.stride_tricks.sliding_window_view(padded, (n + 1, n + 1))[y0, x0]
    else:
        k = np.arange(n + 1)
        cols = np.clip(x0[:, None] + k, 0, W - 1)
        rows = np.clip(y0[:, None] + k, 0, H - 1)
        block = padded[rows[:, :, None], cols[:, None, :]]  # (N, n + 1, n + 1)
    fx = f[:, 0].reshape(-1, 1, 1)
    fy = f[:, 1].reshape(-1, 1, 1)
    # along the rows first, once for all n + 1 rows (each row serves two output rows),
    # then between rows: the same sums, in the same order, as written out per pixel
    across = block[:, :, :-1] * (1 - fx)
    across += block[:, :, 1:] * fx
    top = across[:, :-1] * (1 - fy)
    top += across[:, 1:] * fy
    return top


def _unit_range(v: np.ndarray, lo: np.ndarray, span: np.ndarray) -> np.ndarray:
    """``clip((v - lo) / span, 0, 1)``, in place in ``v`` (a fresh array of patches)."""
    v -= lo
    v /= span
    return np.clip(v, 0.0, 1.0, out=v)


# ------------------------------------------------------------------------ hands

FOREIGN_STEP_MM = 4.0


def foreign_mask(linb: np.ndarray, s: np.ndarray, dark: np.ndarray, gains: np.ndarray, *,
                 chroma_tol: float = 0.03, level_tol: float = 0.35, min_area_mm2: float = 1200.0,
                 card_mm2: float | None = None, dark_sum: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Regions of the play area that are neither the table nor a card: hands, arms.

    Bloxo has no board whose colours the survey knows, so the table itself is the
    reference, learned from this frame: its chromaticity is the median of the non-card
    pixels, its brightness a smooth (quadratic) light field fitted robustly to them.
    What differs from both by more than the tolerances over an area larger than any
    card part is foreign. A glare spot (brighter, whiter) is not foreign.

    ``linb``: the coarse warp in linear BGR; ``s`` its balanced brightness; ``dark``
    the card-face mask; ``card_mm2`` a card's area (a bright region larger than that is
    no card's shape, see :func:`_arms_by_level`); ``dark_sum``: the integral image of
    ``dark`` if the caller has it (see :func:`_cell_fractions`). Returns bool images at
    :data:`FOREIGN_STEP_MM` per pixel: the foreign regions, and the glare (much brighter
    than the table's light and whiter)."""
    k = int(round(FOREIGN_STEP_MM * COARSE_PPM))
    H, W = dark.shape
    size = (W // k, H // k)
    # balanced linear RGB, its level r + g + b and its chromaticity, channel by channel
    # (numpy is slow over a short last axis)
    b_, g_, r_ = cv2.split(cv2.resize(linb, size, interpolation=cv2.INTER_AREA))
    r_, g_, b_ = r_ * gains[0], g_ * gains[1], b_ * gains[2]
    dkf = _cell_fractions(dark, k, dark_sum)
    dk = dkf > 0.02
    kc = 2 * int(round(9.0 / FOREIGN_STEP_MM)) + 1
    # the card faces with everything they enclose are cards, not table
    cards = cv2.morphologyEx(dk.astype(np.uint8), cv2.MORPH_CLOSE, np.ones((kc, kc), np.uint8)).astype(bool)
    ss = r_ + g_ + b_
    level = np.maximum(ss, 1e-6)
    planes = (r_ / level, g_ / level, b_ / level)  # chromaticity, plane by plane
    ch = cv2.merge(planes)
    table = ~cards & (ss > 1e-4)
    if table.sum() < 50:
        # the table is as dark as the card faces: arms by level; glare is what is far
        # brighter than the scene's typical level and nearly white
        arms = _arms_by_level(dkf, size, min_area_mm2, ch, large_mm2=card_mm2)
        if arms.any():
            arms = cv2.dilate(arms.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)
        shine = (ss > 4.0 * float(np.median(ss))) & (np.linalg.norm(ch - 1 / 3, axis=2) < 0.12) & ~arms
        return arms, shine
    tpx = np.flatnonzero(table)
    tch = np.median(ch.reshape(-1, 3)[tpx[:: max(1, len(tpx) // 3000)]], axis=0)
    dch = _plane_distance(planes, tch.astype(ch.dtype))
    # smooth light field of the table: log level, quadratic in x, y, robust
    hs, ws = ss.shape
    x1 = np.arange(ws) / ws - 0.5
    y1 = np.arange(hs) / hs - 0.5
    sel = table & (dch < chroma_tol)
    ls = np.log(np.maximum(ss, 1e-6))
    iy, ix = np.nonzero(sel)
    sub = max(1, len(iy) // 3000)
    iy, ix = iy[::sub], ix[::sub]  # (a sample of about 3000 table pixels fits the field)
    xs, ys = x1[ix], y1[iy]
    A = np.stack([np.ones_like(xs), xs, ys, xs * xs, xs * ys, ys * ys], axis=-1)
    bvec = ls[iy, ix]
    w = np.ones(len(bvec))
    coef = np.zeros(6)
    if len(bvec) >= 12:
        for it in range(3):
            Aw = A * w[:, None]
            coef = np.linalg.solve(Aw.T @ A + 1e-6 * np.eye(6), Aw.T @ bvec)
            if it == 2:
                break  # (the last fit's outliers would weigh nothing)
            r = np.abs(bvec - A @ coef)
            w = (r < max(3 * 1.48 * float(np.median(r)), 0.05)).astype(float)
    X, Y = x1[None, :], y1[:, None]
    dl = ls - (coef[0] + coef[1] * X + coef[2] * Y + coef[3] * (X * X) + coef[4] * (X * Y) + coef[5] * (Y * Y))
    glare = (dl > 0) & (_plane_distance(planes, (tch + (1 / 3 - tch) * 0.5).astype(ch.dtype)) < dch)
    odd = ~cards & (ss > 1e-4) & ((dch > chroma_tol) | (np.abs(dl) > level_tol)) & ~(glare & (dch < 0.12))
    odd = cv2.morphologyEx(odd.astype(np.uint8), cv2.MORPH_OPEN, np.ones((2, 2), np.uint8))
    n, labels, stats, _ = cv2.connectedComponentsWithStats(odd, connectivity=8)
    keep = np.zeros(n, bool)
    keep[1:] = stats[1:, cv2.CC_STAT_AREA] * FOREIGN_STEP_MM ** 2 >= min_area_mm2
    # An arm reaches in from outside the play area: a hand's region touches its edge
    # (a glare spot, a shadow's core or a stray object inside does not).
    x0, y0 = stats[:, 0], stats[:, 1]
    x1, y1 = x0 + stats[:, 2], y0 + stats[:, 3]
    keep &= (x0 <= 1) | (y0 <= 1) | (x1 >= size[0] - 1) | (y1 >= size[1] - 1)
    mask = keep[labels] | _arms_by_level(dkf, size, min_area_mm2, ch, large_mm2=card_mm2)
    if mask.any():
        mask = cv2.dilate(mask.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)
    shine = (dl > 0.3) & (glare | cards) & (_plane_distance(planes, np.full(3, 1 / 3, np.float32)) < 0.12)
    return mask, shine


def _cell_fractions(mask: np.ndarray, k: int, integral: np.ndarray | None = None) -> np.ndarray:
    """The fraction of each k x k cell of a 0/1 image that is set: ``cv2.resize`` of the
    image as float32 to (W // k, H // k) with INTER_AREA. From the image's integral
    image when it is given and k divides both sides (the cells tile the image; counts
    of 0/1 pixels times 1 / k^2 are exact: the same values), without a float copy."""
    H, W = mask.shape
    if integral is None or H % k or W % k:
        return cv2.resize(mask.astype(np.float32), (W // k, H // k), interpolation=cv2.INTER_AREA)
    c = integral[::k, ::k]
    counts = c[1:, 1:] - c[:-1, 1:] - c[1:, :-1] + c[:-1, :-1]
    return counts.astype(np.float32) * np.float32(1 / (k * k))


def _plane_distance(planes: tuple[np.ndarray, ...], ref: np.ndarray) -> np.ndarray:
    """Euclidean distance of three planes' values from ``ref`` (the norm over the last
    axis of the merged image minus ``ref``, without numpy's slow short last axis)."""
    d = [p - c for p, c in zip(planes, ref)]
    return np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])


def _arms_by_level(dark_frac: np.ndarray, size: tuple[int, int], min_area_mm2: float,
                   chroma: np.ndarray | None = None, chroma_tol: float = 0.04,
                   large_mm2: float | None = None) -> np.ndarray:
    """Arms told apart from the table by brightness alone: what reaches in over the play
    area's edge on the other side of the card-face threshold from the table.

    No card lies at the play area's edge (R-BLOXO-2 keeps the tableau inside it): when
    most of the edge is as dark as a card face, the table is that dark, and a large
    bright region reaching in over the edge is an arm (shapes are small and ringed by
    face). :func:`foreign_mask`'s colour test cannot
    see these when the table is darker than the card-face threshold: it then takes the
    whole table for card faces."""
    W, H = size
    border = np.zeros((H, W), bool)
    border[0, :] = border[-1, :] = border[:, 0] = border[:, -1] = True
    dark = dark_frac > 0.5
    edge_dark = float(dark[border].mean())
    if edge_dark <= 0.5:
        # a light table: a dark region at its edge is as likely the table in a one-sided
        # light's shadow as a dark sleeve; the colour test of foreign_mask judges it
        return np.zeros((H, W), bool)
    region = dark_frac < 0.1
    n, labels, stats, _ = cv2.connectedComponentsWithStats(region.astype(np.uint8), connectivity=8)
    touch = np.zeros(n, bool)
    touch[np.unique(labels[border & region])] = True
    touch[0] = False
    area_mm2 = stats[:, cv2.CC_STAT_AREA] * FOREIGN_STEP_MM ** 2
    keep = touch & (area_mm2 >= min_area_mm2)
    # Inside the area, a bright region larger than a whole card is no card's shape
    # either (shapes are small and ringed by face): the lit part of an arm whose part
    # nearer the edge, in a one-sided light's shadow, is as dark as the table.
    inner = ~touch & (area_mm2 >= large_mm2) if large_mm2 else np.zeros(n, bool)
    inner[0] = False
    if chroma is not None and (keep.any() or inner.any()):
        # the table under a one-sided light: dark at one edge, lit at another, but of
        # one colour throughout; an arm is of another colour
        tch = np.median(chroma[border & dark], axis=0)
        white = np.full(3, 1 / 3)
        for j in np.nonzero(keep | inner)[0]:
            c = np.median(chroma[labels == j], axis=0)
            off = float(np.linalg.norm(c - tch)) > chroma_tol
            if inner[j]:
                # a glare spot is the table's colour mixed with the light's white
                off = off and float(segment_distance(c[None], tch, white)[0]) > chroma_tol
            keep[j] = off
    return keep[labels]


# ------------------------------------------------------------------------- cards


@dataclass
class Blob:
    x: float  # board mm, centroid
    y: float
    area_mm2: float
    colour: str | None = None
    colour_dist: float = 9.0
    colour_margin: float = 0.0
    shape: str | None = None
    shape_dist: float = 99.0
    shape_margin: float = 0.0
    partial: bool = False  # cut by something (too small, touching the face edge)

    @property
    def confidence(self) -> float:
        c = _unit(self.colour_margin / 0.08) * _unit(1.5 - self.colour_dist / 0.12)
        s = _unit(self.shape_margin / 0.08)
        return float(min(c, s, 1.0))


def _unit(v: float) -> float:
    """``min(max(v, 0.0), 1.0)`` (the same value, NaN included), without two calls."""
    return 0.0 if v < 0.0 else 1.0 if v > 1.0 else v


@dataclass
class Card:
    centre: tuple[float, float]  # board mm
    rotation_deg: float  # from the nearest multiple of 90
    quads: list[Blob]  # NW, NE, SE, SW in table coordinates
    at: tuple[int, int] | None = None  # nearest grid position
    offset_mm: float = 0.0
    status: str = "ok"  # "ok", "off-grid", "on-top"
    covers: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class CardsResult:
    cards: list[Card]  # on the grid, fully read
    misplaced: list[Card]
    partial: dict[tuple[int, int], int]  # grid position -> visible shapes (occluded cards)
    blobs: list[Blob]
    white_level: float = 1.0
    foreign: np.ndarray | None = None  # bool at FOREIGN_STEP_MM: neither table nor card (hands, arms)
    glare: np.ndarray | None = None  # bool at FOREIGN_STEP_MM: glare spots
    _integrals: dict = field(default_factory=dict, repr=False, compare=False)

    def foreign_at(self, x: float, y: float, half: float, which: str = "foreign") -> float:
        """Fraction of the square (centre x, y mm, half side) covered by something
        foreign (``which="glare"``: by glare)."""
        m = self.foreign if which == "foreign" else self.glare
        if m is None:
            return 0.0
        sums = self._integrals.get(which)
        if sums is None:  # asked for every card: summed once
            sums = self._integrals[which] = cv2.integral(m.view(np.uint8))
        return _square_cover(sums, x, y, half)


def _blocks(warp: np.ndarray, block: int = 8) -> np.ndarray:
    """Grey block means of a BGR warp (int16, ``block`` px per block, the last partial
    row and column dropped)."""
    g = cv2.cvtColor(warp, cv2.COLOR_BGR2GRAY)
    h, w = g.shape
    return cv2.resize(g[: h // block * block, : w // block * block], (w // block, h // block),
                      interpolation=cv2.INTER_AREA).astype(np.int16)


@dataclass
class _Increment:
    """What a partial read of the next changed frame needs from the last full read."""

    version: int
    gains: np.ndarray
    level: float
    thr: float
    face_level: float
    weakest: float
    blocks: np.ndarray
    dark: np.ndarray
    blobs: list
    pairs: list  # (blob, chromaticity) of every shape read, for reuse
    result: CardsResult
    local: bool = True  # the full read's local look found shapes (see _read_changed)
    run: int = 0


class CardReader:
    """Reads every Bloxo card of a frame; see the module docstring."""

    def __init__(self, view: Any, survey: dict | None, *, grid_origin_mm: tuple[float, float] | None = None,
                 off_grid_mm: float | None = None, off_grid_deg: float | None = None) -> None:
        self.view = view
        kit = view.kit
        self.kit = kit
        o = kit.bloxo
        self.card = o.card_mm
        self.quad = o.quadrant_mm
        self.shape_mm = o.shape_mm
        w, h = o.play_area_mm
        # The start card [0, 0] lies at the play area's centre (the four markers frame
        # the play area around the tableau's start).
        self.origin = np.array(grid_origin_mm if grid_origin_mm is not None else (w / 2, h / 2), float)
        # Beyond these a card is "far off the grid": half-way to being ambiguous.
        self.off_grid_mm = off_grid_mm if off_grid_mm is not None else max(3 * o.max_offset_mm, self.quad * 0.3)
        self.off_grid_deg = off_grid_deg if off_grid_deg is not None else max(3 * o.max_rotation_deg, 12.0)
        self.colour_names = list(o.colors)
        self.refs = ColourRefs.from_survey(survey, self.colour_names, o.colors)
        self.expected_shape = dict(o.shapes)
        shape_names = sorted(set(o.shapes.values()))
        self.shapes = shape_templates(tuple(shape_names), float(self.shape_mm), COARSE_PPM)
        self.blur_choice: np.ndarray | None = None  # candidate blurs that fit the last shapes read
        gains0 = (survey or {}).get("white_balance", {}).get("gains")
        self.white = WhiteReference(paper_points(kit, "bloxo"), initial=gains0)
        self.stable = StableWarp(view, COARSE_PPM)
        self.reuse = True  # reuse an unchanged frame's or blob's reading from the previous frame
        self.partial_reads = 0  # changed frames read only around the change (see _read_changed)
        self.looks_skipped = 0  # segmentations whose further looks were not needed (see _explained)
        self._grouped: tuple[CardsResult, list[Blob], set[int]] | None = None  # set by _explained
        self._local_found = False  # the last _segment's local look found shapes (see _read_changed)
        self._inc: _Increment | None = None
        self._light: tuple[np.ndarray, np.ndarray, float] | None = None  # see _warp_and_light
        self._warp_blocks: np.ndarray | None = None  # this frame's blocks, if _read_changed made them
        self._grid: tuple | None = None  # see _grid_boxes
        # the weakest card colour's level and the face threshold at nominal light (see
        # dark_threshold): constants of the kit and the survey
        self._weakest = float(self.refs.linear.sum(axis=1).min())
        face = float(srgb_to_linear(np.array(kit.bloxo.face, float)).sum())
        self._dark_base = max(face, 1e-3) ** 0.55 * self._weakest ** 0.45
        self.same = SameFrame()
        self._last: tuple[tuple[int, int], CardsResult] | None = None
        self._previous: list[tuple[Blob, np.ndarray]] = []
        self._prev_version = -1
        r = self.shape_mm / 2
        self.area_lo = 0.45 * r * r  # the thinnest star still has about 1.3 r^2
        self.area_hi = 1.35 * math.pi * r * r

    def dark_threshold(self, level: float) -> float:
        """Linear-light sum separating the card's black face from its shapes, under this
        frame's light: between the face and the darkest card colour, nearer the face (a
        dark table must stay above it)."""
        return self._dark_base * level

    def read(self, frame_bgr: np.ndarray, grey: np.ndarray | None = None) -> CardsResult:
        """The cards of a frame; ``grey``: the frame in grey, if the caller has it (the
        unchanged-frame test looks at grey only)."""
        view = self.view
        seen = frame_bgr if grey is None else grey
        if self.reuse and self._last is not None and self._last[0] == (view.version, self.stable.version) \
                and self.same.same(seen):
            return self._last[1]  # the very frame read last time: the same cards
        self._light = self._warp_blocks = None
        result = self._read_changed(frame_bgr) if self.reuse else None
        self.partial_reads += result is not None
        if result is None:
            result = self._read(frame_bgr)
        self._light = self._warp_blocks = None
        if self.reuse:
            self.same.keep(seen)
            self._last = ((view.version, self.stable.version), result)
        else:  # nothing is reused: nothing to keep for the next frame
            self.same.forget()
            self._last = None
        return result

    def _warp_and_light(self, frame_bgr: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """The frame's top-down warp, white gains (float32) and paper level, made once per
        frame: a changed frame that turns out to need a full read after all has been
        warped and balanced by :meth:`_read_changed` already."""
        if self._light is None:
            warp = self.stable.warp(frame_bgr)
            gains = self.white.update(frame_bgr, self.view, self.stable.version).astype(np.float32)
            self._light = (warp, gains, self.white.level)
        return self._light

    def _read(self, frame_bgr: np.ndarray) -> CardsResult:
        warp, gains, level = self._warp_and_light(frame_bgr)
        linb = cv2.LUT(warp, _LUT3)  # linear, BGR order
        if self._prev_version != self.stable.version or not self.reuse:
            self._previous = []
        self._prev_version = self.stable.version
        self._prev_xy = np.array([[p[0].x, p[0].y] for p in self._previous]) if self._previous else np.zeros((0, 2))
        self._current: list[tuple[Blob, np.ndarray]] = []
        self._pending: list[tuple[Blob, tuple[float, float], float, float]] = []
        s = cv2.transform(linb, gains[::-1].reshape(1, 3).copy())  # balanced r + g + b
        # a 3x3 mean: sensor noise, amplified by a strong white balance, must not punch
        # holes into the black face
        thr = self.dark_threshold(level)
        sb = cv2.blur(s, (3, 3))
        dark = sb < thr
        face_level = float(np.median(s[dark][:: 7])) if dark.any() else 0.0
        # The face is often brighter than nominal (a strong white balance lifts its
        # noise, JPEG lifts its blacks): put the threshold halfway (geometrically)
        # between the face as measured and the weakest card colour.
        weakest = self._weakest * level
        thr2 = math.sqrt(max(face_level, 1e-6) * weakest)
        if thr2 > thr:
            thr = min(thr2, 0.5 * weakest)
            dark = sb < thr
        # shapes are looked for only around the card faces (see _shape_window)
        x0, y0, x1, y1 = self._shape_window(sb, max(thr, self._look_threshold(thr, weakest)))
        self._offset = (x0, y0)
        ws = s[y0:y1, x0:x1]
        self._grouped = None  # the first look's grouping, if _explained keeps it
        # the face mask's integral image, made once: the first look's ring tests, the
        # hands' face fractions and the covered positions all sum the face over boxes
        dark_sum = cv2.integral(dark.view(np.uint8))
        blobs = self._segment(linb[y0:y1, x0:x1], ws, sb[y0:y1, x0:x1], dark[y0:y1, x0:x1], thr, face_level, weakest,
                              gains, dark_sum=dark_sum)
        self._previous = self._current if self.reuse else []
        self._read_shapes(ws)
        result = self._assemble(blobs, level, self._grouped)
        result.foreign, result.glare = foreign_mask(linb, s, dark, gains, card_mm2=self.kit.bloxo.card_mm ** 2,
                                                    dark_sum=dark_sum)
        self._covered_unread(result, dark, dark_sum)
        self._inc = _Increment(self.stable.version, gains.copy(), level, thr, face_level, weakest,
                               _blocks(warp, self.INC_BLOCK) if self._warp_blocks is None else self._warp_blocks,
                               dark, blobs, list(self._previous), result,
                               local=self._local_found) if self.reuse else None
        return result

    # A changed frame usually differs from the last one read in one place: a card put
    # down or taken up. Its warp is compared, in blocks, with the warp the current
    # reading comes from; when the light is the same (white gains and level within
    # INC_LIGHT) and the change is small, away from the play area's edge (where arms
    # reach in), only a window around the change is segmented again, with the
    # thresholds of the last full read: shapes whose centre lies within INC_MARGIN px
    # of a changed block are replaced by what is read there now (every computation
    # that reads a shape looks no farther than INC_MARGIN px from its centre, and the
    # window reaches INC_MARGIN px beyond them); all others stay as read. The hand
    # and glare masks are kept (a hand changes far more than a card). Anything else
    # (new light, a large change, a change at the edge, INC_MAX_RUN partial reads in
    # a row) is read in full.
    INC_BLOCK = 8  # px of the warp per compared block
    INC_LEVEL = 10  # grey levels (0..255) a block's mean must move to count as changed
    INC_MARGIN = 50
    INC_EDGE = 24  # px: a change this near the play area's edge is read in full
    INC_MAX_AREA = 0.4  # of the warp: a larger window is read in full
    INC_LIGHT = 0.02
    INC_MAX_RUN = 30

    def _read_changed(self, frame_bgr: np.ndarray) -> CardsResult | None:
        """The reading of a frame that changed in one small place (see above), or None
        when it must be read in full."""
        st = self._inc
        if st is None or st.version != self.stable.version or st.run >= self.INC_MAX_RUN:
            return None
        warp, gains, level = self._warp_and_light(frame_bgr)
        if st.version != self.stable.version:
            return None
        if abs(level / st.level - 1) > self.INC_LIGHT or float(np.abs(gains / st.gains - 1).max()) > self.INC_LIGHT:
            return None
        blocks = self._warp_blocks = _blocks(warp, self.INC_BLOCK)
        changed = np.abs(blocks - st.blocks) > self.INC_LEVEL
        if not changed.any():
            return st.result
        H, W = warp.shape[:2]
        b = self.INC_BLOCK
        ys, xs = np.nonzero(changed)
        cx0, cy0, cx1, cy1 = int(xs.min()) * b, int(ys.min()) * b, (int(xs.max()) + 1) * b, (int(ys.max()) + 1) * b
        e = self.INC_EDGE
        if cx0 < e or cy0 < e or cx1 > W - e or cy1 > H - e:
            return None
        m = self.INC_MARGIN
        ix0, iy0, ix1, iy1 = cx0 - m, cy0 - m, cx1 + m, cy1 + m  # shapes re-read: centres in here
        x0, y0, x1, y1 = max(ix0 - m, 0), max(iy0 - m, 0), min(ix1 + m, W), min(iy1 + m, H)  # the window
        if (x1 - x0) * (y1 - y0) > self.INC_MAX_AREA * H * W:
            return None
        linb = cv2.LUT(warp[y0:y1, x0:x1], _LUT3)
        s = cv2.transform(linb, gains[::-1].reshape(1, 3).copy())
        sb = cv2.blur(s, (3, 3))
        dark_w = sb < st.thr
        keep_old = [p for p in st.pairs
                    if not (ix0 <= p[0].x * COARSE_PPM - 0.5 < ix1 and iy0 <= p[0].y * COARSE_PPM - 0.5 < iy1)]
        self._previous = st.pairs
        self._prev_xy = np.array([[p[0].x, p[0].y] for p in st.pairs]) if st.pairs else np.zeros((0, 2))
        self._current = []
        self._pending = []
        self._offset = (x0, y0)
        # The local look (see _local_dark) only where the full read needed it: the blur
        # that joins bright shapes is the whole frame's, and a partial read keeps its light.
        found = self._segment(linb, s, sb, dark_w, st.thr, st.face_level, st.weakest, gains, local_look=st.local)
        new_pairs = [p for p in self._current
                     if ix0 <= p[0].x * COARSE_PPM - 0.5 < ix1 and iy0 <= p[0].y * COARSE_PPM - 0.5 < iy1]
        ids = {id(p[0]) for p in new_pairs}
        self._pending = [q for q in self._pending if id(q[0]) in ids]
        self._read_shapes(s, estimate_blur=False)
        kept = {id(p[0]) for p in keep_old}
        blobs = [bb for bb in st.blobs if id(bb) in kept] + [bb for bb in found if id(bb) in ids]
        result = self._assemble(blobs, level)
        result.foreign, result.glare = st.result.foreign, st.result.glare
        # the face mask and the reference blocks follow what was read again
        ja, ia, jb, ib = max(ix0, 0), max(iy0, 0), min(ix1, W), min(iy1, H)
        dark = st.dark.copy()
        dark[ia:ib, ja:jb] = dark_w[ia - y0:ib - y0, ja - x0:jb - x0]
        self._covered_unread(result, dark)
        st.blocks[ia // b:-(-ib // b), ja // b:-(-jb // b)] = blocks[ia // b:-(-ib // b), ja // b:-(-jb // b)]
        st.dark, st.blobs, st.pairs, st.result = dark, blobs, keep_old + new_pairs, result
        st.run += 1
        self._previous = st.pairs
        return result

    def _covered_unread(self, result: CardsResult, dark: np.ndarray, dark_sum: np.ndarray | None = None) -> None:
        """Grid positions covered by a black card face but not read: a card is there
        (under glare, blur, a hand): occluded, never silently missing. ``dark_sum``:
        the integral image of ``dark``, if made already."""
        read = {c.at for c in result.cards}
        gx, gy, face_box, glare_box = self._grid_boxes()
        glare = result.glare
        # every grid position at once (as _box_mean and _square_cover, one per position)
        fd = _box_means(cv2.integral(dark.view(np.uint8)) if dark_sum is None else dark_sum, *face_box)
        gl = _box_means(cv2.integral(glare.view(np.uint8)), *glare_box) if glare is not None else np.zeros(len(gx))
        # glare can wash a whole card out: what lies under it is not known
        hit = ~np.isnan(fd) & ((fd > 0.3) | (np.nan_to_num(gl) > np.where(fd > 0.03, 0.03, 0.05)))
        for x, y in zip(gx[hit].tolist(), gy[hit].tolist()):
            if (x, y) not in read and (x, y) not in result.partial:
                result.partial[(x, y)] = 0

    def _grid_boxes(self) -> tuple[np.ndarray, np.ndarray, tuple, tuple]:
        """Every grid position of the play area (gx, gy) with the boxes
        :meth:`_covered_unread` measures there (rows i0, i1, columns j0, j1): the inner
        0.8 of the card square in warp pixels, the card square in foreign-mask cells.
        They depend only on the kit and the grid origin: made once."""
        if self._grid is None:
            half = self.card / 2
            w_mm, h_mm = self.kit.bloxo.play_area_mm
            nx = int((w_mm / 2) // self.card) + 1
            ny = int((h_mm / 2) // self.card) + 1
            gx, gy = (g.ravel() for g in np.meshgrid(np.arange(-nx, nx + 1), np.arange(-ny, ny + 1), indexing="ij"))
            cx, cy = float(self.origin[0]) + gx * self.card, float(self.origin[1]) + gy * self.card
            step = FOREIGN_STEP_MM
            self._grid = (gx, gy, ((cy - half * 0.8) * COARSE_PPM, (cy + half * 0.8) * COARSE_PPM,
                                   (cx - half * 0.8) * COARSE_PPM, (cx + half * 0.8) * COARSE_PPM),
                          ((cy - half) / step, (cy + half) / step, (cx - half) / step, (cx + half) / step))
        return self._grid

    def _segment(self, linb: np.ndarray, s: np.ndarray, sb: np.ndarray, dark: np.ndarray, thr: float,
                 face_level: float, weakest: float, gains: np.ndarray, local_look: bool = True,
                 dark_sum: np.ndarray | None = None) -> list[Blob]:
        """The shapes of a (part of the) warp: bright blobs ringed by black face, read
        (colour, outline queued for :meth:`_read_shapes`) or reused from the previous
        frame. Pixel coordinates are of the arrays given, offset by ``self._offset``.
        ``local_look``: whether the fourth look (:meth:`_local_dark`) may run; whether it found
        shapes is left in ``self._local_found``. ``dark_sum``: the integral image of the
        face mask of the whole warp that ``dark`` is the part at ``self._offset`` of, if
        made already."""
        self._local_found = False
        view = self.view
        # Shapes are the holes of the black card faces: bright blobs wholly ringed by
        # black. The table, hands and glare on the table are not ringed by black.
        # An opening of the bright part first: the necks that blur draws between a
        # shape and the table or a neighbouring card's shape (where cards lie a few mm
        # off toward each other) are cut; every shape keeps a core.
        # Under blur the thin black band between a shape and its card's edge can fade
        # above any threshold, joining the shape to the table: the card faces with all
        # they enclose (a closing wider than a shape) bound where shapes can be, and
        # what lies outside them rings a shape like its face does.
        closed = cv2.morphologyEx(dark.view(np.uint8), cv2.MORPH_CLOSE, _DISK7)
        n, labels, stats, cents = cv2.connectedComponentsWithStats(cv2.compare(closed, 0, cv2.CMP_EQ), connectivity=4)
        blobs: list[Blob] = []
        H, W = dark.shape
        area = stats[:, cv2.CC_STAT_AREA] / COARSE_PPM ** 2
        ww, hh = stats[:, cv2.CC_STAT_WIDTH], stats[:, cv2.CC_STAT_HEIGHT]
        single = (area >= 0.5 * self.area_lo) & (area <= self.area_hi * 2.0) & (ww <= 2 * hh + 3) & (hh <= 2 * ww + 3)
        # Two shapes of neighbouring cards lying close (both cards off by a few mm the
        # same way) blur into one blob at the face threshold: split such blobs at half
        # their own brightness.
        merged = ~single & (area > self.area_hi) & (area <= self.area_hi * 6.0)
        merged[0] = False
        # every single blob's ring test and colour statistics at once (see _prepare)
        ids = np.nonzero(single)[0]
        prep = self._prepare(ids[ids != 0], labels, stats, cents, dark, linb, s, gains, face_level, dark_sum)
        near = self._nearest_to_prepared(prep)
        outlines: list = []
        boxes = stats[:, :4].tolist()  # (plain Python values: the loop runs once per blob)
        for i in np.nonzero(single | merged)[0].tolist():
            if i == 0:
                continue
            x0, y0, w, h = boxes[i]
            if single[i]:
                if i in prep:
                    self._accept(blobs, i, prep[i], (x0, y0, w, h), face_level, outlines, near.get(i))
                continue
            m = 3
            xa, ya, xb, yb = max(x0 - m, 0), max(y0 - m, 0), min(x0 + w + m, W), min(y0 + h + m, H)
            comp = labels[ya:yb, xa:xb] == i
            local = s[ya:yb, xa:xb]
            t_local = 0.5 * float(np.percentile(local[comp], 90))
            sub_dark = dark[ya:yb, xa:xb] | (comp & (local < t_local))
            k, sl, sst, _ = cv2.connectedComponentsWithStats((comp & ~sub_dark).astype(np.uint8), connectivity=8)
            for j in range(1, k):
                sx, sy, sw, sh = sst[j, :4]
                ar = sst[j, cv2.CC_STAT_AREA] / COARSE_PPM ** 2
                if ar < 0.5 * self.area_lo or ar > self.area_hi * 1.6:
                    continue
                full = np.zeros((H, W), np.int32)  # a private label image for this piece
                full[ya:yb, xa:xb] = np.where(sl == j, i, 0)
                dfull = dark.copy()
                dfull[ya:yb, xa:xb] = sub_dark
                self._try_blob(blobs, i, full, (xa + sx, ya + sy, sw, sh), dfull, linb, s, gains, face_level)
        self._trace(s, labels, outlines, face_level)
        # Second look at a higher threshold (half the weakest colour): under blur a
        # shape near a card's edge can stay joined to the table at the face threshold.
        # Third look: what lies outside the card faces counts as face (see above).
        # Neither is needed where the first look's cards explain all the face.
        if self._explained(blobs, dark):
            self.looks_skipped += 1
            return blobs
        hi_thr = self._look_threshold(thr, weakest)
        k = self._face_close_px()
        faces = cv2.morphologyEx(dark.astype(np.uint8), cv2.MORPH_CLOSE, cv2.getStructuringElement(cv2.MORPH_RECT, (k, k)))
        outside = ~cv2.erode(faces, _DISK3).astype(bool)
        looks = [sb < hi_thr] if hi_thr > thr else []
        if outside.any():
            looks.append(dark | outside)
        local_dark = self._local_dark(sb, thr, face_level) if local_look else None
        if local_dark is not None:
            looks.append(local_dark)
        for dark2 in looks:
            n_before = len(blobs)
            closed2 = cv2.morphologyEx(dark2.astype(np.uint8), cv2.MORPH_CLOSE, _DISK7).astype(bool)
            looked = _Components((~closed2).view(np.uint8), 0.5 * self.area_lo * COARSE_PPM ** 2,
                                 self.area_hi * 1.6 * COARSE_PPM ** 2)
            labels2, cents2 = looked.labels, looked.centroids
            have = np.array([[b.x, b.y] for b in blobs]) if blobs else np.zeros((0, 2))
            cand = looked.ids
            if len(cand) and len(have):
                x, y = self._mm(cents2[cand, 0], cents2[cand, 1])
                near = np.hypot(have[None, :, 0] - x[:, None], have[None, :, 1] - y[:, None]).min(axis=1)
                cand = cand[near >= self.quad * 0.4]
            stats2 = looked.stats(cand)
            prep2 = self._prepare(cand, labels2, stats2, cents2, dark2, linb, s, gains, face_level)
            near = self._nearest_to_prepared(prep2)
            outlines = []
            for i in cand:
                if i in prep2:
                    self._accept(blobs, i, prep2[i], tuple(stats2[i, :4]), face_level, outlines, near.get(i))
            self._trace(s, labels2, outlines, face_level)
            if dark2 is local_dark:
                self._local_found = len(blobs) > n_before  # (see _read_changed)
        return blobs

    # Fourth look: a pixel is face when it rises above the face by less than
    # LOCAL_FACE_FRACTION of the brightest point within a shape's width (see _local_dark).
    LOCAL_FACE_FRACTION = 0.4

    def _local_dark(self, sb: np.ndarray, thr: float, face_level: float) -> np.ndarray:
        """Face relative to the shapes around it: under strong defocus a bright shape
        (a yellow disc) spills so much light over the narrow face between it and its
        neighbours, or the card's edge, that no fixed threshold that still keeps the
        dim shapes (green stars) finds that face: the bright shapes merge into chains
        or into the table. Everything that rises above ``face_level`` by less than
        :attr:`LOCAL_FACE_FRACTION` of the brightest point within a shape's diameter
        (a blurred outline lies at half its shape's peak) is face there, besides what
        ``thr`` makes face everywhere."""
        d = int(round(self.shape_mm * COARSE_PPM)) | 1
        peak = cv2.dilate(sb, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (d, d)))
        f = np.float32(self.LOCAL_FACE_FRACTION)
        return (sb < thr) | (sb < f * peak + (1 - f) * np.float32(face_level))

    # The further looks are skipped when the first look's cards explain all the face
    # (see _explained): the face may reach EXPLAINED_MARGIN_MM beyond a card's fitted
    # square (print, blur); face pixels outside every card beyond EXPLAINED_TOLERANCE
    # of a quadrant's area (far less than the face of any card missed) mean "look again".
    EXPLAINED_MARGIN_MM = 3.0
    EXPLAINED_TOLERANCE = 0.1

    def _explained(self, blobs: list[Blob], dark: np.ndarray) -> bool:
        """Is there nothing left for the further looks of :meth:`_segment` to find?

        They find shapes the first look missed (joined to the table by blur). A shape
        missed leaves its card with fewer than four shapes (a partial grid position)
        or, all four missed, black face without a card. So when the first look's
        shapes make whole cards on the grid only (no partial position, no misplaced
        card, any other blob inside a card's box: table seen between cards) and every
        face pixel (``dark``) lies within these cards' boxes (the box around each
        card's square as fitted, grown by :attr:`EXPLAINED_MARGIN_MM`), the looks could
        only add blobs inside whole cards: they are skipped (they cost about as much as
        the first look). Anything else is looked at again, as before."""
        self._grouped = None
        if not blobs:
            return False
        grouped = self._group(blobs)
        res = grouped[0]
        if res.partial or res.misplaced:
            return False
        H, W = dark.shape
        ox, oy = self._offset
        cover = np.zeros((H, W), bool)
        for c in res.cards:
            # the box around the card's square (as fitted: centre, rotation) grown by the
            # margin, in pixels of the segmented part of the warp (the inverse of _mm)
            a = math.radians(c.rotation_deg)
            r = (self.card / 2 * (abs(math.cos(a)) + abs(math.sin(a))) + self.EXPLAINED_MARGIN_MM) * COARSE_PPM
            u, v = c.centre[0] * COARSE_PPM - 0.5 - ox, c.centre[1] * COARSE_PPM - 0.5 - oy
            i0, i1 = max(int(v - r), 0), max(int(math.ceil(v + r)) + 1, 0)
            j0, j1 = max(int(u - r), 0), max(int(math.ceil(u + r)) + 1, 0)
            cover[i0:i1, j0:j1] = True
        used = {id(b) for c in res.cards for b in c.quads}
        for b in blobs:
            if id(b) not in used:
                u, v = int(round(b.x * COARSE_PPM - 0.5 - ox)), int(round(b.y * COARSE_PPM - 0.5 - oy))
                if not (0 <= v < H and 0 <= u < W and cover[v, u]):
                    return False
        unexplained = int(np.count_nonzero(dark)) - int(np.count_nonzero(cover & dark))
        if unexplained > self.EXPLAINED_TOLERANCE * (self.quad * COARSE_PPM) ** 2:
            return False
        self._grouped = grouped  # the shapes' places: what _assemble of these blobs starts from
        return True

    @staticmethod
    def _look_threshold(thr: float, weakest: float) -> float:
        """The second look's face threshold (half the weakest colour's level), or
        ``thr`` when that is not clearly higher (no second look)."""
        hi_thr = 0.5 * weakest
        return hi_thr if hi_thr > thr * 1.3 else thr

    def _shape_window(self, sb: np.ndarray, thr: float) -> tuple[int, int, int, int]:
        """The part of the warp (x0, y0, x1, y1) that :meth:`_segment` must see: the
        box of everything darker than ``thr`` (the highest face threshold it uses),
        grown by more than the reach of its face closing (k - 1 px for a k-px square).

        Every shape is ringed by face, so it lies inside that box. What lies beyond it
        is bare table: one frame around the box, too large to pass for a shape, as the
        table is in the whole warp; the closings see the same neighbourhoods of face.
        Cropping saves the work on the bare table around a tableau. Where the grown box
        reaches the warp's edge, or its frame is not clearly larger than any shape
        (a kit of large shapes), the whole warp is segmented."""
        H, W = sb.shape
        x, y, w, h = cv2.boundingRect((sb < thr).view(np.uint8))
        m = self._face_close_px() + 1
        x0, y0, x1, y1 = x - m, y - m, x + w + m, y + h + m
        frame = (x1 - x0) * (y1 - y0) - w * h
        if w == 0 or x0 < 0 or y0 < 0 or x1 > W or y1 > H or frame <= 6 * self.area_hi * COARSE_PPM ** 2:
            return 0, 0, W, H
        return x0, y0, x1, y1

    def _face_close_px(self) -> int:
        """Side of the square that closes the card faces over their shapes (a shape
        and a little more), px."""
        return int(round((self.shape_mm + 6) * COARSE_PPM)) | 1

    def _mm(self, u: Any, v: Any) -> tuple[Any, Any]:
        """Board mm of pixel coordinates of the part of the warp being segmented."""
        return self.view.mm_of_rectified(np.asarray(u) + self._offset[0], np.asarray(v) + self._offset[1], COARSE_PPM)

    def _prepare(self, ids: np.ndarray, labels: np.ndarray, stats: np.ndarray, cents: np.ndarray,
                 dark: np.ndarray, linb: np.ndarray, s: np.ndarray, gains: np.ndarray,
                 face_level: float, dark_sum: np.ndarray | None = None) -> dict[int, tuple]:
        """:meth:`_try_blob`'s tests and measurements for many components of ``labels``
        at once.

        The ring of black face: the blob's box grown by 3 px holds at least 45% of face
        outside the blob (the box holds the whole component, and no face pixel lies in
        a component: components are taken outside the closing of the face mask).
        Returns, per accepted component: centroid (warp px), area, the chromaticity of
        its mean colour (to recognise an unchanged print; None when :attr:`reuse` is off),
        from its brighter half the colour (saturation and :meth:`ColourRefs.classify`)
        and the brightness ``top``, the centroid in board mm, and whether its outline is
        certainly whole (see below).

        :func:`outline_extents` makes a shape partial when its outline (at half height
        ``mid`` between ``face_level`` and ``top``, on the 2x bilinear upsampling) is
        empty, touches the image's edge or is smaller than ``area_lo``. Its outcome is
        known without tracing for most shapes: every pixel of the component whose 3 x 3
        neighbourhood is all brighter than ``mid`` gives four upsampled pixels brighter
        than ``mid`` (bilinear values are weighted means of that neighbourhood, and the
        trace keeps these values: they lie well inside the component's grown
        neighbourhood). So when there are enough such pixels (a few to spare for
        rounding) and the component's box grown by the trace's margin lies inside the
        image, the outline is whole and need not be traced."""
        ids = np.asarray(ids, np.int64)
        if len(ids) == 0:
            return {}
        H, W = dark.shape
        if dark_sum is None:
            integral, oy, ox = cv2.integral(dark.view(np.uint8) if dark.dtype == bool else dark.astype(np.uint8)), 0, 0
        else:  # of the whole warp: the box sums of the part at self._offset are its box sums there
            integral, (ox, oy) = dark_sum, self._offset
        x0, y0, w, h, cnt = (stats[ids, k].astype(np.int64) for k in range(5))
        g = 3
        ia, ib = np.maximum(y0 - g, 0) + oy, np.minimum(y0 + h + g, H) + oy
        ja, jb = np.maximum(x0 - g, 0) + ox, np.minimum(x0 + w + g, W) + ox
        dk = integral[ib, jb] - integral[ia, jb] - integral[ib, ja] + integral[ia, ja]
        outside = (ib - ia) * (jb - ja) - cnt
        ok = (outside > 0) & (dk >= 0.45 * outside)
        acc = ids[ok]
        if len(acc) == 0:
            return {}
        m = len(acc)
        # The accepted components' boxes as windows side by side (each as large as the
        # largest box, moved inside the image where it would stick out: it still holds
        # its whole component): per-window sums instead of one region per blob.
        bx, by, bw, bh = (stats[acc, k].astype(np.int64) for k in range(4))
        rh, rw = int(bh.max()), int(bw.max())
        ys, xs = np.minimum(by, H - rh), np.minimum(bx, W - rw)
        comp = _side_by_side(labels, ys, xs, rh, rw) == np.repeat(acc, rw)[None]  # (rh, m rw)
        L = _side_by_side(linb, ys, xs, rh, rw)  # (rh, m rw, 3)
        S = _side_by_side(s, ys, xs, rh, rw)
        # (masks as 0/1 factors: OpenCV multiplies three-channel images far faster than
        # numpy broadcasts over their short last axis)
        inside = comp.astype(np.float32)
        n_px = _window_sums(inside, m)
        if self.reuse:
            rgb = _window_sums(cv2.multiply(L, cv2.merge([inside] * 3)), m)[:, ::-1] / n_px[:, None] * gains
            chroma: Any = rgb / np.maximum(rgb.sum(axis=1, keepdims=True), 1e-9)
        else:  # (only the next frame's reuse, see _reused, looks at it)
            chroma = [None] * m
        mean_s = (_window_sums(cv2.multiply(S, inside), m) / n_px).astype(np.float32)
        core = (comp & (S >= np.repeat(mean_s, rw)[None])).astype(np.float32)
        n_core = np.maximum(_window_sums(core, m), 1)
        col = _window_sums(cv2.multiply(L, cv2.merge([core] * 3)), m)[:, ::-1] / n_core[:, None] * gains
        top = _window_sums(cv2.multiply(S, core), m) / n_core
        # the outline certainly whole (see above): pixels of the component, not on its
        # window's edge (their neighbourhood would reach into the next window), whose
        # 3 x 3 minimum is brighter than mid
        mid = ((top + face_level) / 2).astype(np.float32)
        bright = comp & (cv2.erode(S, _SQUARE3) > np.repeat(mid, rw)[None])
        bright = bright.reshape(rh, m, rw)[1:-1, :, 1:-1]
        n_bright = bright.view(np.uint8).sum(axis=(0, 2), dtype=np.int64)
        mg = OUTLINE_MARGIN_PX
        whole = (n_bright >= self.area_lo * COARSE_PPM ** 2 + 4) & (top > face_level) \
            & (bx >= mg) & (by >= mg) & (bx + bw + mg <= W) & (by + bh + mg <= H)
        area = n_px / COARSE_PPM ** 2
        cls = self.refs.classify_many(col)
        sat = (col.max(axis=1) - col.min(axis=1)) / np.maximum(col.max(axis=1), 1e-9)
        xs, ys = self._mm(cents[acc, 0], cents[acc, 1])
        # (plain Python values at once: indexing numpy per blob costs more than the sums)
        columns = (acc.tolist(), cents[acc, 0].tolist(), cents[acc, 1].tolist(), area.tolist(), chroma,
                   sat.tolist(), cls, top.tolist(), np.asarray(xs).tolist(), np.asarray(ys).tolist(), whole.tolist())
        return {i: (cx, cy, a, ch, (st,) + c, tp, x, y, wh) for i, cx, cy, a, ch, st, c, tp, x, y, wh in zip(*columns)}

    def _nearest_previous(self, xy: np.ndarray) -> list[tuple[int, float]]:
        """For each point (k, 2) in board mm, the previous frame's nearest shape and its
        distance in mm (for :meth:`_reused`), all at once; empty without a previous frame."""
        if not self._previous or not len(xy):
            return []
        d = np.hypot(xy[:, None, 0] - self._prev_xy[None, :, 0], xy[:, None, 1] - self._prev_xy[None, :, 1])
        j = d.argmin(axis=1)
        return list(zip(j.tolist(), d[np.arange(len(xy)), j].tolist()))

    def _nearest_to_prepared(self, prep: dict) -> dict[int, tuple[int, float]]:
        """:meth:`_nearest_previous` of every component :meth:`_prepare` passed."""
        return dict(zip(prep, self._nearest_previous(np.array([prep[i][6:8] for i in prep]).reshape(-1, 2))))

    def _accept(self, blobs: list[Blob], i: int, prep: tuple, box: tuple, face_level: float,
                outlines: list, near: tuple[int, float] | None = None) -> None:
        """A component that passed :meth:`_prepare`: a shape, reused from the previous
        frame if unchanged (``near``: the nearest previous shape, see
        :meth:`_nearest_to_prepared`), else its colour classified and its outline queued in
        ``outlines`` for :meth:`_trace` (as :meth:`_try_blob` and :meth:`_read_blob`)
        unless certainly whole (see :meth:`_prepare`)."""
        cx, cy, area, chroma, col, top, x, y, whole = prep
        b = Blob(x, y, area, partial=area < self.area_lo)
        if near is not None and self._reused(b, chroma, *near):
            blobs.append(b)
            return
        blobs.append(b)
        self._current.append((b, chroma))
        if not self._colour(b, *col):
            return
        # queued for the shapes now, in this order; dropped again if it has no outline
        self._pending.append((b, (cx, cy), top, face_level))
        if not whole:
            outlines.append((b, i, box, top))

    def _reused(self, b: Blob, chroma: np.ndarray, j: int, dist: float) -> bool:
        """The table changes rarely: a blob at the same place (``j``, the previous
        frame's nearest shape, ``dist`` mm away), of the same size and colour as in the
        previous frame is the same print; its reading is reused."""
        p = self._previous[j]
        if dist < 0.7 and abs(p[0].area_mm2 / b.area_mm2 - 1) < 0.04 and np.abs(p[1] - chroma).max() < 0.02:
            old = p[0]
            b.colour, b.colour_dist, b.colour_margin = old.colour, old.colour_dist, old.colour_margin
            b.shape, b.shape_dist, b.shape_margin, b.partial = old.shape, old.shape_dist, old.shape_margin, old.partial
            self._current.append((b, chroma))
            return True
        return False

    def _colour(self, b: Blob, sat: float, idx: int, dist: float, margin: float) -> bool:
        """The blob's colour (saturation and :meth:`ColourRefs.classify` of the balanced
        linear RGB of its brighter half); False for a white-ish blob (glare on the card,
        not a printed colour)."""
        if sat < 0.45:
            b.colour, b.colour_dist, b.colour_margin, b.partial = None, dist, 0.0, True
            return False
        b.colour = self.refs.names[idx] if idx >= 0 else None
        b.colour_dist, b.colour_margin = dist, margin
        return True

    def _trace(self, s: np.ndarray, labels: np.ndarray, outlines: list, face_level: float) -> None:
        """The outlines queued by :meth:`_accept` ((blob, component of ``labels``, box,
        top) each), all at once (:func:`outline_extents`): a shape cut by the warp's edge
        or too small is partial; one without any outline is partial and not read."""
        if not outlines:
            return
        count, edge = outline_extents(s, labels, np.array([o[1] for o in outlines]),
                                      np.array([o[2] for o in outlines]), np.array([o[3] for o in outlines]),
                                      face_level)
        unread = set()
        for (b, *_), c, e in zip(outlines, count, edge):
            if c == 0:
                unread.add(id(b))
            if c == 0 or e or c / (UPSAMPLE * COARSE_PPM) ** 2 < self.area_lo:
                b.partial = True
        if unread:
            self._pending = [p for p in self._pending if id(p[0]) not in unread]

    def _try_blob(self, blobs: list[Blob], i: int, labels: np.ndarray, box: tuple, dark: np.ndarray,
                  linb: np.ndarray, s: np.ndarray, gains: np.ndarray, face_level: float) -> None:
        """Accept component ``i`` of ``labels`` as a shape if black face rings it."""
        H, W = dark.shape
        x0, y0, w, h = (int(v) for v in box)
        m = int(round(7 * COARSE_PPM))
        xa, ya, xb, yb = max(x0 - m, 0), max(y0 - m, 0), min(x0 + w + m, W), min(y0 + h + m, H)
        compb = labels[ya:yb, xa:xb] == i
        comp = compb.view(np.uint8)
        # around the blob (its box grown by 3 px): mostly black face (a blurred outline
        # and a card edge nearby may take some of it)
        g = 3
        ia, ib, ja, jb = max(y0 - g, 0) - ya, min(y0 + h + g, H) - ya, max(x0 - g, 0) - xa, min(x0 + w + g, W) - xa
        dk = dark[ya:yb, xa:xb]
        cnt = int(np.count_nonzero(compb))
        outside = (ib - ia) * (jb - ja) - int(np.count_nonzero(compb[ia:ib, ja:jb]))
        if outside <= 0 or (int(np.count_nonzero(dk[ia:ib, ja:jb])) - int(np.count_nonzero(dk[ia:ib, ja:jb]
                                                                                               & compb[ia:ib, ja:jb]))
                            ) < 0.45 * outside:
            return
        m_ = cv2.moments(comp, True)
        area = cnt / COARSE_PPM ** 2
        x, y = self._mm(m_["m10"] / m_["m00"] + xa, m_["m01"] / m_["m00"] + ya)
        b = Blob(float(x), float(y), float(area), partial=area < self.area_lo)
        col = np.array(cv2.mean(linb[ya:yb, xa:xb], mask=comp)[:3][::-1]) * gains
        chroma = col / max(float(col.sum()), 1e-9)
        near = self._nearest_previous(np.array([[b.x, b.y]]))
        if near and self._reused(b, chroma, *near[0]):
            blobs.append(b)
            return
        self._read_blob(b, linb[ya:yb, xa:xb], s[ya:yb, xa:xb], comp, gains, face_level,
                        (m_["m10"] / m_["m00"] + xa, m_["m01"] / m_["m00"] + ya))
        blobs.append(b)
        self._current.append((b, chroma))

    # --------------------------------------------------------- shape + colour
    def _read_blob(self, b: Blob, linb: np.ndarray, s: np.ndarray, comp: np.ndarray, gains: np.ndarray,
                   face_level: float, centre: tuple[float, float]) -> None:
        """Colour of one blob from its ROI of the warp; its outline is queued for
        :meth:`_read_shapes` (all new shapes of a frame are read together, against the
        frame's blur)."""
        sc = s[comp > 0]
        mean_s = float(sc.mean())
        core = ((s >= mean_s) & (comp > 0)).astype(np.uint8)
        # The colour from the blob's brighter half (robust to blur at the outline and
        # to a glare spot's washed-out centre).
        col = np.array(cv2.mean(linb, mask=core)[:3][::-1]) * gains
        sat = (col.max() - col.min()) / max(col.max(), 1e-9)
        if not self._colour(b, sat, *self.refs.classify(col)):
            return
        top = float(sc[sc >= mean_s].mean())
        self._pending.append((b, centre, top, face_level))
        self._trace(s, comp, [(b, 1, cv2.boundingRect(comp), top)], face_level)

    # Shapes the frame's blur is measured on: one blur fits a whole frame, a dozen
    # shapes tell it as well as more (the measure costs a correlation with every
    # template at every candidate blur per shape).
    BLUR_SAMPLE = 12
    # A shape whose outline fits its best name below DOUBT_SCORE, or beats the next name
    # by less than DOUBT_MARGIN, or whose name disagrees with its colour (R-BLOXO-1), is
    # looked at again (ShapeTemplates.look_again: its patch moved to each name's best
    # place). On blurred dev scenes, of the shapes read wrong 82% scored below 0.7 and
    # 85% had margins below 0.03, against 0.3% and 2.4% of those read right: the second
    # look costs little.
    DOUBT_SCORE = 0.7
    DOUBT_MARGIN = 0.03

    def _read_shapes(self, s: np.ndarray, estimate_blur: bool = True) -> None:
        """Shapes of the blobs queued this frame (see :class:`ShapeTemplates`); the
        frame's blur is estimated again from them unless ``estimate_blur`` is False
        (a partial read: the few new shapes of an unchanged view keep the blur the
        last full read measured on all of them)."""
        pend = [p for p in self._pending if not p[0].partial] + [p for p in self._pending if p[0].partial]
        self._pending = []
        if not pend:
            return
        X = self.shapes.patches(s, np.array([p[1] for p in pend]), np.array([p[2] for p in pend]),
                                np.array([p[3] for p in pend]))
        whole = sum(not p[0].partial for p in pend)
        if (estimate_blur and whole >= 3) or self.blur_choice is None:
            # the frame's blur, from (up to BLUR_SAMPLE of) its whole shapes, spread over the frame
            sel = np.arange(whole if whole >= 3 else len(pend))
            if len(sel) > self.BLUR_SAMPLE:
                sel = sel[np.linspace(0, len(sel) - 1, self.BLUR_SAMPLE).round().astype(int)]
            self.blur_choice = self.shapes.estimate_blur(X[sel])
        per = self.shapes.scores(X, self.blur_choice)
        for k, (p, (name, sc, margin)) in enumerate(zip(pend, self.shapes.readings(per))):
            b = p[0]
            if sc < self.DOUBT_SCORE or margin < self.DOUBT_MARGIN \
                    or (b.colour is not None and self.expected_shape.get(b.colour) != name):
                # a second look (the same for every name: never toward the colour's)
                again = np.maximum(per[k], self.shapes.look_again(s, p[1], p[2], p[3], self.blur_choice))
                name, sc, margin = self.shapes.readings(again[None])[0]
            b.shape, b.shape_dist, b.shape_margin = name, 1.0 - sc, margin

    # ---------------------------------------------------------------- cards
    def _slot(self, x: float, y: float) -> tuple[int, int, float]:
        """Quadrant lattice index (kx, ky) of a board point and its distance to it."""
        q = self.quad
        rx, ry = x - float(self.origin[0]) - q / 2, y - float(self.origin[1]) - q / 2
        kx, ky = round(rx / q), round(ry / q)  # half to even, as numpy rounds
        return int(kx), int(ky), math.hypot(rx - kx * q, ry - ky * q)

    def grid_of(self, x: float, y: float) -> tuple[int, int]:
        return int(round((x - float(self.origin[0])) / self.card)), int(round((y - float(self.origin[1])) / self.card))

    def _assemble(self, blobs: list[Blob], level: float,
                  grouped: tuple[CardsResult, list[Blob], set[int]] | None = None) -> CardsResult:
        """The cards, misplaced cards and occluded positions the shapes ``blobs`` make
        (``grouped``: :meth:`_group` of these very blobs, if made already)."""
        res, loose, used = grouped if grouped is not None else self._group(blobs)
        # Loose shapes that made no card: evidence of a card we cannot read
        for b in loose:
            # only what looks like a printed shape (colour and outline agreeing) is
            # evidence of a card; a patch of table between cards is not
            if id(b) in used or b.colour is None or self.expected_shape.get(b.colour) != b.shape \
                    or b.colour_dist > 0.2:
                continue
            res.partial.setdefault(self.grid_of(b.x, b.y), 0)
        for c in res.misplaced:
            for p in c.covers:
                res.partial.setdefault(p, 0)
        res.white_level = level
        return res

    def _group(self, blobs: list[Blob]) -> tuple[CardsResult, list[Blob], set[int]]:
        """What the shapes' places alone tell (not their readings): the cards on the
        grid, the misplaced ones and the partial positions, with the shapes left loose
        and those used by misplaced cards (see :meth:`_assemble`)."""
        slots: dict[tuple[int, int], dict[int, Blob]] = {}
        loose: list[Blob] = []
        tol = self.off_grid_mm + self.quad / 2 * math.sin(math.radians(self.off_grid_deg)) * 1.5
        for b in blobs:
            kx, ky, d = self._slot(b.x, b.y)
            if d <= min(tol, self.quad * 0.35):
                pos = ((kx + 1) // 2, (ky + 1) // 2)
                qi = _QUADRANT_OF[(0 if kx % 2 else 1, 0 if ky % 2 else 1)]  # (right?, near?)
                cell = slots.setdefault(pos, {})
                if qi in cell:  # two shapes in one slot: something lies on something
                    loose.append(b)
                else:
                    cell[qi] = b
            else:
                loose.append(b)
        cards: list[Card] = []
        partial: dict[tuple[int, int], int] = {}
        for pos, cell in slots.items():
            if len(cell) == 4 and not any(b.partial for b in cell.values()):
                card = _fit_card([cell[i] for i in range(4)])
                card.at = pos
                cx, cy = float(self.origin[0]) + pos[0] * self.card, float(self.origin[1]) + pos[1] * self.card
                card.offset_mm = float(math.hypot(card.centre[0] - cx, card.centre[1] - cy))
                if card.offset_mm > self.off_grid_mm or abs(card.rotation_deg) > self.off_grid_deg:
                    card.status = "off-grid"
                cards.append(card)
            else:
                partial[pos] = sum(not b.partial for b in cell.values())
                if len(cell) < 4:
                    loose.extend(cell.values())
        # Four loose shapes in a card's square: a card off the grid or on another card.
        misplaced = [c for c in cards if c.status != "ok"]
        cards = [c for c in cards if c.status == "ok"]
        misplaced += _group_loose([b for b in loose if not b.partial], self.quad)
        used = {id(b) for c in misplaced for b in c.quads}
        # shapes that turned out to belong to a misplaced card are no evidence of a card
        # at the grid spot whose slot they happened to fall in
        for pos, cell in slots.items():
            if pos in partial and cell and all(id(b) in used for b in cell.values()):
                del partial[pos]
        for c in misplaced:
            c.at = self.grid_of(*c.centre)
            c.offset_mm = float(np.linalg.norm(np.array(c.centre) - (self.origin + np.array(c.at) * self.card)))
            if c.status == "ok":
                c.status = "off-grid"
            c.covers = self._covered_positions(c)
        # A misplaced card covering a grid card: it lies on top of it.
        on_grid = {c.at: c for c in cards}
        for c in misplaced:
            under = [p for p in c.covers if p in on_grid or p in partial]
            if under:
                c.status = "on-top"
            for p in c.covers:
                if p in on_grid:
                    # the card below cannot be fully seen: it is occluded by the one on top
                    partial[p] = 4
                    cards.remove(on_grid.pop(p))
        return CardsResult(cards, misplaced, partial, blobs), loose, used

    def _covered_positions(self, c: Card) -> list[tuple[int, int]]:
        """Grid positions whose card square the (misplaced) card overlaps by > 10%."""
        out = []
        gx, gy = self.grid_of(*c.centre)
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                p = (gx + dx, gy + dy)
                cx, cy = self.origin + np.array(p) * self.card
                ox = max(0.0, self.card - abs(c.centre[0] - cx))
                oy = max(0.0, self.card - abs(c.centre[1] - cy))
                if ox * oy > 0.1 * self.card ** 2:
                    out.append(p)
        return out


def _box_mean(integral: np.ndarray, i0: int, i1: int, j0: int, j1: int) -> float:
    """Mean of a 0/1 image over rows i0:i1, columns j0:j1, from its integral image."""
    tot = int(integral[i1, j1]) - int(integral[i0, j1]) - int(integral[i1, j0]) + int(integral[i0, j0])
    return tot / ((i1 - i0) * (j1 - j0))


def _box_means(integral: np.ndarray, i0: np.ndarray, i1: np.ndarray, j0: np.ndarray, j1: np.ndarray) -> np.ndarray:
    """Means of a 0/1 image over many boxes (rows i0:i1, columns j0:j1, in pixels,
    truncated to integers and clipped to the image) from its integral image; NaN
    for a box with nothing of the image in it."""
    H, W = integral.shape[0] - 1, integral.shape[1] - 1
    i0, j0 = np.maximum(i0, 0).astype(np.int64), np.maximum(j0, 0).astype(np.int64)
    i1, j1 = np.minimum(i1, H).astype(np.int64), np.minimum(j1, W).astype(np.int64)
    ok = (i1 > i0) & (j1 > j0)
    i0, i1, j0, j1 = (np.clip(v, 0, n) for v, n in ((i0, H), (i1, H), (j0, W), (j1, W)))
    tot = integral[i1, j1].astype(np.int64) - integral[i0, j1] - integral[i1, j0] + integral[i0, j0]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ok, tot / ((i1 - i0) * (j1 - j0)), np.nan)


def _square_cover(integral: np.ndarray | None, x: float, y: float, half: float) -> float:
    """:meth:`CardsResult.foreign_at` from the integral image of the mask."""
    if integral is None:
        return 0.0
    step = FOREIGN_STEP_MM
    H, W = integral.shape[0] - 1, integral.shape[1] - 1
    i0, i1 = int(max((y - half) / step, 0)), int(min((y + half) / step, H))
    j0, j1 = int(max((x - half) / step, 0)), int(min((x + half) / step, W))
    if i1 <= i0 or j1 <= j0:
        return 0.0
    return _box_mean(integral, i0, i1, j0, j1)


def _fit_card(quads: list[Blob]) -> Card:
    """Centre and rotation (from the nearest multiple of 90 degrees) of four shapes."""
    # plain floats: on four points numpy's overhead is most of the work
    cx = (quads[0].x + quads[1].x + quads[2].x + quads[3].x) / 4
    cy = (quads[0].y + quads[1].y + quads[2].y + quads[3].y) / 4
    # rotation of the ideal corners (NW, NE, SE, SW) -> the centroids (2D Procrustes)
    num = den = 0.0
    for (ix, iy), b in zip(_IDEAL_CORNERS, quads):
        rx, ry = b.x - cx, b.y - cy
        num += ix * ry - iy * rx
        den += ix * rx + iy * ry
    ang = math.degrees(math.atan2(num, den))
    ang = (ang + 45) % 90 - 45
    return Card((cx, cy), ang, quads)


_IDEAL_CORNERS = ((-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0))
_QUADRANT_OF = {(0, 0): 0, (1, 0): 1, (1, 1): 2, (0, 1): 3}  # (right?, near?) -> NW, NE, SE, SW


def _group_loose(blobs: list[Blob], quad: float) -> list[Card]:
    """Sets of four shapes at the corners of a quadrant-sized square (greedy)."""
    out: list[Card] = []
    free = list(blobs)
    tol = 0.2 * quad
    while len(free) >= 4:
        found = None
        for i, a in enumerate(free):
            near = [b for b in free if b is not a and abs(math.hypot(b.x - a.x, b.y - a.y) - quad) < tol]
            diag = [b for b in free if b is not a and abs(math.hypot(b.x - a.x, b.y - a.y) - quad * math.sqrt(2)) < tol]
            for d in diag:
                sides = [b for b in near if abs(math.hypot(b.x - d.x, b.y - d.y) - quad) < tol]
                if len(sides) >= 2:
                    s1, s2 = sides[0], sides[1]
                    if math.hypot(s1.x - s2.x, s1.y - s2.y) > quad * 1.2:
                        found = [a, s1, d, s2]
                        break
            if found:
                break
        if not found:
            break
        for b in found:
            free.remove(b)
        pts = np.array([[b.x, b.y] for b in found])
        c = pts.mean(axis=0)
        # order NW, NE, SE, SW in table coordinates by angle around the centre
        ang = np.arctan2(pts[:, 1] - c[1], pts[:, 0] - c[0])  # y down: NW ~ -135 deg
        order = np.argsort((ang + 3 * np.pi / 4) % (2 * np.pi))
        card = _fit_card([found[k] for k in order])
        card.status = "off-grid"
        out.append(card)
    return out
