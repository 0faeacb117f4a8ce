"""Bloxx!: the two shape dice from the camera, and a player's sheet from a photo.

API (used by the service; kept stable):

* ``DiceRecognizer(calibration, *, edition=None, stable_seconds=1.0)`` -- the calibration
  of the rolling area (``calibration.game == "bloxx"``: camera, pose from the kit's four
  markers around the area).

  - ``read(frame_bgr) -> dict``: ``{"dice": {"white": "w3", "black": None}, "confidence":
    0.0..1.0 (the lowest die confidence), "die_confidence": {"white": 0.97, "black": 0.0},
    "where": {"white": [x_mm, y_mm, yaw_deg], ...}}``. Die and face names are the
    edition's. A die that cannot be read (covered, out of the area, unclear) is
    ``None``, never guessed.
  - ``process(frame_bgr, t, index, lores=None) -> dict``: an observation
    (``observation.md`` common fields, ``game: "bloxx"``) whose ``state`` is
    ``{"dice": {...}}``, with ``die_confidence``; ``occluded`` lists the dice not read;
    ``stable`` is true once the scene has been still for ``stable_seconds`` and both
    dice are read: the roll to commit as the engine's chance input.
  - ``overlay(frame_bgr, observation) -> image``.
  ``Recognizer`` is an alias, for ``vision.make_recognizer("bloxx", ...)``.

* ``SheetReader(kit=None, edition=None)`` -- no calibration or markers needed: the sheet
  is found from its own printed grid.

  - ``read(image_bgr) -> SheetReading`` with ``rows`` (the ``bloxx`` observation state:
    rows top to bottom, ``.`` empty, ``x`` cross, ``o`` circle, ``#`` gap),
    ``confidence`` (10 x 7 per-square 0..1), ``corners`` (grid corners in the image:
    top-left, top-right, bottom-right, bottom-left), ``found`` and ``why`` when not;
    ``to_json()`` gives ``{"sheet": rows, "square_confidence": [...], "confidence": min}``.
    Raises nothing for an unreadable photo: ``found`` is False and ``rows`` is None.

* ``reconcile(read_sheet, engine_sheet, *, min_confidence=0.0) -> list[dict]``: the squares
  where a read sheet and the engine's record disagree, ``{"at": [r, c], "read": "x",
  "engine": "o", "confidence": 0.93}``, in row-major order. Either argument may be
  rows, an observation state ``{"sheet": rows}``, a :class:`SheetReading` or an
  ``engine.bloxx.sheet.Sheet``.

* ``score(truth, observed) -> {metric: (errors, total)}`` for ``bloxcam evaluate`` and the
  benchmark: ``dice`` (visible dice read wrong or not read), ``dice_wrong`` (any die
  given a wrong face: never acceptable, covered or not), ``sheet_squares``.

How it reads. Dice: the rolling area is warped top-down onto the plane of the dice's
top faces (height = die size, from the kit), where a top face is an exact square
whatever the camera angle. Candidates are the spots that differ most from the
(smoothly lit) table; at each, the print's edge directions give the die's rotation
modulo 90 degrees, and every face of both dice, in each of the four quarter turns, is
matched (normalised cross-correlation, so neither light level nor colour matters) as
drawn from the edition's cells and circle and the kit's print sizes, blurred as the
frame is: the frame's defocus and motion streak are measured on the kit's markers
(known print, placed by the pose; :class:`_BlurMeter`) and mapped through the local
image scale into the top-face view, so a blurred die is compared with equally blurred
faces rather than with sharp ones that all fit it about as badly. The best face must
explain the die clearly better than every other face (residual-energy ratio) and fit
every part of it (a hand over part of a die spoils one part whatever the face), or
the die is not read. Which die is which comes out of the match too: a white die's
print is dark on light, a black die's light on dark.

Sheet: dark ink is thresholded locally; the biggest ink component is the grid (its
lines connect everything; small breaks from blur are closed, and larger ones too in a
second and third try, as strong motion blur on a low-resolution camera leaves the pen
marks the biggest piece); its outline gives four corners, the rotation is the one
whose coloured rows (edition data), title and bonus boxes fit, and the printed grid
lines then refine the homography (a faint grid lost to blur is placed from the paper's
edge and the kit's layout, then refined the same way). Each square is warped to a
canonical view; pen ink is its transmission against the square's paper (printed tint
from the kit and edition, under a light field fitted to the paper around), with the
printed lines and numbers (the blank sheet, drawn from the same code as the print)
left out. Two matched filters describe the ink: straight strokes through the centre
(a cross has two, at least 45 degrees apart) and rings (a circle); with the coverage,
its spread around the centre and the centre itself they go to a small logistic model
(``vision/_bloxx_marks.py``, fitted on development renders) that names the mark and
gives its probability as the square's confidence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

from calibration.kit import Kit, load_kit
from vision.board import BoardView
from vision.motion import StabilityGate

from engine.bloxx.edition import BloxxEdition, load_edition
from engine.bloxx.sheet import Sheet

GAME = "bloxx"
SYMBOLS = ".xo#"

# Dice matching thresholds (normalised cross-correlation of the top face with a face's
# print, blurred as the frame is): the best face must reach MIN_NCC, explain the face
# clearly better than any other face of the die -- the residual energy left by the
# runner-up, 1 - ncc^2, at least exp(MIN_LOG_RATIO) times the best's -- and fit every
# part of the face (MAX_WORST, see _worst_block: a hand over part of a die).
MIN_NCC = 0.72
MIN_LOG_RATIO = 0.5
MAX_WORST = 0.5
SURE_NCC = 0.85
# Rotation search: the coarse match runs at the print's edge angle and, unless a face
# fits there with COARSE_SURE, at every COARSE_TURN_DEG; the fine match at the best
# coarse angle plus each of FINE_TURNS_DEG.
COARSE_TURN_DEG = 7.5
COARSE_SURE = 0.9
FINE_TURNS_DEG = (0.0, -2.5, 2.5, -5.0, 5.0)

COARSE_PPM = 2.0
FINE_PPM = 5.0
MAX_CANDIDATES = 5


# ============================================================================== dice


@dataclass
class _Template:
    die: str
    face: str
    turns: int
    coarse: np.ndarray
    fine: np.ndarray


def _face_templates(kit: Kit, edition: BloxxEdition) -> list[_Template]:
    from calibration.render.bloxx import draw_die_face

    out = []
    for die in edition.dice:
        if die.name not in kit.require_bloxx().die.colors:
            raise ValueError(f"the kit has no colours for the edition's die {die.name!r}")
        for face in die.faces:
            big = cv2.cvtColor(draw_die_face(kit, die.name, face, 16.0), cv2.COLOR_RGB2GRAY).astype(np.float32)
            for k in range(4):
                turned = np.ascontiguousarray(np.rot90(big, -k))
                mk = {}
                for name, ppm in (("coarse", COARSE_PPM), ("fine", FINE_PPM)):
                    n = int(round(kit.require_bloxx().die.size_mm * ppm))
                    mk[name] = cv2.resize(turned, (n, n), interpolation=cv2.INTER_AREA)
                out.append(_Template(die.name, face.name, k, mk["coarse"], mk["fine"]))
    return out


def _dominant_angle(grey: np.ndarray, centre: tuple[float, float], radius: float) -> tuple[float, float]:
    """The rotation (degrees, 0..90) of square edges near ``centre``, and its strength 0..1."""
    gx = cv2.Sobel(grey, cv2.CV_32F, 1, 0, ksize=3)
    gy = cv2.Sobel(grey, cv2.CV_32F, 0, 1, ksize=3)
    h, w = grey.shape
    yy, xx = np.mgrid[0:h, 0:w]
    inside = (xx - centre[0]) ** 2 + (yy - centre[1]) ** 2 <= radius ** 2
    mag2 = (gx * gx + gy * gy) * inside
    phi = np.arctan2(gy, gx)
    z = np.sum(mag2 * np.exp(4j * phi))
    tot = float(mag2.sum())
    if tot <= 0:
        return 0.0, 0.0
    return float(np.degrees(np.angle(z)) / 4) % 90.0, float(abs(z) / tot)


def _ncc_map(img: np.ndarray, tpl: np.ndarray) -> np.ndarray:
    return cv2.matchTemplate(img, tpl, cv2.TM_CCOEFF_NORMED)


# Blur: what the frame's optics and motion did, measured on the kit's markers and
# applied to the face prints before matching (a print blurred as the frame is matches
# it; a sharp one matches every blurred face about as badly).
# Extra blur (image px) the rectifying warp adds: a pixel's footprint and bilinear
# interpolation (variances 1/12 + 1/6 px^2).
WARP_BLUR_PX = 0.5


def _psf_kernel(sigma: float, length: float, angle_deg: float, B: np.ndarray | None = None,
                extra: float = 0.0) -> np.ndarray:
    """A blur kernel (float32, sum 1): a Gaussian (``sigma``, ``extra`` added in
    quadrature) along a straight motion streak (``length`` at ``angle_deg``), all in
    image px, mapped into another pixel frame by the 2x2 linear map ``B`` (identity
    when None: the kernel in image px)."""
    B = np.eye(2) if B is None else np.asarray(B, float)
    d = np.array([math.cos(math.radians(angle_deg)), math.sin(math.radians(angle_deg))])
    nseg = min(24, max(1, int(math.ceil(length * 4))))
    ts = (np.arange(nseg) + 0.5) / nseg - 0.5 if length > 0 else np.zeros(1)
    pts = (ts[:, None] * length * d[None, :]) @ B.T
    S = B @ B.T * (sigma ** 2 + extra ** 2) + np.eye(2) * 0.09  # never under a third of a target px
    ext = np.abs(pts).max(axis=0) + 3.2 * np.sqrt(np.diag(S))
    rx, ry = int(math.ceil(ext[0])), int(math.ceil(ext[1]))
    yy, xx = np.mgrid[-ry:ry + 1, -rx:rx + 1].astype(float)
    Si = np.linalg.inv(S)
    dx = xx[None] - pts[:, 0, None, None]
    dy = yy[None] - pts[:, 1, None, None]
    k = np.exp(-0.5 * (Si[0, 0] * dx * dx + 2 * Si[0, 1] * dx * dy + Si[1, 1] * dy * dy)).sum(axis=0)
    return (k / k.sum()).astype(np.float32)


class _BlurMeter:
    """The frame's blur -- ``(sigma, length, angle)`` in image px: lens defocus as a
    Gaussian, camera shake as a straight streak -- fitted where the frame shows known
    print: the outer corner of each board marker (ArUco pattern from the kit's
    dictionary, white quiet zone), placed by the pose. The ideal corner is rendered
    with each pixel's footprint, blurred by a candidate, and regressed on the frame
    (offset, gain, a light gradient and a sub-pixel shift absorb lighting and pose
    error); the candidate with the least residual wins (coarse grid, then a local
    search). A marker a hand covers fits badly and is left out."""

    HALF_PX = 36  # half-size of the window at each marker's outer corner

    def __init__(self, view: BoardView, kit: Kit, game: str) -> None:
        self.view, self.kit, self.game = view, kit, game
        self._key: Any = None
        self.rois: list[tuple[tuple[int, int, int, int], np.ndarray, np.ndarray]] = []

    def _prepare(self, shape: tuple[int, ...]) -> None:
        from calibration.kit import aruco_dictionary

        key = (self.view.version, shape[:2])
        if key == self._key:
            return
        self._key = key
        kit = self.kit
        d = aruco_dictionary(kit.markers.dictionary)
        cells = d.markerSize + 2
        s = kit.markers.size_mm
        q = min(kit.markers.quiet_zone_mm, 0.5 * s)
        w, h = kit.area_mm(self.game)
        self.rois = []
        H, W = shape[:2]
        for mid, corners in kit.marker_corners(self.game).items():
            bits = cv2.aruco.generateImageMarker(d, mid, cells, borderBits=1).astype(np.float32) / 255.0
            lo = corners[:, :2].min(axis=0)
            cxm, cym = lo[0] + s / 2, lo[1] + s / 2
            ocx = lo[0] if cxm < w / 2 else lo[0] + s
            ocy = lo[1] if cym < h / 2 else lo[1] + s
            oc = self.view.project(np.array([[ocx, ocy]]))[0]
            x0, y0 = int(oc[0]) - self.HALF_PX, int(oc[1]) - self.HALF_PX
            x1, y1 = int(oc[0]) + self.HALF_PX, int(oc[1]) + self.HALF_PX
            if x0 < 0 or y0 < 0 or x1 > W or y1 > H:
                continue
            sub = 3
            yy, xx = np.mgrid[y0:y1, x0:x1].astype(np.float64)
            offs = (np.arange(sub) + 0.5) / sub - 0.5
            acc = np.zeros(yy.shape)
            valid = np.ones(yy.shape, bool)
            qc = q / s * cells
            for oy in offs:
                for ox in offs:
                    mm = self.view.to_plane(np.column_stack([(xx + ox).ravel(), (yy + oy).ravel()]), 0.0)
                    u = (mm[:, 0] - lo[0]) / s * cells
                    v = (mm[:, 1] - lo[1]) / s * cells
                    inside = (u >= 0) & (u < cells) & (v >= 0) & (v < cells)
                    val = np.ones(len(u))
                    ui = np.clip(u.astype(int), 0, cells - 1)
                    vi = np.clip(v.astype(int), 0, cells - 1)
                    val[inside] = bits[vi[inside], ui[inside]]
                    valid &= ((u >= -qc) & (u < cells + qc) & (v >= -qc) & (v < cells + qc)).reshape(yy.shape)
                    acc += val.reshape(yy.shape)
            ideal = (acc / sub / sub).astype(np.float32)
            # Pixels near the print's edges carry the blur; beyond the quiet zone is table.
            gm = cv2.morphologyEx(ideal, cv2.MORPH_GRADIENT, np.ones((3, 3), np.uint8))
            near = cv2.dilate((gm > 0.05).astype(np.uint8), np.ones((9, 9), np.uint8)) > 0
            valid = cv2.erode(valid.astype(np.uint8), np.ones((13, 13), np.uint8)) > 0
            valid[:7] = valid[-7:] = False
            valid[:, :7] = valid[:, -7:] = False
            mask = valid & near
            if mask.sum() >= 200:
                self.rois.append(((x0, y0, x1, y1), ideal, mask))

    def measure(self, frame: np.ndarray) -> tuple[float, float, float] | None:
        if self.view.pose is None:
            return None
        self._prepare(frame.shape)
        grey = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY) if frame.ndim == 3 else frame
        data = []
        for (x0, y0, x1, y1), ideal, mask in self.rois:
            # Blur mixes light, not sRGB values: roughly linearised.
            obs = (grey[y0:y1, x0:x1].astype(np.float32) / 255.0) ** 2.2
            ys, xs = np.nonzero(mask)
            data.append((ideal, obs[mask], (xs - xs.mean()) / max(1.0, xs.std()),
                         (ys - ys.mean()) / max(1.0, ys.std()), mask))
        if not data:
            return None
        fits = [self._cost1(dd, (1.0, 0.0, 0.0)) for dd in data]
        # The best-fitting markers (a hand over one fits badly), three at most.
        order = [i for i in np.argsort(fits)[:3] if fits[i] <= 4 * min(fits) + 1e-4]
        data = [data[i] for i in order]

        cache: dict[tuple[float, float, float], float] = {}

        def cost(p: tuple[float, float, float]) -> float:
            if p not in cache:
                cache[p] = sum(self._cost1(dd, p) for dd in data)
            return cache[p]

        best = min(((cost(p), p) for p in [(sg, 0.0, 0.0) for sg in (0.3, 0.8, 1.3, 1.8)]
                    + [(sg, L, float(a)) for sg in (0.3, 0.9) for L in (2.5, 5.0) for a in range(0, 180, 30)]))
        step = [0.25, 1.0, 15.0]
        for _ in range(3):
            improved = True
            while improved:
                improved = False
                for i in range(3):
                    for sgn in (-1, 1):
                        p = list(best[1])
                        p[i] += sgn * step[i]
                        if p[0] < 0.2 or p[1] < 0:
                            continue
                        p[2] %= 180.0
                        c = cost((round(p[0], 4), round(p[1], 4), round(p[2], 4)))
                        if c < best[0]:
                            best, improved = (c, tuple(p)), True
            step = [v / 2 for v in step]
        return best[1]

    @staticmethod
    def _cost1(dd: tuple, p: tuple[float, float, float]) -> float:
        ideal, o, xn, yn, mask = dd
        full = cv2.GaussianBlur(ideal, (0, 0), p[0])
        if p[1] > 0:
            full = cv2.filter2D(full, -1, _line_kernel(p[1], p[2]), borderType=cv2.BORDER_REPLICATE)
        gx = cv2.Sobel(full, cv2.CV_32F, 1, 0, ksize=1)[mask]
        gy = cv2.Sobel(full, cv2.CV_32F, 0, 1, ksize=1)[mask]
        b = full[mask]
        A = np.column_stack([np.ones_like(b), b, b * xn, b * yn, gx, gy]).astype(np.float64)
        ata = A.T @ A + np.eye(6) * 1e-9
        coef = np.linalg.solve(ata, A.T @ o)
        r = o - A @ coef
        return float((r * r).mean() / (coef[1] ** 2 + 1e-9))


_LINES: dict[tuple[float, float], np.ndarray] = {}


def _line_kernel(length: float, angle: float) -> np.ndarray:
    key = (round(length, 3), round(angle, 3))
    k = _LINES.get(key)
    if k is None:
        if len(_LINES) > 4096:
            _LINES.clear()
        k = _LINES[key] = _psf_kernel(0.0, length, angle)
    return k


@dataclass
class _Hit:
    die: str
    face: str
    score: float
    runner_up: float  # best score of any other face of the same die
    x: float  # top-face centre, board mm
    y: float
    yaw: float
    worst: float = 0.0  # the worst-fitting part of the face (see _worst_block)


def _worst_block(patch: np.ndarray, tpl: np.ndarray, blocks: int = 4) -> float:
    """How badly the worst part of a matched face fits, in colour: every channel of
    the (BGR) patch fitted as offset + gain x template (a die shows two colours, body
    and ink, and their mixes at edges), the face split into ``blocks`` x ``blocks``
    parts, each part's RMS residual over the template's print contrast. Near the
    noise level when the whole face is seen; large where a hand or another object
    covers part of it, whatever face is matched -- skin or a sleeve that happens to be
    as dark as ink is not ink's colour -- so a partly covered die is not read."""
    t = tpl.astype(np.float64).ravel()
    o = patch.reshape(-1, patch.shape[2] if patch.ndim == 3 else 1).astype(np.float64)
    A = np.column_stack([np.ones_like(t), t])
    coef, *_ = np.linalg.lstsq(A, o, rcond=None)
    r2 = ((o - A @ coef) ** 2).sum(axis=1).reshape(patch.shape[:2])
    contrast = float(np.linalg.norm(coef[1])) * (np.percentile(t, 95) - np.percentile(t, 5)) + 1e-6
    n = patch.shape[0]
    edges = np.linspace(0, n, blocks + 1).astype(int)
    worst = 0.0
    for a in range(blocks):
        for b in range(blocks):
            worst = max(worst, float(np.sqrt(r2[edges[a]:edges[a + 1], edges[b]:edges[b + 1]].mean())))
    return worst / contrast


