"""Bloxx! scenes: the two shape dice in the marked rolling area, and hand-held sheet photos.

Everything is drawn from the edition data (``engine/editions/bloxx.json``: the sheet's
numbers and coloured rows, the twelve die faces) and the kit's ``bloxx`` section
(rolling area, die size and print, sheet layout), deterministic from a seed.

* Print geometry shared by the renderer, ``bloxcam print-kit`` and :mod:`vision.bloxx`:
  :func:`face_print` (a die face's ink squares and circle hole), :func:`draw_die_face`,
  :func:`draw_blank_sheet` (the printed sheet at any resolution), :func:`grid_corners_mm`.
* Dice: :func:`sample_roll`, :func:`render_roll` (cubes printed on all six faces, any
  rotation about the vertical, a small tilt, anywhere in the rolling area, with shadows,
  hands and every condition of :func:`calibration.render.scene.sample_conditions`).
* Sheets: :func:`random_sheet` (a sheet reached by legal placements, R-BLOXX-3/4, with
  the placements), :func:`draw_pen_marks` (crosses, circles, shaded gaps and shape
  outlines in varied pens and hands), :func:`render_sheet_photo` (the paper held under
  the camera at any rotation and perspective, under the set-up's light).

Frames follow ``table-kit.md`` (board frame mm, z down). A die face's print frame: mm
from the face centre, x to the right and y down as the face is seen from outside.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from calibration.kit import Kit
from calibration.render import scene as sc
from calibration.render import textures as tx
from calibration.render.view import Texture
from engine.bloxx.edition import BloxxEdition, Face, load_edition
from engine.bloxx.sheet import Sheet

# --------------------------------------------------------------------- print geometry


def face_print(kit: Kit, cells: tuple[tuple[int, int], ...], circle: tuple[int, int]
               ) -> tuple[list[tuple[float, float, float, float]], tuple[float, float, float]]:
    """A face's print in face mm (centre 0): ink squares (x0, y0, x1, y1) and the circle
    hole (cx, cy, radius). The polyomino's bounding box is centred on the face."""
    d = kit.require_bloxx().die
    h = max(r for r, _ in cells) + 1
    w = max(c for _, c in cells) + 1
    half = (d.cell_mm - d.cell_gap_mm) / 2
    rects = []
    for r, c in cells:
        cx, cy = (c - (w - 1) / 2) * d.cell_mm, (r - (h - 1) / 2) * d.cell_mm
        rects.append((cx - half, cy - half, cx + half, cy + half))
    r, c = circle
    return rects, ((c - (w - 1) / 2) * d.cell_mm, (r - (h - 1) / 2) * d.cell_mm, d.circle_mm / 2)


def draw_die_face(kit: Kit, die: str, face: Face, ppm: float, *, body: tuple | None = None,
                  ink: tuple | None = None, quarter_turns: int = 0) -> np.ndarray:
    """The face as printed (sRGB uint8, ``size_mm * ppm`` square), turned clockwise by
    ``quarter_turns``, with a slightly darker rounded rim."""
    d = kit.require_bloxx().die
    body = body or d.colors[die][0]
    ink = ink or d.colors[die][1]
    n = int(round(d.size_mm * ppm))
    img = np.empty((n, n, 3), np.uint8)
    img[:] = body
    half = d.size_mm / 2

    def px(x: float, y: float) -> tuple[int, int]:
        return int(round(((x + half) * ppm - 0.5) * 16)), int(round(((y + half) * ppm - 0.5) * 16))

    rim = tuple(int(v * 0.86) for v in body)
    cv2.rectangle(img, (0, 0), (n - 1, n - 1), rim, max(1, int(round(0.5 * ppm))), cv2.LINE_AA)
    rects, (cx, cy, rad) = face_print(kit, face.cells, face.circle)
    for x0, y0, x1, y1 in rects:
        pts = np.array([px(x0, y0), px(x1, y0), px(x1, y1), px(x0, y1)], np.int32)
        cv2.fillConvexPoly(img, pts, ink, cv2.LINE_AA, 4)
    cv2.circle(img, px(cx, cy), int(round(rad * ppm * 16)), body, -1, cv2.LINE_AA, 4)
    return np.ascontiguousarray(np.rot90(img, -quarter_turns % 4))


def grid_corners_mm(kit: Kit) -> np.ndarray:
    """The sheet grid's outer corners on the paper (mm from its top-left): TL, TR, BR, BL."""
    s = kit.require_bloxx().sheet
    x0, y0 = s.grid_origin_mm
    w, h = 7 * s.square_mm, 10 * s.square_mm
    return np.array([[x0, y0], [x0 + w, y0], [x0 + w, y0 + h], [x0, y0 + h]], float)


