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
drawn from the edition's cells and circle and the kit's print sizes. The best face
must beat every other face clearly, or the die is not read. Which die is which comes
out of the match too: a white die's print is dark on light, a black die's light on dark.

Sheet: dark ink is thresholded locally; the biggest ink component is the grid (its
lines connect everything); its outline gives four corners, the rotation is the one
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
# print): the best face must reach MIN_NCC and beat the runner-up by MIN_MARGIN.
MIN_NCC = 0.7
MIN_MARGIN = 0.05
SURE_NCC = 0.8
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


@dataclass
class _Hit:
    die: str
    face: str
    score: float
    runner_up: float  # best score of any other face of the same die
    x: float  # top-face centre, board mm
    y: float
    yaw: float


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
            c = _die_confidence(h.score, h.runner_up)
            if h.score < MIN_NCC or h.score - h.runner_up < MIN_MARGIN:
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
            hits += self._match(win, (x0, y0), (cx_mm * FINE_PPM - x0, cy_mm * FINE_PPM - y0))
            sure = {h.die for h in hits if h.score >= SURE_NCC and h.score - h.runner_up >= 2 * MIN_MARGIN}
            if len(sure) == len(self.dice):
                break  # both dice found beyond doubt: the other spots are shadows or hands
        return hits

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

    def _match(self, win: np.ndarray, origin: tuple[int, int], centre: tuple[float, float]) -> list[_Hit]:
        size = self.bx.die.size_mm
        ang, strength = _dominant_angle(win, centre, 0.8 * size * FINE_PPM)
        M0 = cv2.getRotationMatrix2D(centre, ang, 1.0)
        rot0 = cv2.warpAffine(win, M0, (win.shape[1], win.shape[0]), flags=cv2.INTER_LINEAR,
                              borderMode=cv2.BORDER_REPLICATE)
        # Coarse: every face in every quarter turn, over the whole window.
        small = cv2.resize(rot0, None, fx=COARSE_PPM / FINE_PPM, fy=COARSE_PPM / FINE_PPM, interpolation=cv2.INTER_AREA)
        coarse = []
        for t in self.templates:
            if small.shape[0] < t.coarse.shape[0] or small.shape[1] < t.coarse.shape[1]:
                return []
            _, mx, _, loc = cv2.minMaxLoc(_ncc_map(small, t.coarse))
            coarse.append((mx, loc, t))
        coarse.sort(key=lambda s: -s[0])
        top_loc = coarse[0][1]
        # Fine: the best few faces of each die (two quarter turns each), near the best
        # coarse position (the face square is the same for every face), at the edge
        # angle and slightly either side of it.
        chosen: list[_Template] = []
        for die in self.dice:
            faces: dict[str, int] = {}
            for mx, loc, t in coarse:
                if t.die != die:
                    continue
                if faces.get(t.face, 0) < 2 and (t.face in faces or len(faces) < 3):
                    faces[t.face] = faces.get(t.face, 0) + 1
                    chosen.append(t)
        n = self.templates[0].fine.shape[0]
        pad = int(FINE_PPM * 1.5)
        fx = int(round(top_loc[0] * FINE_PPM / COARSE_PPM))
        fy = int(round(top_loc[1] * FINE_PPM / COARSE_PPM))
        best: dict[tuple[str, str], tuple[float, float, float, float]] = {}  # -> score, x, y, yaw
        for dang in (0.0, -2.5, 2.5):
            theta = ang + dang
            M = cv2.getRotationMatrix2D(centre, theta, 1.0)
            rot = rot0 if dang == 0 else cv2.warpAffine(win, M, (win.shape[1], win.shape[0]), flags=cv2.INTER_LINEAR,
                                                        borderMode=cv2.BORDER_REPLICATE)
            ax0, ay0 = max(0, fx - pad), max(0, fy - pad)
            ax1, ay1 = min(rot.shape[1], fx + n + pad), min(rot.shape[0], fy + n + pad)
            area = rot[ay0:ay1, ax0:ax1]
            if area.shape[0] < n or area.shape[1] < n:
                continue
            Minv = cv2.invertAffineTransform(M)
            for t in chosen:
                _, mx, _, loc = cv2.minMaxLoc(_ncc_map(area, t.fine))
                key = (t.die, t.face)
                if key not in best or mx > best[key][0]:
                    px = np.array([ax0 + loc[0] + n / 2 - 0.5, ay0 + loc[1] + n / 2 - 0.5, 1.0])
                    wx, wy = Minv @ px
                    best[key] = (float(mx), (origin[0] + wx + 0.5) / FINE_PPM, (origin[1] + wy + 0.5) / FINE_PPM,
                                 float(theta))
        hits = []
        for die in self.dice:
            ranked = sorted(((v, k) for k, v in best.items() if k[0] == die), key=lambda x: -x[0][0])
            if not ranked:
                continue
            (s1, x, y, yaw), (_, face) = ranked[0]
            s2 = ranked[1][0][0] if len(ranked) > 1 else -1.0
            hits.append(_Hit(die, face, s1, s2, x, y, yaw))
        return hits

    # -------------------------------------------------------- recogniser interface
    def process(self, frame_bgr: np.ndarray, t: float, index: int, lores: np.ndarray | None = None) -> dict[str, Any]:
        reading = self.read(frame_bgr)
        motion = self.gate.update(frame_bgr, t, lores=lores)
        unread = [d for d, f in reading["dice"].items() if f is None]
        return {"game": GAME, "frame": index, "t": round(float(t), 4), "stable": bool(motion.stable and not unread),
                "occluded": unread, "confidence": round(float(reading["confidence"]), 4),
                "state": {"dice": reading["dice"]},
                "die_confidence": {k: round(float(v), 4) for k, v in reading["die_confidence"].items()}}

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


def _die_confidence(s1: float, s2: float) -> float:
    """0..1 from the best match and its margin over the runner-up."""
    a = np.clip((s1 - MIN_NCC) / 0.25, 0, 1)
    b = np.clip((s1 - s2 - MIN_MARGIN) / 0.2, 0, 1)
    return float(0.5 + 0.5 * min(a, b)) if s1 >= MIN_NCC and s1 - s2 >= MIN_MARGIN else float(0.5 * min(
        np.clip(s1 / MIN_NCC, 0, 1), np.clip((s1 - s2) / MIN_MARGIN, 0, 1)))


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
        # Blur can break thin grid lines: close small breaks so the grid is one piece.
        ink = cv2.dilate(self._ink(grey), np.ones((3, 3), np.uint8))
        n, labels, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
        if n <= 1:
            return []
        order = np.argsort(-stats[1:, cv2.CC_STAT_AREA])[:4] + 1
        H, W = grey.shape
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
        for quad in quads:
            for k in range(4):
                corners = np.roll(quad, -k, axis=0)
                # The outline is the grid's border, or (the grid's thin lines lost to
                # blur) the paper's edge, the grid then where the kit prints it.
                for H in (cv2.getPerspectiveTransform(self.grid_mm, corners),
                          cv2.getPerspectiveTransform(paper_mm, corners) @ to_paper):
                    hyps.append((self._orientation_score(img, H), H))
        hyps.sort(key=lambda h: -h[0])
        best = None
        for s0, H0 in hyps[:3]:
            H1, lines = self._refine(grey, H0)
            s1 = self._orientation_score(img, H1) if lines else s0
            if best is None or (s1, lines) > (best[0], best[2]):
                best = (s1, H1, lines)
        if best is None or best[0] < 0.15 or best[2] < 30:
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