class DiceRecognizer:
    """Reads the up face of each shape die in the rolling area (see the module docstring)."""

    def __init__(self, calibration: Any, *, edition: BloxxEdition | None = None, stable_seconds: float = 1.0,
                 **_: Any) -> None:
        self.calibration = calibration
        self.kit: Kit = calibration.kit
        self.bx = self.kit.require_bloxx()
        self.edition = edition or load_edition()
        self.view = BoardView(calibration, GAME)
        self.gate = StabilityGate(stable_seconds)
        self.templates = _face_templates(self.kit, self.edition)
        self.dice = [d.name for d in self.edition.dice]
        self.blur_meter = _BlurMeter(self.view, self.kit, GAME)
        self.last_blur: tuple[float, float, float] | None = None

    # ------------------------------------------------------------------ reading
    def read(self, frame_bgr: np.ndarray) -> dict[str, Any]:
        self.last_hits: dict[str, _Hit] = {}
        check = self.view.update(frame_bgr)
        none = {"dice": {d: None for d in self.dice}, "confidence": 0.0,
                "die_confidence": {d: 0.0 for d in self.dice}, "where": {}}
        # A lost pose (markers covered or smeared) keeps the last one: if the camera
        # really moved, no face matches and nothing is read.
        if self.view.pose is None:
            none["why"] = "rolling area markers not found"
            return none
        hits = self._hits(frame_bgr)
        best: dict[str, _Hit] = {}
        # Each candidate spot is one die at most: give each die its best spot, spots
        # distinct, maximising the summed score.
        per_die = {d: sorted((h for h in hits if h.die == d), key=lambda h: -h.score) for d in self.dice}
        options: list[tuple[float, dict[str, _Hit]]] = []
        a, b = self.dice
        for ha in per_die[a][:4] + [None]:
            for hb in per_die[b][:4] + [None]:
                if ha is not None and hb is not None and math.hypot(ha.x - hb.x, ha.y - hb.y) < self.bx.die.size_mm * 0.8:
                    continue
                total = (ha.score if ha else 0.0) + (hb.score if hb else 0.0)
                options.append((total, {k: v for k, v in ((a, ha), (b, hb)) if v is not None}))
        if options:
            best = max(options, key=lambda o: o[0])[1]
        self.last_hits = best
        out_dice: dict[str, str | None] = {}
        conf: dict[str, float] = {}
        where: dict[str, list[float]] = {}
        for d in self.dice:
            h = best.get(d)
            if h is None:
                out_dice[d], conf[d] = None, 0.0
                continue
            c = _die_confidence(h)
            if c < 0.5:
                out_dice[d], conf[d] = None, c
                continue
            out_dice[d], conf[d] = h.face, c
            where[d] = [round(h.x, 2), round(h.y, 2), round(h.yaw, 1)]
        self._last_where = where
        return {"dice": out_dice, "confidence": min(conf.values()) if conf else 0.0, "die_confidence": conf,
                "where": where}

    def _hits(self, frame: np.ndarray) -> list[_Hit]:
        size = self.bx.die.size_mm
        w, h = self.bx.rolling_area_mm
        z = -size
        coarse = self.view.rectify(frame, COARSE_PPM, 0.0, z=z).astype(np.float32)
        cands = self._candidates(coarse)
        if not cands:
            return []
        fine = self.view.rectify(frame, FINE_PPM, 0.0, z=z)
        grey = cv2.cvtColor(fine, cv2.COLOR_BGR2GRAY).astype(np.float32)
        self.last_blur = self.blur_meter.measure(frame)
        hits: list[_Hit] = []
        half_win = 1.5 * size  # mm around a candidate
        for cx_mm, cy_mm in cands:
            x0 = int(max(0, (cx_mm - half_win) * FINE_PPM))
            y0 = int(max(0, (cy_mm - half_win) * FINE_PPM))
            x1 = int(min(grey.shape[1], (cx_mm + half_win) * FINE_PPM))
            y1 = int(min(grey.shape[0], (cy_mm + half_win) * FINE_PPM))
            win = grey[y0:y1, x0:x1]
            if min(win.shape) < size * FINE_PPM + 4:
                continue
            hits += [hit for hit in self._match(win, (x0, y0), (cx_mm * FINE_PPM - x0, cy_mm * FINE_PPM - y0),
                                                (cx_mm, cy_mm), fine[y0:y1, x0:x1]) if self._in_area(hit, coarse.shape)]
            sure = {h.die for h in hits if h.score >= SURE_NCC and _die_confidence(h) >= 0.75}
            if len(sure) == len(self.dice):
                break  # both dice found beyond doubt: the other spots are shadows or hands
        return hits

    def _in_area(self, hit: _Hit, shape: tuple[int, ...]) -> bool:
        """A die lies in the rolling area: its centre inside the markers' frame and off
        the markers' paper (a match there is the markers' print)."""
        w, h = self.bx.rolling_area_mm
        if not (0.0 <= hit.x <= w and 0.0 <= hit.y <= h):
            return False
        mask = self._marker_mask(shape)
        cx, cy = int(hit.x * COARSE_PPM), int(hit.y * COARSE_PPM)
        return not mask[min(cy, mask.shape[0] - 1), min(cx, mask.shape[1] - 1)]

    def _candidates(self, rect: np.ndarray) -> list[tuple[float, float]]:
        """Spots (mm) that differ most from the smoothly lit table, strongest first."""
        size = self.bx.die.size_mm
        small = cv2.resize(rect, None, fx=0.5, fy=0.5, interpolation=cv2.INTER_AREA)  # 1 px/mm
        k = int(2.2 * size) | 1
        bg = np.dstack([cv2.medianBlur(np.clip(small[..., i], 0, 255).astype(np.uint8), k) for i in range(3)])
        bg = cv2.resize(bg.astype(np.float32), (rect.shape[1], rect.shape[0]), interpolation=cv2.INTER_LINEAR)
        dev = np.abs(rect - bg).sum(axis=2)
        # Texture (the print) counts as much as colour difference.
        g = rect.mean(axis=2)
        mu = cv2.blur(g, (5, 5))
        tex = np.sqrt(np.maximum(cv2.blur(g * g, (5, 5)) - mu * mu, 0))
        score = cv2.blur(dev + 2 * tex, (int(size * COARSE_PPM * 0.6) | 1,) * 2)
        score[self._marker_mask(score.shape)] = 0
        floor = float(np.median(score))
        spread = float(np.median(np.abs(score - floor))) + 1.0
        out = []
        sup = score.copy()
        r = int(size * 1.3 * COARSE_PPM)
        for _ in range(MAX_CANDIDATES):
            i = int(np.argmax(sup))
            yy, xx = divmod(i, sup.shape[1])
            v = float(sup[yy, xx])
            if v < floor + 8 * spread + 10:
                break
            out.append(((xx + 0.5) / COARSE_PPM, (yy + 0.5) / COARSE_PPM))
            cv2.circle(sup, (xx, yy), r, -1e9, -1)
        return out

    def _marker_mask(self, shape: tuple[int, ...]) -> np.ndarray:
        """Where the markers' paper (on the table) shows in the top-face plane warp."""
        key = (self.view.version, shape)
        if getattr(self, "_mask_key", None) != key:
            mask = np.zeros(shape[:2], np.uint8)
            q = self.kit.markers.quiet_zone_mm + 3.0
            for corners in self.kit.marker_corners(GAME).values():
                lo, hi = corners[:, :2].min(axis=0) - q, corners[:, :2].max(axis=0) + q
                poly = np.array([[lo[0], lo[1]], [hi[0], lo[1]], [hi[0], hi[1]], [lo[0], hi[1]]])
                top = self.view.to_plane(self.view.project(poly), z=-self.bx.die.size_mm)
                cv2.fillConvexPoly(mask, np.round(top * COARSE_PPM).astype(np.int32), 1)
            self._mask = mask.astype(bool)
            self._mask_key = key
        return self._mask

    def _blurred(self, at_mm: tuple[float, float], M0: np.ndarray, level: str,
                 which: list[int] | None = None) -> dict[int, np.ndarray]:
        """Templates (``level`` "coarse" or "fine"; all, or ``which``) blurred as the
        frame is at ``at_mm``: the measured image-px blur mapped into the turned
        top-face window (``M0``, fine px) through the local image scale."""
        size = self.bx.die.size_mm
        x, y = at_mm
        p = self.view.project(np.array([[x, y, -size], [x + 1, y, -size], [x, y + 1, -size]]))
        A = np.column_stack([p[1] - p[0], p[2] - p[0]])  # image px per mm
        B = M0[:, :2] @ (FINE_PPM * np.linalg.inv(A))
        if level == "coarse":
            B = B * (COARSE_PPM / FINE_PPM)
        sigma, length, angle = self.last_blur or (0.0, 0.0, 0.0)
        k = _psf_kernel(sigma, length, angle, B, WARP_BLUR_PX)
        idx = range(len(self.templates)) if which is None else which
        return {i: cv2.filter2D(getattr(self.templates[i], level), -1, k, borderType=cv2.BORDER_REPLICATE)
                for i in idx}

    def _match(self, win: np.ndarray, origin: tuple[int, int], centre: tuple[float, float],
               at_mm: tuple[float, float], colour: np.ndarray) -> list[_Hit]:
        size = self.bx.die.size_mm
        ang, strength = _dominant_angle(win, centre, 0.8 * size * FINE_PPM)
        # Coarse: every face in every quarter turn, over the whole window, at the edge
        # angle and, unless a face fits there well, at every COARSE_TURN_DEG step (the
        # edges near a die include its sides' print, which can mislead the edge angle
        # on an oblique view).
        by_angle: dict[float, list[tuple[float, tuple[int, int], int]]] = {}
        sweep = [float(a) for a in np.arange(0.0, 90.0, COARSE_TURN_DEG)]
        for theta in [round(ang % 90.0, 2)] + sweep:
            if theta in sweep and max(v[0][0] for v in by_angle.values()) >= COARSE_SURE:
                break
            M = cv2.getRotationMatrix2D(centre, theta, 1.0)
            rot = cv2.warpAffine(win, M, (win.shape[1], win.shape[0]), flags=cv2.INTER_LINEAR,
                                 borderMode=cv2.BORDER_REPLICATE)
            small = cv2.resize(rot, None, fx=COARSE_PPM / FINE_PPM, fy=COARSE_PPM / FINE_PPM,
                               interpolation=cv2.INTER_AREA)
            tpl_c = self._blurred(at_mm, M, "coarse")
            scores = []
            for i, t in enumerate(self.templates):
                if small.shape[0] < t.coarse.shape[0] or small.shape[1] < t.coarse.shape[1]:
                    return []
                _, mx, _, loc = cv2.minMaxLoc(_ncc_map(small, tpl_c[i]))
                scores.append((mx, loc, i))
            by_angle[theta] = sorted(scores, key=lambda s: -s[0])
        ang = max(by_angle, key=lambda a: by_angle[a][0][0])
        coarse = by_angle[ang]
        top_loc = coarse[0][1]
        M0 = cv2.getRotationMatrix2D(centre, ang, 1.0)
        # Fine: the best few faces of each die (two quarter turns each), near the best
        # coarse position (the face square is the same for every face), at the best
        # coarse angle and in steps either side of it.
        chosen: list[int] = []
        for die in self.dice:
            faces: dict[str, int] = {}
            for mx, loc, i in coarse:
                t = self.templates[i]
                if t.die != die:
                    continue
                if faces.get(t.face, 0) < 2 and (t.face in faces or len(faces) < 3):
                    faces[t.face] = faces.get(t.face, 0) + 1
                    chosen.append(i)
        fine_tpl = self._blurred(at_mm, M0, "fine", chosen)
        n = self.templates[0].fine.shape[0]
        pad = int(FINE_PPM * 1.5)
        fx = int(round(top_loc[0] * FINE_PPM / COARSE_PPM))
        fy = int(round(top_loc[1] * FINE_PPM / COARSE_PPM))
        best: dict[tuple[str, str], tuple[float, float, float, float]] = {}  # -> score, x, y, yaw
        where: dict[tuple[str, str], tuple[np.ndarray, int, int, int]] = {}  # -> turn, patch corner, template
        for dang in FINE_TURNS_DEG:
            theta = ang + dang
            M = cv2.getRotationMatrix2D(centre, theta, 1.0)
            rot = cv2.warpAffine(win, M, (win.shape[1], win.shape[0]), flags=cv2.INTER_LINEAR,
                                 borderMode=cv2.BORDER_REPLICATE)
            ax0, ay0 = max(0, fx - pad), max(0, fy - pad)
            ax1, ay1 = min(rot.shape[1], fx + n + pad), min(rot.shape[0], fy + n + pad)
            area = rot[ay0:ay1, ax0:ax1]
            if area.shape[0] < n or area.shape[1] < n:
                continue
            Minv = cv2.invertAffineTransform(M)
            for i in chosen:
                t = self.templates[i]
                _, mx, _, loc = cv2.minMaxLoc(_ncc_map(area, fine_tpl[i]))
                key = (t.die, t.face)
                if key not in best or mx > best[key][0]:
                    px = np.array([ax0 + loc[0] + n / 2 - 0.5, ay0 + loc[1] + n / 2 - 0.5, 1.0])
                    wx, wy = Minv @ px
                    best[key] = (float(mx), (origin[0] + wx + 0.5) / FINE_PPM, (origin[1] + wy + 0.5) / FINE_PPM,
                                 float(theta))
                    where[key] = (M, ax0 + loc[0], ay0 + loc[1], i)
        hits = []
        for die in self.dice:
            ranked = sorted(((v, k) for k, v in best.items() if k[0] == die), key=lambda x: -x[0][0])
            if not ranked:
                continue
            (s1, x, y, yaw), (_, face) = ranked[0]
            # The runner-up is any other face, of either die: a spot the other die's
            # print explains about as well (a partly covered die of the other colour) is
            # no clear reading of this one.
            s2 = max((v[0] for k, v in best.items() if k != (die, face)), default=-1.0)
            M, px0, py0, i = where[(die, face)]
            turned = cv2.warpAffine(colour, M, (colour.shape[1], colour.shape[0]), flags=cv2.INTER_LINEAR,
                                    borderMode=cv2.BORDER_REPLICATE)
            patch = turned[py0:py0 + n, px0:px0 + n]
            hits.append(_Hit(die, face, s1, s2, x, y, yaw, _worst_block(patch, fine_tpl[i])))
        return hits

    # -------------------------------------------------------- recogniser interface
    def process(self, frame_bgr: np.ndarray, t: float, index: int, lores: np.ndarray | None = None) -> dict[str, Any]:
        reading = self.read(frame_bgr)
        motion = self.gate.update(frame_bgr, t, lores=lores)
        unread = [d for d, f in reading["dice"].items() if f is None]
        return {"game": GAME, "frame": index, "t": round(float(t), 4), "stable": bool(motion.stable and not unread),
                "occluded": unread, "confidence": round(float(reading["confidence"]), 4),
                "state": {"dice": reading["dice"]},
                "die_confidence": {k: round(float(v), 4) for k, v in reading["die_confidence"].items()},
                # Where each read die lies ([x mm, y mm, yaw deg] in the rolling area): the
                # referee tells dice that were thrown from dice something only passed over.
                "dice_at": reading["where"]}

    def overlay(self, frame_bgr: np.ndarray, observation: dict[str, Any]) -> np.ndarray:
        out = frame_bgr.copy()
        if self.view.pose is None:
            return out
        poly = self.view.area_polygon().astype(np.int32)
        cv2.polylines(out, [poly], True, (0, 200, 255), 2, cv2.LINE_AA)
        last = getattr(self, "_last_where", None)
        reading = observation.get("state", {}).get("dice", {})
        for d, face in reading.items():
            colour = (0, 200, 0) if face else (0, 0, 255)
            txt = f"{d}: {face or '?'}"
            where = (last or {}).get(d)
            if where:
                p = self.view.project(np.array([[where[0], where[1], -self.bx.die.size_mm]]))[0]
                cv2.putText(out, txt, (int(p[0]) + 20, int(p[1])), cv2.FONT_HERSHEY_SIMPLEX, 0.8, colour, 2)
        return out