def draw_blank_sheet(kit: Kit, edition: BloxxEdition, ppm: float, *, grey: bool = False) -> np.ndarray:
    """A blank Bloxx! sheet as printed (paper_mm at ``ppm``): title, the 7 x 10 grid
    (thin lines, a thicker border), coloured rows tinted, numbers in their squares, and
    the row-bonus boxes (4 and 2 per colour) under the grid. sRGB uint8 (or grey)."""
    s = kit.require_bloxx().sheet
    W, H = int(round(s.paper_mm[0] * ppm)), int(round(s.paper_mm[1] * ppm))
    img = np.full((H, W, 3), 255, np.uint8)
    tex = Texture(img, ppm, 0.0, 0.0)
    q = s.square_mm
    gx, gy = s.grid_origin_mm
    ink = tuple(int(v) for v in s.ink)
    colours = {row: s.row_colors[name] for name, row in edition.coloured_rows}
    for row, rgb in colours.items():
        tx.fill_mm(tex, [np.array([[gx, gy + row * q], [gx + 7 * q, gy + row * q], [gx + 7 * q, gy + (row + 1) * q],
                                   [gx, gy + (row + 1) * q]])], tuple(int(v) for v in rgb))
    for r in range(edition.rows):
        for c in range(edition.columns):
            v = edition.value(r, c)
            if v:
                tx.text_mm(tex, str(v), gx + (c + 0.5) * q, gy + (r + 0.5) * q, s.number_mm, ink, s.number_mm * 0.11)

    def bar(x0: float, y0: float, x1: float, y1: float) -> None:
        tx.fill_mm(tex, [np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]])], ink)

    lw, bw = s.line_mm / 2, s.border_mm / 2
    for k in range(1, 7):
        bar(gx + k * q - lw, gy, gx + k * q + lw, gy + 10 * q)
    for k in range(1, 10):
        bar(gx, gy + k * q - lw, gx + 7 * q, gy + k * q + lw)
    for x in (gx, gx + 7 * q):
        bar(x - bw, gy - bw, x + bw, gy + 10 * q + bw)
    for y in (gy, gy + 10 * q):
        bar(gx - bw, y - bw, gx + 7 * q + bw, y + bw)
    tx.text_mm(tex, "BLOXX!", s.paper_mm[0] / 2, gy / 2, min(6.0, gy * 0.4), ink, 0.9)
    # Row bonuses under the grid: per coloured row a swatch with 4 and 2 to circle.
    by = gy + 10 * q + 3.0
    if by + 9 <= s.paper_mm[1]:
        slot = 7 * q / len(colours)
        for k, (row, rgb) in enumerate(sorted(colours.items())):
            x = gx + k * slot
            tx.fill_mm(tex, [np.array([[x + 1, by], [x + slot - 1, by], [x + slot - 1, by + 8], [x + 1, by + 8]])],
                       tuple(int(v) for v in rgb))
            tx.text_mm(tex, "4", x + slot * 0.32, by + 4, 3.0, ink, 0.35)
            tx.text_mm(tex, "2", x + slot * 0.68, by + 4, 3.0, ink, 0.35)
    return cv2.cvtColor(img, cv2.COLOR_RGB2GRAY) if grey else img


# ------------------------------------------------------------------------------ dice


@dataclass
class DiePose:
    """Where a die lies: centre (x, y) mm in the rolling area, yaw about the vertical
    (degrees), tilt (degrees, about the horizontal axis at ``tilt_axis`` degrees)."""

    name: str
    face: str
    x: float
    y: float
    yaw: float
    tilt: float = 0.0
    tilt_axis: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"die": self.name, "face": self.face, "x": round(self.x, 3), "y": round(self.y, 3),
                "yaw": round(self.yaw, 3), "tilt": round(self.tilt, 3), "tilt_axis": round(self.tilt_axis, 3)}


def sample_roll(kit: Kit, edition: BloxxEdition, rng: np.random.Generator, *,
                faces: dict[str, str] | None = None) -> list[DiePose]:
    """A roll: each die's up face (uniform, or ``faces``) and a resting pose anywhere in
    the rolling area, the dice apart from each other."""
    b = kit.require_bloxx()
    w, h = b.rolling_area_mm
    m = b.die.size_mm * 1.1
    out: list[DiePose] = []
    for die in edition.dice:
        face = (faces or {}).get(die.name) or str(rng.choice([f.name for f in die.faces]))
        for _ in range(200):
            x, y = float(rng.uniform(m, w - m)), float(rng.uniform(m, h - m))
            if all(math.hypot(x - o.x, y - o.y) > b.die.size_mm * 1.6 for o in out):
                break
        tilt = float(rng.uniform(0, b.die.max_tilt_deg)) if rng.random() < 0.5 else 0.0
        out.append(DiePose(die.name, face, x, y, float(rng.uniform(0, 360)), tilt, float(rng.uniform(0, 360))))
    return out