def _log_ratio(h: _Hit) -> float:
    """How much better the best face explains the die than the runner-up: log of the
    ratio of their residual energies (1 - ncc^2)."""
    return float(math.log((1.0 - min(max(h.runner_up, 0.0), 0.999) ** 2) / (1.0 - min(h.score, 0.999) ** 2)))


def _die_confidence(h: _Hit) -> float:
    """0..1 from the best match, its lead over the runner-up and its worst part: at
    least 0.5 exactly when every threshold is met (the die is read), rising to 1 as
    the weakest of the three clears its threshold by a wide margin."""
    parts = [(h.score - MIN_NCC) / 0.2, (_log_ratio(h) - MIN_LOG_RATIO) / 1.0, (MAX_WORST - h.worst) / 0.3]
    if min(parts) >= 0:
        return float(0.5 + 0.5 * min(1.0, min(parts)))
    low = [np.clip(h.score / MIN_NCC, 0, 1), np.clip(_log_ratio(h) / MIN_LOG_RATIO, 0, 1),
           np.clip(MAX_WORST / max(h.worst, 1e-6), 0, 1)]
    return float(min(0.499, 0.5 * min(low)))


Recognizer = DiceRecognizer


# ============================================================================= sheet


@dataclass
class SheetReading:
    """What :meth:`SheetReader.read` found (see the module docstring)."""

    found: bool
    rows: list[str] | None = None
    confidence: list[list[float]] | None = None
    corners: np.ndarray | None = None  # image px: grid TL, TR, BR, BL
    why: str = ""
    features: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_json(self) -> dict[str, Any]:
        if not self.found:
            return {"sheet": None, "why": self.why}
        conf = [[round(float(v), 3) for v in row] for row in self.confidence or []]
        return {"sheet": list(self.rows or []), "square_confidence": conf,
                "confidence": round(float(min(min(r) for r in conf)), 3) if conf else 0.0,
                "corners": np.round(self.corners, 2).tolist() if self.corners is not None else None}


CANON_PPM = 5.0  # canonical pixels per mm of a rectified sheet
MIN_GRID_LINES = 30  # grid-line samples a sheet hypothesis's refit must find


class SheetReader:
    """Reads a Bloxx! sheet from a photo (see the module docstring)."""

    def __init__(self, kit: Kit | None = None, edition: BloxxEdition | None = None) -> None:
        from calibration.render.bloxx import draw_blank_sheet

        self.kit = kit or load_kit()
        self.spec = self.kit.require_bloxx().sheet
        self.edition = edition or load_edition()
        self.rows_n, self.cols_n = self.edition.rows, self.edition.columns
        q = self.spec.square_mm
        self.q = q
        gx, gy = self.spec.grid_origin_mm
        self.grid_mm = np.array([[0, 0], [self.cols_n * q, 0], [self.cols_n * q, self.rows_n * q], [0, self.rows_n * q]],
                                np.float32)
        # The blank sheet as printed, to tell the sheet's rotation (title, coloured rows).
        self._ppm_o = 2.0
        blank = draw_blank_sheet(self.kit, self.edition, self._ppm_o)
        self._blank = cv2.cvtColor(blank, cv2.COLOR_RGB2BGR).astype(np.float32)
        self._paper_off = (gx, gy)
        self.numbered = [[self.edition.value(r, c) > 0 for c in range(self.cols_n)] for r in range(self.rows_n)]

    # ------------------------------------------------------------------ finding
    def _ink(self, grey: np.ndarray) -> np.ndarray:
        h, w = grey.shape
        b = max(15, int(min(h, w) / 25)) | 1
        mean = cv2.blur(grey, (b, b))
        return ((grey < mean * 0.78) & (grey < mean - 12)).astype(np.uint8)

    def _quads(self, grey: np.ndarray) -> list[np.ndarray]:
        ink0 = self._ink(grey)
        out = []
        # Blur can break thin grid lines: close small breaks so the grid is one piece;
        # heavier blur (motion on a low-resolution camera) leaves the pen marks as the
        # largest piece unless larger breaks are closed too. Both outlines are tried.
        for k in (3, 7, 11):
            for q in self._quads_of(cv2.dilate(ink0, np.ones((k, k), np.uint8)), grey.shape):
                if not any(np.abs(q - np.roll(o, j, axis=0)).max() < 3 for o in out for j in range(4)):
                    out.append(q)
        return out

    def _quads_of(self, ink: np.ndarray, shape: tuple[int, ...]) -> list[np.ndarray]:
        n, labels, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
        if n <= 1:
            return []
        order = np.argsort(-stats[1:, cv2.CC_STAT_AREA])[:4] + 1
        H, W = shape[:2]
        quads = []
        for i in order:
            x, y, w, h = stats[i, :4]
            if w < W * 0.05 or h < H * 0.05:
                continue
            pts = np.column_stack(np.nonzero(labels[y:y + h, x:x + w] == i)[::-1]).astype(np.int32) + [x, y]
            hull = cv2.convexHull(pts)
            peri = cv2.arcLength(hull, True)
            quad = None
            for eps in (0.01, 0.02, 0.03, 0.05, 0.08):
                ap = cv2.approxPolyDP(hull, eps * peri, True)
                if len(ap) == 4:
                    quad = ap.reshape(4, 2).astype(np.float32)
                    break
                if len(ap) < 4:
                    break
            if quad is None:
                quad = cv2.boxPoints(cv2.minAreaRect(hull)).astype(np.float32)
            # Clockwise in image coordinates (y down), starting anywhere.
            if _signed_area(quad) < 0:
                quad = quad[::-1].copy()
            # The grid spans a fair part of a photo taken to read it.
            if abs(_signed_area(quad)) < 0.01 * H * W:
                continue
            quads.append(quad)
        return quads

    def _orientation_score(self, image: np.ndarray, H: np.ndarray) -> float:
        """How well the photo, warped by ``H`` (grid mm -> image), matches the blank sheet."""
        gx, gy = self._paper_off
        p = self._ppm_o
        S = np.array([[1 / p, 0, -gx + 0.5 / p], [0, 1 / p, -gy + 0.5 / p], [0, 0, 1]])
        Hp = H @ S  # paper pixel -> image
        h, w = self._blank.shape[:2]
        warped = cv2.warpPerspective(image, Hp, (w, h), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                                     borderMode=cv2.BORDER_REPLICATE).astype(np.float32)
        score = 0.0
        for ch in range(3):
            a = warped[..., ch] - warped[..., ch].mean()
            b = self._blank[..., ch] - self._blank[..., ch].mean()
            score += float((a * b).sum() / (np.sqrt((a * a).sum() * (b * b).sum()) + 1e-6))
        return score / 3

    def _refine(self, grey: np.ndarray, H: np.ndarray) -> tuple[np.ndarray, int]:
        """Refit ``H`` to the printed grid lines (dark narrow valleys across them)."""
        q = self.q
        P = 6.0
        m = 3.0
        W, Hh = int((self.cols_n * q + 2 * m) * P), int((self.rows_n * q + 2 * m) * P)
        S = np.array([[1 / P, 0, -m + 0.5 / P], [0, 1 / P, -m + 0.5 / P], [0, 0, 1]])
        inliers = 0
        for _ in range(2):
            Hc = H @ S
            can = cv2.warpPerspective(grey, Hc, (W, Hh), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                                      borderMode=cv2.BORDER_REPLICATE).astype(np.float32)
            model, found = [], []
            half = int(2.2 * P)
            for axis, count, along in ((0, self.cols_n + 1, self.rows_n), (1, self.rows_n + 1, self.cols_n)):
                for k in range(count):
                    pos = (k * q + m) * P
                    for j in range(along):
                        a0, a1 = int((j * q + 0.25 * q + m) * P), int((j * q + 0.75 * q + m) * P)
                        c0, c1 = int(round(pos)) - half, int(round(pos)) + half + 1
                        if c0 < 0 or (axis == 0 and c1 > W) or (axis == 1 and c1 > Hh):
                            continue
                        band = can[a0:a1, c0:c1] if axis == 0 else can[c0:c1, a0:a1].T
                        prof = band.mean(axis=0)
                        i = int(np.argmin(prof))
                        if i < 2 or i > len(prof) - 3:
                            continue
                        side = max(float(np.median(prof[:max(i - 4, 1)])) if i > 4 else float(prof[0]),
                                   float(np.median(prof[i + 5:])) if i + 5 < len(prof) else float(prof[-1]))
                        lo = min(float(prof[:max(i - 3, 1)].max()), float(prof[i + 4:].max()) if i + 4 < len(prof) else 0)
                        if lo - prof[i] < 12 or side - prof[i] < 8:
                            continue
                        # Sub-pixel: parabola through the minimum.
                        y0, y1, y2 = prof[i - 1], prof[i], prof[i + 1]
                        den = y0 - 2 * y1 + y2
                        off = 0.5 * (y0 - y2) / den if den > 1e-6 else 0.0
                        x_c = c0 + i + float(np.clip(off, -0.5, 0.5))
                        a_c = (a0 + a1 - 1) / 2
                        cpt = (x_c, a_c) if axis == 0 else (a_c, x_c)
                        mpt = (k * q, (a_c + 0.5) / P - m) if axis == 0 else ((a_c + 0.5) / P - m, k * q)
                        found.append(cpt)
                        model.append(mpt)
            if len(found) < 12:
                return H, inliers
            img_pts = cv2.perspectiveTransform(np.array(found, np.float32).reshape(-1, 1, 2), Hc.astype(np.float64))
            Hn, inl = cv2.findHomography(np.array(model, np.float32), img_pts.reshape(-1, 2), cv2.RANSAC,
                                         max(1.0, 0.25 * P * _scale(H)))
            if Hn is None or inl is None or inl.sum() < 12:
                return H, inliers
            H, inliers = Hn, int(inl.sum())
        return H, inliers

    def read(self, image_bgr: np.ndarray) -> SheetReading:
        if image_bgr is None or image_bgr.size == 0:
            return SheetReading(False, why="empty image")
        img = image_bgr if image_bgr.ndim == 3 else cv2.cvtColor(image_bgr, cv2.COLOR_GRAY2BGR)
        grey = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
        quads = self._quads(grey)
        hyps: list[tuple[float, np.ndarray]] = []
        pw, ph = self.spec.paper_mm
        paper_mm = np.array([[0, 0], [pw, 0], [pw, ph], [0, ph]], np.float32)
        gx, gy = self._paper_off
        to_paper = np.array([[1, 0, gx], [0, 1, gy], [0, 0, 1]], np.float64)
        # A quarter turn of the corner order changes the grid's fit; a half turn only its
        # reading direction: the grid lines are refitted once per fit, both directions scored.
        gw, gh = self.cols_n * self.q, self.rows_n * self.q
        half = np.array([[-1, 0, gw], [0, -1, gh], [0, 0, 1]], np.float64)
        for quad in quads:
            for k in range(2):
                corners = np.roll(quad, -k, axis=0)
                # The outline is the grid's border, or (the grid's thin lines lost to
                # blur) the paper's edge, the grid then where the kit prints it.
                for H in (cv2.getPerspectiveTransform(self.grid_mm, corners),
                          cv2.getPerspectiveTransform(paper_mm, corners) @ to_paper):
                    hyps.append((max(self._orientation_score(img, H), self._orientation_score(img, H @ half)), H))
        hyps.sort(key=lambda h: -h[0])
        # Under motion blur the sharp print matches the right outline poorly until the
        # grid lines are refitted to it (a cluster of pen marks can score better before),
        # so every hypothesis is refitted and judged afterwards; one whose refit found
        # too few grid lines (MIN_GRID_LINES) is no grid.
        best = None
        for _, H0 in hyps:
            H1, lines = self._refine(grey, H0)
            if lines < MIN_GRID_LINES:
                continue
            for Hd in (H1, H1 @ half):
                s1 = self._orientation_score(img, Hd)
                if best is None or (s1, lines) > (best[0], best[2]):
                    best = (s1, Hd, lines)
        if best is None or best[0] < 0.15:
            return SheetReading(False, why="no Bloxx! sheet grid found in the photo")
        H = best[1]
        corners = cv2.perspectiveTransform(self.grid_mm.reshape(-1, 1, 2), H).reshape(4, 2)
        rows, conf, feats = self._classify(img, H)
        return SheetReading(True, rows, conf, corners, features={"orientation_score": best[0], **feats})

    # --------------------------------------------------------------- squares
    def _paper_levels(self, can: np.ndarray, n: int, m: int, interior: np.ndarray) -> np.ndarray:
        """Each square's paper colour (BGR) in the photo: its printed tint (kit, edition)
        under the light there. The light is a local fit (Gaussian-weighted plane, per
        channel) to the paper seen in a thin strip just outside the grid (never inked)
        and to the squares whose brightest pixels are paper; a square much darker than
        the fit around it is inked and left out, and the fit repeated."""
        tint = {row: self.spec.row_colors[name] for name, row in self.edition.coloured_rows}
        rn, cn = self.rows_n, self.cols_n
        tpl = np.ones((rn, cn, 3), np.float32)
        for row, rgb in tint.items():
            tpl[row, :] = np.array(rgb[::-1], np.float32) / 255.0
        pts, vals, fixed = [], [], []
        for r in range(rn):
            for c in range(cn):
                sq = can[m + r * n:m + (r + 1) * n, m + c * n:m + (c + 1) * n][interior]
                pts.append((c + 0.5, r + 0.5))
                vals.append(np.percentile(sq, 92, axis=0) / tpl[r, c])
                fixed.append(False)
        # The strip 0.1..0.25 of a square outside the border, a sample per square side.
        a0, a1 = int(m - 0.25 * n), int(m - 0.1 * n)
        Hh, W = can.shape[:2]
        for c in range(cn):
            x0, x1 = m + c * n + n // 5, m + (c + 1) * n - n // 5
            for y0, y1, yy in ((a0, a1, -0.18), (Hh - a1, Hh - a0, rn + 0.18)):
                pts.append((c + 0.5, yy))
                vals.append(np.percentile(can[y0:y1, x0:x1].reshape(-1, 3), 80, axis=0))
                fixed.append(True)
        for r in range(rn):
            y0, y1 = m + r * n + n // 5, m + (r + 1) * n - n // 5
            for x0, x1, xx in ((a0, a1, -0.18), (W - a1, W - a0, cn + 0.18)):
                pts.append((xx, r + 0.5))
                vals.append(np.percentile(can[y0:y1, x0:x1].reshape(-1, 3), 80, axis=0))
                fixed.append(True)
        P = np.array(pts, np.float64)
        Vv = np.array(vals, np.float64)
        fixed_a = np.array(fixed)
        lum = Vv.mean(axis=1)
        good = fixed_a | (lum >= 0.8 * np.percentile(lum[fixed_a], 50))
        A = np.column_stack([np.ones(len(P)), P[:, 0], P[:, 1]])
        sig2 = 2 * 1.6 ** 2
        sq_idx = np.nonzero(~fixed_a)[0]
        fit = np.zeros((len(sq_idx), 3))
        for _ in range(3):
            for j, i in enumerate(sq_idx):
                d2 = ((P - P[i]) ** 2).sum(axis=1)
                w = np.exp(-d2 / sig2) * good
                if w.sum() < 1e-3:
                    fit[j] = np.median(Vv[good], axis=0)
                    continue
                Aw = A * w[:, None]
                coef, *_ = np.linalg.lstsq(Aw.T @ A + 1e-6 * np.eye(3), Aw.T @ Vv, rcond=None)
                fit[j] = A[i] @ coef
            new = good.copy()
            new[sq_idx] = lum[sq_idx] >= 0.85 * fit.mean(axis=1)
            if np.array_equal(new, good):
                break
            good = new
        # Where a square's own paper shows (bright pixels near the fit), it is the most
        # local measure (and right where the fit's model fails, e.g. clipped highlights).
        own = Vv[sq_idx]
        mine = own.mean(axis=1) >= 0.85 * fit.mean(axis=1)
        fit[mine] = own[mine]
        light = fit.reshape(rn, cn, 3).astype(np.float32)
        return light * tpl

    def _printed_mask(self, n: int, m: int, shape: tuple[int, int]) -> np.ndarray:
        """1 where the blank sheet has print (lines, numbers), grown by a pixel or two
        for registration error, on the canonical grid warp; cached."""
        key = (n, m, shape)
        if getattr(self, "_printed_key", None) != key:
            from calibration.render.bloxx import draw_blank_sheet

            ppm = n / self.q
            blank = draw_blank_sheet(self.kit, self.edition, ppm)
            gx, gy = self._paper_off
            x0, y0 = int(round(gx * ppm)) - m, int(round(gy * ppm)) - m
            pad = np.full((shape[0], shape[1]), 255, np.uint8)
            src = blank.min(axis=2)
            ys, xs = max(y0, 0), max(x0, 0)
            crop = src[ys:y0 + shape[0], xs:x0 + shape[1]]
            pad[ys - y0:ys - y0 + crop.shape[0], xs - x0:xs - x0 + crop.shape[1]] = crop
            mask = (pad < 110).astype(np.uint8)
            mask = cv2.dilate(mask, np.ones((5, 5), np.uint8))
            self._printed = cv2.GaussianBlur(mask.astype(np.float32), (0, 0), 0.8)
            self._printed_key = key
        return self._printed

    def _classify(self, img: np.ndarray, H: np.ndarray) -> tuple[list[str], list[list[float]], dict[str, Any]]:
        q, P = self.q, CANON_PPM
        n = int(round(q * P))
        m = n // 2  # a margin of half a square all round: paper outside the grid
        W, Hh = n * self.cols_n + 2 * m, n * self.rows_n + 2 * m
        S = np.array([[q / n, 0, (0.5 - m) * q / n], [0, q / n, (0.5 - m) * q / n], [0, 0, 1]])
        can = cv2.warpPerspective(img, H @ S, (W, Hh), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                                  borderMode=cv2.BORDER_REPLICATE)
        can = cv2.GaussianBlur(can.astype(np.float32), (0, 0), 0.7)
        u = (np.arange(n) + 0.5) / n - 0.5
        U, V = np.meshgrid(u, u)
        R = np.hypot(U, V)
        ANG = np.arctan2(V, U)
        interior = (np.abs(U) <= 0.41) & (np.abs(V) <= 0.41)
        digit = (np.abs(U) <= 0.17) & (np.abs(V) <= 0.23)
        annulus = interior & (R >= 0.17)
        bins = ((ANG + np.pi) / (2 * np.pi) * 16).astype(int) % 16
        centre = (np.abs(U) <= 0.1) & (np.abs(V) <= 0.1)
        paper = self._paper_levels(can, n, m, interior)
        printed = self._printed_mask(n, m, can.shape[:2])
        rows, conf, feats = [], [], []
        for r in range(self.rows_n):
            line, crow = "", []
            for c in range(self.cols_n):
                sq = can[m + r * n:m + (r + 1) * n, m + c * n:m + (c + 1) * n]
                # Pen ink filters light: the square's transmission against its own paper
                # (tint and light included), the darkest channel (blue ink is darkest in red).
                trans = (sq / np.maximum(paper[r, c], 1.0)).min(axis=2)
                ink = np.clip((1.0 - trans - 0.045) / 0.38, 0, 1)
                # What the sheet prints (grid lines, numbers) is not pen.
                ink = ink * (1.0 - printed[m + r * n:m + (r + 1) * n, m + c * n:m + (c + 1) * n])
                numbered = self.numbered[r][c]
                keep = interior & ~digit if numbered else interior
                ann = annulus & ~digit if numbered else annulus
                cov = float(ink[keep].mean())
                per_bin = np.bincount(bins[ann], weights=ink[ann], minlength=16) / np.maximum(
                    np.bincount(bins[ann], minlength=16), 1)
                f = {
                    "cov": cov,
                    "centre": float(ink[centre].mean()) if not numbered else -1.0,
                    "even": _evenness(per_bin),
                }
                f.update(_strokes(ink, numbered))
                sym, cf = _decide(f)
                line += sym
                crow.append(cf)
                feats.append(f)
            rows.append(line)
            conf.append(crow)
        return rows, conf, {"squares": feats}