# Opposite faces of a die in edition order (as on a common die: 1-6, 2-5, 3-4).
_OPPOSITE = {0: 5, 5: 0, 1: 4, 4: 1, 2: 3, 3: 2}


def _rot_z(deg: float) -> np.ndarray:
    a = math.radians(deg)
    return np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1.0]])


def die_geometry(kit: Kit, pose: DiePose) -> tuple[np.ndarray, np.ndarray]:
    """The die's rotation (local -> board frame) and centre, resting on the table."""
    size = kit.require_bloxx().die.size_mm
    a = math.radians(pose.tilt_axis)
    axis = np.array([math.cos(a), math.sin(a), 0.0])
    R_tilt = cv2.Rodrigues(axis * math.radians(pose.tilt))[0]
    R = R_tilt @ _rot_z(pose.yaw)
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float) * size / 2
    low = float((corners @ R.T)[:, 2].max())
    return R, np.array([pose.x, pose.y, -low])


def die_corners(kit: Kit, pose: DiePose) -> np.ndarray:
    size = kit.require_bloxx().die.size_mm
    R, c = die_geometry(kit, pose)
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float) * size / 2
    return corners @ R.T + c


def _die_faces(kit: Kit, edition: BloxxEdition, pose: DiePose) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, str, int]]:
    """(outward normal n, in-plane u, v, face name, quarter turns) in the die's local frame
    for the six faces. u x v points inward, so a texture reads right seen from outside."""
    die = edition.dice[edition.die_index(pose.name)]
    names = [f.name for f in die.faces]
    up = names.index(pose.face)
    sides = [k for k in range(6) if k not in (up, _OPPOSITE[up])]
    X, Y, Z = np.eye(3)
    # Top (z up = -Z), bottom, then the four sides.
    frames = [(-Z, X, Y), (Z, X, -Y), (X, -Y, Z), (-X, Y, Z), (Y, X, Z), (-Y, -X, Z)]
    order = [up, _OPPOSITE[up]] + sides
    # Each side's print turned by a fixed amount per die, so the layout is one die's.
    turns = [0, 1, 2, 3, 1, 2]
    return [(n, u, v, names[k], turns[i] if i else 0) for i, ((n, u, v), k) in enumerate(zip(frames, order))]