def _decide(f: dict[str, float]) -> tuple[str, float]:
    """The mark in a square from its ink features, with a confidence 0..1."""
    from vision._bloxx_marks import classify

    return classify(f)


def _probe_sets(n: int) -> dict[str, Any]:
    """Sample points (square px) of the two matched filters: straight strokes through the
    centre (angle x offset x samples, the middle left out for a printed number) and
    rings (radius x centre offset x samples)."""
    key = n
    cached = _PROBES.get(key)
    if cached is not None:
        return cached
    c = n / 2 - 0.5
    angs = np.radians(np.arange(0, 180, 3.0))
    offs = np.array([-0.06, 0.0, 0.06]) * n
    t = np.concatenate([np.linspace(-0.42, -0.18, 9), np.linspace(0.18, 0.42, 9)]) * n
    d = np.stack([np.cos(angs), np.sin(angs)], 1)
    nrm = np.stack([-np.sin(angs), np.cos(angs)], 1)
    lines = (c + d[:, None, None, :] * t[None, None, :, None] + nrm[:, None, None, :] * offs[None, :, None, None])
    radii = np.array([0.2, 0.24, 0.28, 0.32, 0.36, 0.4]) * n
    cs = np.array([[dx, dy] for dx in (-0.05, 0, 0.05) for dy in (-0.05, 0, 0.05)]) * n
    a = np.linspace(0, 2 * np.pi, 48, endpoint=False)
    ring = np.stack([np.cos(a), np.sin(a)], 1)
    rings = c + cs[None, :, None, :] + radii[:, None, None, None] * ring[None, None, :, :]
    out = {"lines": lines.astype(np.float32), "rings": rings.astype(np.float32), "angles": np.degrees(angs)}
    _PROBES[key] = out
    return out