def render_roll(setup: sc.SetUp, edition: BloxxEdition, roll: list[DiePose], cond: sc.Conditions, seed: int, *,
                frame: int = 0, t: float = 0.0, occlusion_threshold: float = 0.15) -> sc.Rendered:
    """The rolling area with the dice of ``roll``; truth ``{"dice": {die: face}}``.

    ``occluded`` lists the dice a hand covers by at least ``occlusion_threshold`` of
    their outline."""
    rng = np.random.default_rng([seed, 1303])
    kit = setup.kit
    b = kit.require_bloxx()
    view = setup.view()
    area = b.rolling_area_mm
    tex = tx.table_texture(kit, "bloxx", {}, table_rgb=sc.TABLE_COLOURS[setup.table], drift=setup.drift,
                           markers=setup.markers, rng=np.random.default_rng([seed, 7]), ppm=setup.texture_ppm())
    solids: list[tuple[np.ndarray, float]] = [(die_corners(kit, p), 0.0) for p in roll]
    for hand in cond.hands:
        solids += [(c[None], r) for c, r in sc.hand_spheres(hand, area)]
    canvas, ref = sc._table_layer(view, tex, setup, cond, solids)

    cam = view.camera_position
    size = b.die.size_mm
    # Texels per mm where the dice are seen: as fine as the canvas, at least 8.
    ppm = max(8.0, float(setup.intr.fx * setup.ss / max(view.depth(np.array([[area[0] / 2, area[1] / 2, 0]]))[0], 1)))
    patches = []
    for p in roll:
        R, centre = die_geometry(kit, p)
        drift = setup.drift.get(f"die-{p.name}", (1.0, 1.0, 1.0))
        body, ink = b.die.colors[p.name]
        body = tuple(int(np.clip(v * f, 0, 255)) for v, f in zip(body, drift))
        for n, u, v, fname, turns in _die_faces(kit, edition, p):
            nw, uw, vw = R @ n, R @ u, R @ v
            fc = centre + nw * size / 2
            if np.dot(nw, cam - fc) <= 0:
                continue
            img = draw_die_face(kit, p.name, edition.face(fname), ppm, body=body, ink=ink, quarter_turns=turns)
            ftex = Texture(img, ppm, -size / 2, -size / 2, np.full(img.shape[:2], 255, np.uint8))
            patches.append((float(view.depth(fc[None])[0]), ftex, uw, vw, fc, nw))
    patches.sort(key=lambda q: -q[0])
    for _, ftex, uw, vw, fc, nw in patches:
        R_pc = np.column_stack([setup.R @ uw, setup.R @ vw, setup.R @ np.cross(uw, vw)])
        t_pc = setup.R @ fc + setup.t
        shade = sc._shade(nw, fc, cond, ref)
        sc._composite(view, canvas, ftex, R_pc, t_pc, shade)

    hand_mask = np.zeros(canvas.shape[:2], np.uint8)
    for hand in cond.hands:
        sc._draw_hand(view, canvas, hand_mask, hand, area, cond, ref)
    image = sc._finish(view, canvas, cond, rng)
    occlusion = {}
    for p in roll:
        hull = cv2.convexHull(view.to_canvas(view.project(die_corners(kit, p))).astype(np.float32))
        m = np.zeros(canvas.shape[:2], np.uint8)
        cv2.fillConvexPoly(m, np.round(hull * 16).astype(np.int32), 255, cv2.LINE_8, 4)
        tot = float(np.count_nonzero(m))
        occlusion[p.name] = float(np.count_nonzero(m & hand_mask)) / tot if tot else 0.0
    occluded = sorted(k for k, v in occlusion.items() if v >= occlusion_threshold)
    truth = {"game": "bloxx", "frame": frame, "t": round(t, 4), "stable": not cond.hands, "occluded": occluded,
             "confidence": 1.0, "state": {"dice": {p.name: p.face for p in roll}}}
    meta = {"seed": seed, "conditions": cond.to_json(), "dice": [p.to_json() for p in roll],
            "occlusion": {k: round(v, 4) for k, v in occlusion.items()}}
    return sc.Rendered(image, truth, occlusion, meta)


def bloxx_setup(kit: Kit, seed: int, *, model: str = "cm3", size: tuple[int, int] = (2304, 1296),
                **kw: Any) -> sc.SetUp:
    """A camera set-up over the rolling area (:func:`scene.sample_setup` for ``bloxx``),
    with a print drift for each die's body as well."""
    setup = sc.sample_setup(kit, "bloxx", seed, model=model, size=size, **kw)
    rng = np.random.default_rng([seed, 1301])
    amount = kit.conditions.max_print_drift
    for name in kit.require_bloxx().die.colors:
        setup.drift[f"die-{name}"] = tuple(float(v) for v in rng.uniform(1 - amount, 1 + amount, 3))
    return setup


# ---------------------------------------------------------------------------- sheets


@dataclass
class Placed:
    cells: tuple[tuple[int, int], ...]
    circle: tuple[int, int] | None  # None: drawn as a cross (R-BLOXX-5)


def random_sheet(edition: BloxxEdition, rng: np.random.Generator, *, shapes: int | None = None
                 ) -> tuple[list[str], list[Placed]]:
    """A sheet after up to ``shapes`` legal placements (R-BLOXX-3) with gaps coloured
    (R-BLOXX-4): its rows (observation form) and the placements, in order."""
    g = edition.geometry
    sheet = Sheet(g)
    placed: list[Placed] = []
    want = int(rng.integers(0, 16)) if shapes is None else shapes
    faces = [f.name for d in edition.dice for f in d.faces]
    for _ in range(want):
        ok = []
        for _try in range(6):
            name = str(rng.choice(faces))
            for pl in edition.placements(name):
                if pl.mask & sheet.filled:
                    continue
                if not sheet.drawn:
                    if not pl.mask & g.bottom:
                        continue
                elif not sheet.neighbours(sheet.drawn) & pl.mask:
                    continue
                ok.append(pl)
            if ok:
                break
        if not ok:
            break
        pl = ok[int(rng.integers(len(ok)))]
        circle = rng.random() > 0.3
        sheet = sheet.with_shape(pl.mask, pl.circle_bit if circle else 0)
        placed.append(Placed(pl.cells, pl.circle if circle else None))
    return sheet.rows(), placed