_PROBES: dict[int, dict[str, Any]] = {}


def _strokes(ink: np.ndarray, numbered: bool) -> dict[str, float]:
    """Matched filters on a square's ink: the best two straight strokes through the
    centre at least 45 degrees apart (a cross), the best ring (a circle)."""
    n = ink.shape[0]
    pr = _probe_sets(n)
    L = pr["lines"]
    vals = cv2.remap(ink, L[..., 0].reshape(1, -1), L[..., 1].reshape(1, -1), cv2.INTER_LINEAR,
                     borderMode=cv2.BORDER_REPLICATE).reshape(L.shape[:3])
    # A stroke: its weaker half counts (a cross's stroke crosses the whole square).
    half = vals.shape[2] // 2
    per = np.minimum(vals[..., :half].mean(axis=2), vals[..., half:].mean(axis=2)).max(axis=1)
    i1 = int(np.argmax(per))
    angs = pr["angles"]
    diff = np.abs((angs - angs[i1] + 90) % 180 - 90)
    line2 = float(per[diff >= 45].max())
    Rg = pr["rings"]
    rv = cv2.remap(ink, Rg[..., 0].reshape(1, -1), Rg[..., 1].reshape(1, -1), cv2.INTER_LINEAR,
                   borderMode=cv2.BORDER_REPLICATE).reshape(Rg.shape[:3])
    # A ring: its weakest eighth counts little (an open circle), the rest must be inked.
    srt = np.sort(rv, axis=2)
    ring = float(srt[..., 6:].mean(axis=2).max())
    return {"line1": float(per[i1]), "line2": line2, "ring": ring}


def _evenness(per_bin: np.ndarray) -> float:
    """How evenly ink spreads around the centre: weakest half of the directions over
    the strongest quarter (a circle near 1, a cross near 0)."""
    v = np.sort(per_bin)
    return float(v[:8].mean() / (v[-4:].mean() + 0.05))


def _signed_area(quad: np.ndarray) -> float:
    x, y = quad[:, 0], quad[:, 1]
    return 0.5 * float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))


def _scale(H: np.ndarray) -> float:
    """Image pixels per model mm near the model origin (roughly)."""
    p = cv2.perspectiveTransform(np.array([[[0, 0]], [[10, 0]], [[0, 10]]], np.float32), H).reshape(3, 2)
    return float((np.linalg.norm(p[1] - p[0]) + np.linalg.norm(p[2] - p[0])) / 20)


# ========================================================================= reconcile


def _as_rows(sheet: Any, geometry: Any = None) -> list[str]:
    if isinstance(sheet, SheetReading):
        if not sheet.found or sheet.rows is None:
            raise ValueError("the sheet was not read")
        return list(sheet.rows)
    if isinstance(sheet, Sheet):
        return sheet.rows()
    if isinstance(sheet, dict):
        sheet = sheet.get("sheet", sheet.get("state", {}).get("sheet") if isinstance(sheet.get("state"), dict) else None)
    if not (isinstance(sheet, (list, tuple)) and all(isinstance(s, str) for s in sheet)):
        raise ValueError("a sheet is a list of row strings, top to bottom")
    return list(sheet)