@dataclass
class Pen:
    rgb: tuple[int, int, int]
    width_mm: float
    opacity: float
    wobble_mm: float  # low-frequency hand wobble
    jitter_mm: float  # per-point tremor
    name: str = "pen"


def random_pen(rng: np.random.Generator) -> Pen:
    kind = str(rng.choice(["ballpoint", "ballpoint", "gel", "felt"]))
    blue = rng.random() < 0.5
    if blue:
        rgb = (int(rng.uniform(15, 60)), int(rng.uniform(35, 90)), int(rng.uniform(120, 190)))
    else:
        v = int(rng.uniform(15, 45))
        rgb = (v, v, v + int(rng.uniform(0, 10)))
    width = {"ballpoint": rng.uniform(0.25, 0.45), "gel": rng.uniform(0.4, 0.65), "felt": rng.uniform(0.6, 1.0)}[kind]
    opacity = {"ballpoint": rng.uniform(0.55, 0.9), "gel": rng.uniform(0.8, 1.0), "felt": rng.uniform(0.85, 1.0)}[kind]
    return Pen(rgb, float(width), float(opacity), float(rng.uniform(0.05, 0.35)), float(rng.uniform(0.01, 0.06)),
               f"{'blue' if blue else 'black'} {kind}")


class _Ink:
    """Pen strokes accumulated as coverage on the sheet texture, then laid on the paper."""

    def __init__(self, shape: tuple[int, int], ppm: float, pen: Pen, rng: np.random.Generator) -> None:
        self.cov = np.zeros(shape, np.float32)
        self.ppm = ppm
        self.pen = pen
        self.rng = rng

    def stroke(self, pts_mm: np.ndarray) -> None:
        """A stroke along ``pts_mm`` with the hand's wobble, tremor and pressure."""
        pts = np.asarray(pts_mm, float)
        # Resample to ~0.25 mm so wobble and tremor act along the stroke.
        seg = np.linalg.norm(np.diff(pts, axis=0), axis=1)
        length = float(seg.sum())
        if length <= 0:
            return
        s = np.concatenate([[0], np.cumsum(seg)])
        n = max(2, int(length / 0.25))
        t = np.linspace(0, length, n)
        p = np.column_stack([np.interp(t, s, pts[:, 0]), np.interp(t, s, pts[:, 1])])
        rng, pen = self.rng, self.pen
        for k in range(2):
            f, ph = rng.uniform(0.05, 0.35), rng.uniform(0, 2 * np.pi)
            p[:, k] += pen.wobble_mm * np.sin(t * f * 2 * np.pi / 3 + ph)
        p += rng.normal(0, pen.jitter_mm, p.shape)
        q = np.round((p * self.ppm - 0.5) * 16).astype(np.int32)
        # Draw in the stroke's own box only (the sheet texture is large).
        pad = int(pen.width_mm * self.ppm * 1.3) + 3
        x0, y0 = (q.min(axis=0) >> 4) - pad
        x1, y1 = (q.max(axis=0) >> 4) + pad + 1
        Hc, Wc = self.cov.shape
        x0, y0, x1, y1 = max(int(x0), 0), max(int(y0), 0), min(int(x1), Wc), min(int(y1), Hc)
        if x1 <= x0 or y1 <= y0:
            return
        q = q - np.array([x0, y0], np.int32) * 16
        roi = self.cov[y0:y1, x0:x1]
        layer = np.zeros_like(roi)
        # Pressure: the line thins and fades a little along the stroke, in a few pieces.
        pieces = max(1, n // 12)
        bounds = np.linspace(0, n - 1, pieces + 1).astype(int)
        for a, b in zip(bounds[:-1], bounds[1:]):
            w = pen.width_mm * rng.uniform(0.8, 1.15)
            th = max(1, int(round(w * self.ppm)))
            val = float(np.clip(pen.opacity * rng.uniform(0.85, 1.1), 0, 1))
            cv2.polylines(layer, [q[a:b + 1]], False, val, th, cv2.LINE_AA, 4)
        np.maximum(roi, layer, out=roi)

    def apply(self, img: np.ndarray) -> None:
        cov = self.cov[..., None]
        ink = np.array(self.pen.rgb, np.float32)
        # Ink filters light: multiply the paper by the ink's transmission.
        trans = ink / 255.0
        img[:] = np.clip(img.astype(np.float32) * (1 - cov + cov * trans), 0, 255).astype(np.uint8)


def draw_pen_marks(img: np.ndarray, ppm: float, kit: Kit, rows: list[str], placed: list[Placed] | None,
                   rng: np.random.Generator, pen: Pen | None = None) -> dict[str, Any]:
    """Draw the sheet ``rows`` in pen on the sheet image ``img`` (paper mm at ``ppm``):
    crosses, circles, shaded gaps, and (sometimes) the shapes' sketched outlines.
    Returns the pen used and the drawing style, for the meta."""
    s = kit.require_bloxx().sheet
    q = s.square_mm
    gx, gy = s.grid_origin_mm
    pen = pen or random_pen(rng)
    ink = _Ink(img.shape[:2], ppm, pen, rng)
    # One writer's habits for the whole sheet, varied square by square.
    size = float(rng.uniform(0.26, 0.4))
    slant = float(rng.uniform(-12, 12))
    circ = float(rng.uniform(0.25, 0.34))
    # A ballpoint cannot lay a solid fill: it hatches.
    styles = ["zigzag", "cross", "scribble"] + (["solid"] if pen.width_mm >= 0.4 else [])
    hatch = str(rng.choice(styles))
    outlines = bool(rng.random() < 0.6) and placed is not None

    def rot(pts: np.ndarray, deg: float) -> np.ndarray:
        a = math.radians(deg)
        return pts @ np.array([[math.cos(a), math.sin(a)], [-math.sin(a), math.cos(a)]])

    for r, line in enumerate(rows):
        for c, ch in enumerate(line):
            cx = gx + (c + 0.5) * q + rng.normal(0, 0.04) * q
            cy = gy + (r + 0.5) * q + rng.normal(0, 0.04) * q
            if ch == "x":
                a = q * size * rng.uniform(0.85, 1.15)
                ang = slant + rng.normal(0, 5)
                for sx in (1, -1):
                    e0 = np.array([-a * sx, -a]) * rng.uniform(0.85, 1.1)
                    e1 = np.array([a * sx, a]) * rng.uniform(0.85, 1.1)
                    mid = (e0 + e1) / 2 + rng.normal(0, 0.04 * q, 2)
                    ink.stroke(rot(np.array([e0, mid, e1]), ang) + [cx, cy])
            elif ch == "o":
                rx = q * circ * rng.uniform(0.9, 1.12)
                ry = rx * rng.uniform(0.85, 1.1)
                start = rng.uniform(0, 2 * np.pi)
                sweep = rng.uniform(1.85, 2.2) * np.pi
                th = start + np.linspace(0, sweep, 60)
                rad = 1 + 0.06 * np.sin(th * rng.uniform(1, 3) + rng.uniform(0, 6)) + np.linspace(0, rng.uniform(-0.1, 0.1), 60)
                pts = np.column_stack([rx * rad * np.cos(th), ry * rad * np.sin(th)])
                ink.stroke(rot(pts, rng.uniform(0, 180)) + [cx, cy])
            elif ch == "#":
                _shade_square(ink, cx, cy, q, hatch, rng)
    if outlines:
        for pl in placed or []:
            cells = set(pl.cells)
            for r, c in cells:
                x0, y0 = gx + c * q, gy + r * q
                edges = []
                if (r - 1, c) not in cells:
                    edges.append(((x0, y0), (x0 + q, y0)))
                if (r + 1, c) not in cells:
                    edges.append(((x0, y0 + q), (x0 + q, y0 + q)))
                if (r, c - 1) not in cells:
                    edges.append(((x0, y0), (x0, y0 + q)))
                if (r, c + 1) not in cells:
                    edges.append(((x0 + q, y0), (x0 + q, y0 + q)))
                for a, b in edges:
                    off = rng.normal(0, 0.25, 2)
                    a2 = np.array(a) + off + rng.normal(0, 0.4, 2) * 0.5
                    b2 = np.array(b) + off + rng.normal(0, 0.4, 2) * 0.5
                    ink.stroke(np.array([a2, b2]))
    ink.apply(img)
    return {"pen": {"name": pen.name, "rgb": list(pen.rgb), "width_mm": round(pen.width_mm, 3),
                    "opacity": round(pen.opacity, 3)},
            "cross_size": round(size, 3), "slant": round(slant, 2), "circle_size": round(circ, 3), "shading": hatch,
            "outlines": outlines}


def _shade_square(ink: _Ink, cx: float, cy: float, q: float, style: str, rng: np.random.Generator) -> None:
    """Colour a gap square in: dense zig-zag, cross-hatching, a scribble or a solid fill."""
    half = q / 2 - rng.uniform(-0.3, 1.0)
    w = ink.pen.width_mm
    if style == "solid":
        pts = np.array([[cx - half, cy - half], [cx + half, cy - half], [cx + half, cy + half], [cx - half, cy + half]])
        poly = np.round((pts * ink.ppm - 0.5) * 16).astype(np.int32)
        layer = np.zeros_like(ink.cov)
        cv2.fillConvexPoly(layer, poly, float(np.clip(ink.pen.opacity * rng.uniform(0.8, 1.0), 0, 1)), cv2.LINE_AA, 4)
        np.maximum(ink.cov, layer, out=ink.cov)
        return
    passes = {"zigzag": [rng.uniform(20, 70)], "cross": [rng.uniform(20, 70), rng.uniform(100, 160)],
              "scribble": [rng.uniform(0, 180), rng.uniform(0, 180)]}[style]
    for ang in passes:
        spacing = max(0.45, w * rng.uniform(1.0, 1.8)) if style != "scribble" else max(0.6, w * rng.uniform(1.2, 2.2))
        a = math.radians(ang)
        d, n = np.array([math.cos(a), math.sin(a)]), np.array([-math.sin(a), math.cos(a)])
        offs = np.arange(-half * 1.42, half * 1.42, spacing)
        pts = []
        centre = np.array([cx, cy])
        for k, o in enumerate(offs):
            # The hatch line centre + n*o + d*t, clipped to the square |x|, |y| <= half.
            lo, hi = -np.inf, np.inf
            base = n * o
            for i in range(2):
                if abs(d[i]) < 1e-9:
                    if abs(base[i]) > half:
                        lo, hi = 1.0, 0.0
                    continue
                t0, t1 = sorted(((-half - base[i]) / d[i], (half - base[i]) / d[i]))
                lo, hi = max(lo, t0), min(hi, t1)
            if hi - lo < 0.3:
                continue
            ends = [centre + base + d * lo, centre + base + d * hi]
            pts += ends if k % 2 == 0 else ends[::-1]
        if len(pts) >= 2:
            ink.stroke(np.array(pts))


def sheet_texture(kit: Kit, edition: BloxxEdition, rows: list[str], placed: list[Placed] | None,
                  rng: np.random.Generator, ppm: float, *, paper: tuple[int, int, int] = (246, 245, 240),
                  pen: Pen | None = None) -> tuple[Texture, dict[str, Any]]:
    """The filled-in sheet as a texture (plane origin at the paper's top-left corner)."""
    img = draw_blank_sheet(kit, edition, ppm)
    # Printed on slightly off-white paper: paper tone multiplies everything printed.
    img = (img.astype(np.float32) * (np.array(paper, np.float32) / 255.0)).astype(np.uint8)
    style = draw_pen_marks(img, ppm, kit, rows, placed, rng, pen)
    return Texture(img, ppm, 0.0, 0.0, np.full(img.shape[:2], 255, np.uint8)), style


def random_paper_pose(setup: sc.SetUp, paper_mm: tuple[float, float], rng: np.random.Generator, *,
                      span: tuple[float, float] = (0.3, 0.6), max_tilt: float = 35.0) -> tuple[np.ndarray, np.ndarray]:
    """A hand-held pose of a sheet (camera frame, x_cam = R [u, v, 0] + t, u, v mm from
    the paper's top-left): any rotation in its plane, tilted up to ``max_tilt`` degrees,
    spanning ``span`` of the frame's width, wholly inside the frame."""
    w_mm, h_mm = paper_mm
    pat = np.array([[0, 0, 0], [w_mm, 0, 0], [w_mm, h_mm, 0], [0, h_mm, 0]], float)
    K, D = setup.intr.K, setup.intr.D
    W, H = setup.intr.width, setup.intr.height
    diag = math.hypot(w_mm, h_mm)
    for _ in range(1000):
        depth = float(np.clip(setup.intr.fx * diag / (rng.uniform(*span) * W * 1.15), 120, 900))
        px = rng.uniform(0.3, 0.7) * W, rng.uniform(0.3, 0.7) * H
        centre = np.linalg.solve(K, [px[0], px[1], 1.0]) * depth
        t_deg = rng.uniform(0, max_tilt)
        t_dir = rng.uniform(0, 2 * np.pi)
        R_t = cv2.Rodrigues(np.array([math.cos(t_dir), math.sin(t_dir), 0.0]) * math.radians(t_deg))[0]
        R = R_t @ cv2.Rodrigues(np.array([0, 0, math.radians(rng.uniform(0, 360))]))[0]
        t = centre - R @ np.array([w_mm / 2, h_mm / 2, 0])
        corners = cv2.projectPoints(pat, cv2.Rodrigues(R)[0], t, K, D)[0].reshape(-1, 2)
        if corners[:, 0].min() > 4 and corners[:, 1].min() > 4 and corners[:, 0].max() < W - 4 and corners[:, 1].max() < H - 4:
            if np.all((pat @ R.T + t)[:, 2] > 100):
                return R, t
    raise ValueError("could not place the sheet inside the frame")


def render_sheet_photo(setup: sc.SetUp, edition: BloxxEdition, rows: list[str], placed: list[Placed] | None,
                       cond: sc.Conditions, seed: int, *, frame: int = 0, t: float = 0.0,
                       pose: tuple[np.ndarray, np.ndarray] | None = None) -> sc.Rendered:
    """A photo of the filled-in sheet held under the camera over the set-up's table.

    The light is the set-up's (colour, level, noise, blur, JPEG of ``cond``); the sheet
    gets a light gradient across it and sometimes the soft shadow of the holder's hand
    or head. Truth: ``{"sheet": rows}``; the meta holds the grid corners' true pixels."""
    rng = np.random.default_rng([seed, 1401])
    kit = setup.kit
    s = kit.require_bloxx().sheet
    view = setup.view()
    cond = sc.Conditions(**{**cond.__dict__, "hands": []})  # the player holds the sheet
    tex_table = tx.table_texture(kit, setup.game, {}, table_rgb=sc.TABLE_COLOURS[setup.table], drift=setup.drift,
                                 markers=setup.markers, rng=np.random.default_rng([seed, 8]), ppm=setup.texture_ppm())
    canvas, ref = sc._table_layer(view, tex_table, setup, cond)
    R, tvec = pose if pose is not None else random_paper_pose(setup, s.paper_mm, rng)
    far = float(np.max((np.array([[0, 0, 0], [s.paper_mm[0], s.paper_mm[1], 0]]) @ R.T + tvec)[:, 2]))
    ppm = float(np.clip(setup.intr.fx * setup.ss / max(far, 1) * 1.2, 6, 16))
    sheet, style = sheet_texture(kit, edition, rows, placed, rng, ppm,
                                 paper=tuple(int(v) for v in rng.uniform([238, 236, 228], [252, 252, 250])),
                                 pen=None)
    # Light across the sheet: a gradient, and sometimes a soft shadow band.
    H, W = sheet.rgb.shape[:2]
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float32)
    g = rng.uniform(-0.25, 0.25, 2)
    light = 1 + g[0] * (xx / W - 0.5) + g[1] * (yy / H - 0.5)
    shadow = None
    if rng.random() < 0.35:
        a = rng.uniform(0, 2 * np.pi)
        d = (xx / W - 0.5) * math.cos(a) + (yy / H - 0.5) * math.sin(a) - rng.uniform(-0.3, 0.3)
        # A soft shadow (of the holder's arm or head, far from the sheet): wide edge.
        shadow = float(rng.uniform(0.2, 0.4))
        light = light * (1 - shadow / (1 + np.exp(-d / rng.uniform(0.12, 0.25))))
    sheet.rgb = np.clip(sheet.rgb.astype(np.float32) * light[..., None], 0, 255).astype(np.uint8)
    normal_cam = R[:, 2]
    n_world = -(setup.R.T @ normal_cam)
    centre_world = setup.R.T @ (R @ np.array([s.paper_mm[0] / 2, s.paper_mm[1] / 2, 0]) + tvec - setup.t)
    shade = max(sc._shade(n_world, centre_world, cond, ref), cond.ambient, 0.5)
    sc._composite(view, canvas, sheet, R, tvec, shade)
    image = sc._finish(view, canvas, cond, rng)
    corners = grid_corners_mm(kit)
    img_pts = cv2.projectPoints(np.column_stack([corners, np.zeros(4)]), cv2.Rodrigues(R)[0], tvec.reshape(3, 1),
                                setup.intr.K, setup.intr.D)[0].reshape(-1, 2)
    truth = {"game": "bloxx", "frame": frame, "t": round(t, 4), "stable": True, "occluded": [], "confidence": 1.0,
             "state": {"sheet": list(rows)}}
    meta = {"seed": seed, "conditions": cond.to_json(), "style": style, "grid_corners_px": img_pts.round(3).tolist(),
            "sheet_rvec": cv2.Rodrigues(R)[0].ravel().tolist(), "sheet_tvec": tvec.tolist(),
            "shadow": shadow}
    return sc.Rendered(image, truth, {}, meta)


def default_edition() -> BloxxEdition:
    return load_edition()