def reconcile(read_sheet: Any, engine_sheet: Any, *, min_confidence: float = 0.0) -> list[dict[str, Any]]:
    """The squares where the read sheet and the engine's record disagree (row-major).

    Squares read with a confidence below ``min_confidence`` are left out (the reading
    is not sure enough to contradict the record)."""
    a = _as_rows(read_sheet)
    b = _as_rows(engine_sheet)
    if len(a) != len(b) or any(len(x) != len(y) for x, y in zip(a, b)):
        raise ValueError(f"sheets of different sizes: {len(a)} and {len(b)} rows")
    conf = read_sheet.confidence if isinstance(read_sheet, SheetReading) else None
    out = []
    for r, (ra, rb_) in enumerate(zip(a, b)):
        for c, (x, y) in enumerate(zip(ra, rb_)):
            if x == y:
                continue
            cf = float(conf[r][c]) if conf else 1.0
            if cf < min_confidence:
                continue
            out.append({"at": [r, c], "read": x, "engine": y, "confidence": round(cf, 3)})
    return out


# ============================================================================= score


def score(truth: dict[str, Any], observed: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """Metric name -> (errors, total) for one frame (see the module docstring)."""
    out: dict[str, tuple[int, int]] = {}
    ts, os_ = truth.get("state", truth), observed.get("state", observed) if observed else {}
    if "dice" in ts:
        got = (os_ or {}).get("dice") or {}
        covered = set(truth.get("occluded", []))
        err = tot = wrong = 0
        for die, face in ts["dice"].items():
            g = got.get(die)
            if g is not None and g != face:
                wrong += 1
            if die in covered:
                continue
            tot += 1
            err += g != face
        out["dice"] = (err, tot)
        out["dice_wrong"] = (wrong, len(ts["dice"]))
    if "sheet" in ts:
        rows = (os_ or {}).get("sheet")
        total = sum(len(r) for r in ts["sheet"])
        if not rows:
            out["sheet_squares"] = (total, total)
        else:
            out["sheet_squares"] = (sum(a != b for x, y in zip(ts["sheet"], rows) for a, b in zip(x, y)), total)
    return out
