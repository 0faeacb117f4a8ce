"""The scene renderer: a posed camera over the table, pieces in 3D, lighting, hands
and every condition of table-kit.md, deterministic from a seed.

Entry points: :func:`sample_setup` (a camera set-up: camera, lens, board placement,
print colour drift, table), :func:`sample_conditions` (light and camera effects, with
named presets), :func:`render_frame` (a game state -> image + exact truth) and
:func:`render_charuco` (a lens-calibration frame).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import cv2
import numpy as np

from calibration.camera import Intrinsics, default_intrinsics
from calibration.colour import kelvin_tint, srgb_lut, srgb_to_linear
from calibration.kit import Kit
from calibration.render import textures as tx
from calibration.render.view import Texture, View, look_at, plane_extent, sample_plane

_LUT = srgb_lut()
_LUT3 = np.ascontiguousarray(np.repeat(_LUT[:, None], 3, axis=1)).reshape(1, 256, 3)

# A lamp is not a point: its shade and diffuser keep the nearest part of the table
# from getting more than this much brighter than the board's centre.
FALLOFF_CAP = 1.8

TABLE_COLOURS = {
    "oak": (182, 142, 96),
    "walnut": (104, 72, 50),
    "beech": (205, 170, 125),
    "green-felt": (40, 100, 60),
    "dark-blue": (40, 52, 80),
}


# ------------------------------------------------------------------------- set-up


@dataclass
class SetUp:
    """A camera set-up: what stays fixed while a game is played."""

    kit: Kit
    game: str
    intr: Intrinsics  # the true lens (what a lens calibration should find)
    model: str
    R: np.ndarray
    t: np.ndarray
    height_mm: float
    tilt_deg: float
    table: str
    drift: dict[str, tuple[float, float, float]]
    markers: bool = True
    ss: int = 2
    _view: View | None = field(default=None, repr=False, compare=False)

    def view(self) -> View:
        # The per-pixel ray map is the costly part of a view: keep it for the set-up.
        if self._view is None:
            self._view = View(self.intr, self.R, self.t, self.ss)
        return self._view

    def texture_ppm(self) -> int:
        """Texel density for this view: the canvas density at the farthest marker."""
        w, h = self.kit.area_mm(self.game)
        s = self.kit.markers.size_mm
        v = self.view()
        dens = []
        for x, y in ((-s, -s), (w + s, -s), (w + s, h + s), (-s, h + s)):
            p = v.project(np.array([[x, y, 0.0], [x + 10, y, 0.0], [x, y + 10, 0.0]]))
            dens.append(min(np.linalg.norm(p[1] - p[0]), np.linalg.norm(p[2] - p[0])) / 10 * self.ss)
        return tx.texture_ppm(min(dens))

    def to_json(self) -> dict[str, Any]:
        return {
            "game": self.game,
            "camera_model": self.model,
            "intrinsics": self.intr.to_json(),
            "pose": {"rvec": cv2.Rodrigues(self.R)[0].ravel().tolist(), "tvec": self.t.tolist(),
                     "height_mm": self.height_mm, "tilt_deg": self.tilt_deg},
            "table": {"name": self.table, "rgb": list(TABLE_COLOURS[self.table])},
            "print_drift": {k: [round(v, 4) for v in f] for k, f in sorted(self.drift.items())},
            "markers": self.markers,
            "supersampling": self.ss,
        }


def _drift_names(kit: Kit, game: str) -> list[str]:
    names = ["marker-paper", "marker-ink"]
    if game == "blox":
        names += list(kit.blox.colors) + [f"player-{p}" for p in kit.blox.players] + ["chip"]
    elif game == "bloxo":
        names += list(kit.bloxo.colors) + ["card-face"]
    elif game == "blockers":
        names += list(kit.blockers.colors) + ["blockers-board"]
    else:
        names += list(kit.blockout.colors)
    return names


def sample_setup(kit: Kit, game: str, seed: int, *, model: str = "cm3", size: tuple[int, int] = (1280, 720),
                 markers: bool = True, height_mm: float | None = None, tilt_deg: float | None = None,
                 drift: float | None = None, dist: tuple[float, ...] | None = None, ss: int | None = None) -> SetUp:
    """A random camera set-up within table-kit.md's ranges.

    The true lens differs from the model's default (focal +-4%, distortion jittered)
    so that lens calibration has something to find. The whole marked area with its
    markers is kept inside the frame and at least the kit's minimum width fraction."""
    rng = np.random.default_rng([seed, 101])
    base = default_intrinsics(model, *size)
    f = base.fx * float(rng.uniform(0.96, 1.04))
    d = np.array(base.dist, float)
    d[:2] += rng.uniform(-0.03, 0.03, 2)
    d[2:4] = rng.uniform(-0.0015, 0.0015, 2)
    intr = Intrinsics(size[0], size[1], f, f * float(rng.uniform(0.998, 1.002)),
                      base.cx + float(rng.uniform(-0.02, 0.02)) * size[0],
                      base.cy + float(rng.uniform(-0.02, 0.02)) * size[1],
                      tuple(float(v) for v in (dist if dist is not None else d)), "synthetic")
    w, h = kit.area_mm(game)
    s = kit.markers.size_mm + kit.markers.quiet_zone_mm
    outer = np.array([[-s, -s, 0], [w + s, -s, 0], [w + s, h + s, 0], [-s, h + s, 0]], float)
    lo_h, hi_h = kit.camera.height_mm
    lo_t, hi_t = kit.camera.tilt_deg
    best = None
    # After many misses, move the height the way the last miss asks: up when the area
    # overflowed the frame, down when it was too small in it (a wide lens over a small
    # board fits only near the kit's lowest height).
    too_small = False
    for attempt in range(200):
        hh = height_mm if height_mm is not None else float(rng.uniform(lo_h, hi_h))
        tt = tilt_deg if tilt_deg is not None else float(rng.uniform(lo_t, hi_t))
        if attempt > 60 and height_mm is None:
            stretch = 1 + (attempt - 60) / 60
            hh = max(lo_h, hh / stretch) if too_small else min(hi_h * 1.6, hh * stretch)
        target = np.array([w / 2 + rng.uniform(-0.04, 0.04) * w, h / 2 + rng.uniform(-0.04, 0.04) * h, 0.0])
        pos = target + np.array([rng.uniform(-0.03, 0.03) * w, hh * math.tan(math.radians(tt)), -hh])
        R, t = look_at(pos, target, float(rng.uniform(-4, 4)))
        v = View(intr, R, t)
        px = v.project(outer)
        margin = 0.03 * size[0]
        inside = (px[:, 0].min() > margin and px[:, 0].max() < size[0] - margin
                  and px[:, 1].min() > margin and px[:, 1].max() < size[1] - margin)
        wide = (px[:, 0].max() - px[:, 0].min()) / size[0] >= kit.camera.min_board_width_fraction
        if inside and wide:
            best = (R, t, hh, tt)
            break
        too_small = inside and not wide
    if best is None:
        raise ValueError(f"no camera pose of model {model} at {size} sees the whole {game} area; "
                         "use a wider lens or allow a greater height")
    R, t, hh, tt = best
    amount = kit.conditions.max_print_drift if drift is None else drift
    drifts = {name: tuple(float(v) for v in rng.uniform(1 - amount, 1 + amount, 3)) for name in _drift_names(kit, game)}
    table = str(rng.choice(sorted(TABLE_COLOURS)))
    if ss is None:
        ss = 2 if size[0] * size[1] <= 1280 * 800 else 1
    return SetUp(kit, game, intr, model, R, t, hh, tt, table, drifts, markers, ss)


# --------------------------------------------------------------------- conditions


@dataclass
class Hand:
    """An arm reaching over the table toward ``target`` (board mm), ``height`` mm
    above the board, entering from ``side`` (near, left or right)."""

    target: tuple[float, float]
    height: float = 110.0
    side: str = "near"
    radius: float = 38.0
    skin: tuple[int, int, int] = (214, 160, 128)
    spread: float = 0.0  # finger fan angle offset in degrees


@dataclass
class Conditions:
    kelvin: float = 5000.0
    awb: float = 0.7  # fraction of the light's tint the camera's white balance removes
    exposure: float = 1.0
    light: tuple[float, float, float] = (150.0, 250.0, -1500.0)  # board-frame mm, above (z<0)
    ambient: float = 0.45
    glare: list[tuple[float, float, float, float]] = field(default_factory=list)  # (u, v, radius mm, strength)
    noise: float = 1.5  # sensor noise sigma in 8-bit steps at exposure 1
    defocus: float = 0.0  # Gaussian sigma, output px
    motion: tuple[float, float] = (0.0, 0.0)  # blur length px, angle degrees
    jpeg: int | None = 92
    hands: list[Hand] = field(default_factory=list)
    name: str = "custom"

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["hands"] = [asdict(h) for h in self.hands]
        return out


PRESETS = ("neutral", "warm-dim", "cool-bright", "one-sided", "glare", "noisy", "defocus", "motion", "jpeg",
           "hands", "everything")


def sample_conditions(seed: int, preset: str | None = None, *, area: tuple[float, float] = (342.0, 342.0),
                      kit: Kit | None = None) -> Conditions:
    """Conditions for a frame: a named preset (see :data:`PRESETS`, each stressing one
    condition of table-kit.md) with random details, or fully random (``None``)."""
    rng = np.random.default_rng([seed, 202])
    w, h = area
    lo_k, hi_k = kit.conditions.color_temperature_k if kit else (2700.0, 6500.0)
    c = Conditions(kelvin=float(rng.uniform(4000, 5500)), awb=float(rng.uniform(0.6, 0.9)),
                   exposure=float(rng.uniform(0.85, 1.1)),
                   light=(float(rng.uniform(0, w)), float(rng.uniform(0, h)), float(-rng.uniform(1300, 2000))),
                   ambient=float(rng.uniform(0.4, 0.55)), noise=float(rng.uniform(0.8, 2.0)),
                   jpeg=int(rng.integers(88, 96)), name=preset or "random")

    def one_sided() -> None:
        ang = rng.uniform(0, 2 * np.pi)
        elev = math.radians(rng.uniform(28, 45))
        dist = rng.uniform(700, 1200)
        c.light = (w / 2 + dist * math.cos(elev) * math.cos(ang), h / 2 + dist * math.cos(elev) * math.sin(ang),
                   -dist * math.sin(elev))
        c.ambient = float(rng.uniform(0.18, 0.3))

    def glare() -> None:
        c.glare = [(float(rng.uniform(0.1, 0.9) * w), float(rng.uniform(0.1, 0.9) * h), float(rng.uniform(8, 30)),
                    float(rng.uniform(0.6, 2.0))) for _ in range(int(rng.integers(1, 4)))]

    def hands() -> None:
        c.hands = [random_hand(rng, area) for _ in range(int(rng.integers(1, 3)))]

    if preset in (None, "random"):
        c.kelvin = float(rng.uniform(lo_k, hi_k))
        c.exposure = float(rng.uniform(0.45, 1.25))
        if rng.random() < 0.3:
            one_sided()
        if rng.random() < 0.3:
            glare()
        c.noise = float(rng.uniform(0.5, 5))
        c.defocus = float(rng.uniform(0, 1.2)) if rng.random() < 0.4 else 0.0
        if rng.random() < 0.2:
            c.motion = (float(rng.uniform(1, 5)), float(rng.uniform(0, 180)))
        c.jpeg = int(rng.integers(60, 96))
    elif preset == "neutral":
        c.kelvin, c.awb, c.exposure = 5500.0, 0.9, 1.0
    elif preset == "warm-dim":
        c.kelvin, c.awb, c.exposure, c.noise = float(lo_k), float(rng.uniform(0.3, 0.6)), float(rng.uniform(0.3, 0.4)), 3.0
    elif preset == "cool-bright":
        c.kelvin, c.awb, c.exposure = float(hi_k), float(rng.uniform(0.3, 0.6)), float(rng.uniform(1.2, 1.35))
    elif preset == "one-sided":
        one_sided()
    elif preset == "glare":
        glare()
    elif preset == "noisy":
        c.noise, c.exposure = float(rng.uniform(6, 9)), float(rng.uniform(0.5, 0.7))
    elif preset == "defocus":
        c.defocus = float(rng.uniform(1.0, 1.6))
    elif preset == "motion":
        c.motion = (float(rng.uniform(3, 6)), float(rng.uniform(0, 180)))
    elif preset == "jpeg":
        c.jpeg = int(rng.integers(45, 60))
    elif preset == "hands":
        hands()
    elif preset == "everything":
        c.kelvin = float(rng.choice([lo_k, hi_k]))
        c.awb = 0.5
        c.exposure = float(rng.uniform(0.5, 0.7))
        one_sided()
        glare()
        hands()
        c.noise, c.defocus, c.jpeg = 4.0, 0.8, 65
        c.motion = (2.0, float(rng.uniform(0, 180)))
    else:
        raise ValueError(f"unknown conditions preset {preset!r}; known: {', '.join(PRESETS)}")
    return c


def random_hand(rng: np.random.Generator, area: tuple[float, float]) -> Hand:
    w, h = area
    return Hand(target=(float(rng.uniform(0.1, 0.9) * w), float(rng.uniform(0.1, 0.9) * h)),
                height=float(rng.uniform(80, 170)), side=str(rng.choice(["near", "near", "left", "right"])),
                radius=float(rng.uniform(32, 42)),
                skin=tuple(int(v) for v in rng.choice([(214, 160, 128), (170, 115, 85), (120, 80, 60), (235, 190, 160)])),
                spread=float(rng.uniform(-15, 15)))


# ------------------------------------------------------------------------ geometry


@dataclass
class Face:
    pts: np.ndarray  # (n, 3) board frame
    normal: np.ndarray
    rgb: np.ndarray  # linear
    alpha: float = 1.0
    label: tuple | None = None  # (centre (3,), text, diameter mm) printed on this face (a chip's value)


def _rot2(angle_deg: float) -> np.ndarray:
    a = math.radians(angle_deg)
    return np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])


def box_faces(cx: float, cy: float, z0: float, sx: float, sy: float, sz: float, ang: float, rgb: np.ndarray) -> list[Face]:
    """A box standing on height z0 (z down, so its top is at z0 - sz)."""
    rot = _rot2(ang)
    xy = np.array([[-sx / 2, -sy / 2], [sx / 2, -sy / 2], [sx / 2, sy / 2], [-sx / 2, sy / 2]]) @ rot.T + [cx, cy]
    bot = np.column_stack([xy, np.full(4, z0)])
    top = np.column_stack([xy, np.full(4, z0 - sz)])
    faces = [Face(top, np.array([0, 0, -1.0]), rgb)]
    for i in range(4):
        j = (i + 1) % 4
        pts = np.array([bot[i], bot[j], top[j], top[i]])
        mid = (xy[i] + xy[j]) / 2 - [cx, cy]
        n = np.array([mid[0], mid[1], 0.0])
        faces.append(Face(pts, n / np.linalg.norm(n), rgb))
    return faces


def prism_faces(cx: float, cy: float, z0: float, radius: float, height: float, rgb: np.ndarray, alpha: float = 1.0,
                sides: int = 20, cap: bool = True) -> list[Face]:
    a = np.linspace(0, 2 * np.pi, sides, endpoint=False)
    xy = np.stack([cx + radius * np.cos(a), cy + radius * np.sin(a)], 1)
    bot = np.column_stack([xy, np.full(sides, z0)])
    top = np.column_stack([xy, np.full(sides, z0 - height)])
    faces = [Face(top, np.array([0, 0, -1.0]), rgb, alpha)] if cap else []
    for i in range(sides):
        j = (i + 1) % sides
        am = a[i] + np.pi / sides  # the side's outward direction
        faces.append(Face(np.array([bot[i], bot[j], top[j], top[i]]), np.array([math.cos(am), math.sin(am), 0.0]), rgb,
                          alpha))
    return faces


def _lin(rgb: tuple) -> np.ndarray:
    return srgb_to_linear(np.array(rgb, float))


def _drifted(rgb: tuple, name: str, drift: dict) -> np.ndarray:
    return _lin(rgb) * np.array(drift.get(name, (1, 1, 1))) ** 2.2


def blox_solids(kit: Kit, state: dict, drift: dict, rng: np.random.Generator) -> tuple[list[Face], list[tuple]]:
    """Faces of towers (with point chips on the destroyable ones, below the kit's tallest
    height) and figures, and text labels to draw after them (none for Blox: a chip's
    value travels with its top face, ``Face.label``)."""
    b = kit.blox
    faces: list[Face] = []
    labels: list[tuple] = []
    for r, row in enumerate(state.get("cells", [])):
        for c, cell in enumerate(row):
            if not cell:
                continue
            cx0, cy0 = (c + 0.5) * b.space_mm, (r + 0.5) * b.space_mm
            if "tower" in cell:
                z = 0.0
                for color in cell["tower"]:
                    dx, dy = rng.uniform(-b.block.max_offset_mm, b.block.max_offset_mm, 2)
                    ang = float(rng.uniform(-b.block.max_rotation_deg, b.block.max_rotation_deg))
                    faces += box_faces(cx0 + dx, cy0 + dy, z, b.block.footprint_mm, b.block.footprint_mm,
                                       b.block.height_mm - 0.3, ang, _drifted(b.colors[color], color, drift))
                    z -= b.block.height_mm
                if not b.block.carries_chip(len(cell["tower"])):
                    continue
                chip = prism_faces(cx0, cy0, z, b.chip.diameter_mm / 2, b.chip.thickness_mm,
                                   _drifted(b.chip.color, "chip", drift))
                # The value is printed on the chip's top: drawn with that face, so a nearer
                # tower hides it as it hides the chip, and in the chip's plane (foreshortened).
                chip[0].label = (np.array([cx0, cy0, z - b.chip.thickness_mm]), str(len(cell["tower"])),
                                 b.chip.diameter_mm)
                faces += chip
            elif "figure" in cell:
                f = b.figure
                color = cell["figure"]
                top_h = f.height_mm * f.top_fraction
                body_h = f.height_mm - top_h
                dx, dy = rng.uniform(-1.5, 1.5, 2)
                faces += prism_faces(cx0 + dx, cy0 + dy, 0.0, f.base_mm / 2, body_h, _lin((235, 238, 240)), alpha=0.22,
                                     cap=False)
                faces += prism_faces(cx0 + dx, cy0 + dy, -body_h, f.base_mm / 2 * 0.85, top_h,
                                     _drifted(b.players[color], f"player-{color}", drift))
    return faces, labels


def blockout_solids(kit: Kit, state: dict, drift: dict, rng: np.random.Generator) -> list[Face]:
    u = kit.blockout
    w, h = u.play_area_mm
    cx, cy = w / 2, h / 2
    faces = box_faces(cx, cy, 0.0, u.base_mm, u.base_mm, u.base_height_mm, 0.0, _lin((90, 90, 95)))
    z = -u.base_height_mm
    for i, blk in enumerate(state.get("stack", [])):
        sx, sy, sz = u.sizes[blk["size"]]
        length, width = sz, sx  # lying down, long axis horizontal
        ang = (90.0 if i % 2 else 0.0) + float(rng.uniform(-4, 4))
        dx, dy = rng.uniform(-4, 4, 2)
        faces += box_faces(cx + dx, cy + dy, z, length, width, sy, ang, _drifted(u.colors[blk["color"]], blk["color"], drift))
        z -= sy
    return faces


def hand_spheres(hand: Hand, area: tuple[float, float]) -> list[tuple[np.ndarray, float]]:
    """The arm and hand as chains of spheres (centre, radius): capsules sampled."""
    w, h = area
    tx_, ty = hand.target
    if hand.side == "left":
        entry = np.array([-420.0, ty + 80, -hand.height - 120])
    elif hand.side == "right":
        entry = np.array([w + 420.0, ty + 80, -hand.height - 120])
    else:
        entry = np.array([tx_ + 60, h + 480.0, -hand.height - 160])
    palm = np.array([tx_, ty, -hand.height])
    d = palm - entry
    d /= np.linalg.norm(d)
    wrist = palm - d * 70
    out: list[tuple[np.ndarray, float]] = []

    def capsule(a: np.ndarray, b: np.ndarray, r0: float, r1: float) -> None:
        n = max(2, int(np.linalg.norm(b - a) / (min(r0, r1) * 0.6)) + 1)
        for k in range(n):
            s = k / (n - 1)
            out.append((a + (b - a) * s, r0 + (r1 - r0) * s))

    capsule(entry, wrist, hand.radius, hand.radius * 0.75)
    capsule(wrist, palm, hand.radius * 0.9, hand.radius * 1.0)
    side = np.array([-d[1], d[0], 0.0])
    side /= np.linalg.norm(side) + 1e-9
    for k, off in enumerate((-1.5, -0.5, 0.5, 1.5)):
        base = palm + d * 25 + side * off * 17
        ang = math.radians(hand.spread * off / 1.5)
        fd = d * math.cos(ang) + side * math.sin(ang)
        capsule(base, base + fd * (65 - abs(off) * 8) + np.array([0, 0, 18.0]), 9.0, 8.0)
    thumb = palm - d * 10 + side * 45
    capsule(palm + side * 25, thumb + d * 30 + np.array([0, 0, 10.0]), 11.0, 9.0)
    return out


# ----------------------------------------------------------------------- rendering


@dataclass
class Rendered:
    image: np.ndarray  # BGR uint8, after JPEG if any
    truth: dict[str, Any]  # observation (observation.md)
    occlusion: dict[str, float]  # item -> covered fraction (cells "r,c", cards "x,y")
    meta: dict[str, Any]


def _shade(normal: np.ndarray, point: np.ndarray, cond: Conditions, ref: float) -> float:
    L = np.asarray(cond.light, float)
    ld = L - point
    dist = np.linalg.norm(ld)
    lam = max(0.0, float(np.dot(normal, ld / dist)))
    return cond.ambient + (1 - cond.ambient) * lam * min((ref / dist) ** 2, FALLOFF_CAP)


def _regions(setup: SetUp, state: dict) -> dict[str, np.ndarray]:
    """Board-plane polygons of the items whose occlusion the truth reports."""
    kit, game = setup.kit, setup.game
    grid = kit.grid(game)
    out: dict[str, np.ndarray] = {}
    if grid:
        n, s = grid
        for r in range(n):
            for c in range(n):
                out[f"{r},{c}"] = np.array([[c * s, r * s, 0], [(c + 1) * s, r * s, 0], [(c + 1) * s, (r + 1) * s, 0],
                                            [c * s, (r + 1) * s, 0]], float)
    elif game == "bloxo":
        ox, oy = tx.card_layout(kit)
        half = kit.bloxo.card_mm / 2
        for card in state.get("cards", []):
            x, y = card["at"]
            cx, cy = ox + x * kit.bloxo.card_mm, oy + y * kit.bloxo.card_mm
            out[f"{x},{y}"] = np.array([[cx - half, cy - half, 0], [cx + half, cy - half, 0], [cx + half, cy + half, 0],
                                        [cx - half, cy + half, 0]])
    else:
        w, h = kit.blockout.play_area_mm
        q = kit.blockout.base_mm / 2
        out["stack"] = np.array([[w / 2 - q, h / 2 - q, 0], [w / 2 + q, h / 2 - q, 0], [w / 2 + q, h / 2 + q, 0],
                                 [w / 2 - q, h / 2 + q, 0]])
    return out


def render_frame(setup: SetUp, state: dict[str, Any], cond: Conditions, seed: int, *, frame: int = 0, t: float = 0.0,
                 occlusion_threshold: float = 0.15, marks: list[list[int]] | None = None,
                 layout_seed: int | None = None) -> Rendered:
    """Render ``state`` (the observation-format game state) on the set-up's table.

    ``layout_seed`` fixes where the pieces lie (their small offsets and turns) apart from
    ``seed``, which then only varies the sensor noise: frames of a still scene in a
    sequence must show the pieces exactly where they were.
    """
    rng = np.random.default_rng([seed, 303])
    layout_rng = rng if layout_seed is None else np.random.default_rng([layout_seed, 303])
    texture_seed = seed if layout_seed is None else layout_seed
    kit, game = setup.kit, setup.game
    view = setup.view()
    area = kit.area_mm(game)
    if game == "blox" and marks is None:
        marks = tx.default_blox_marks()
    placements: dict[str, Any] = {}
    ppm = setup.texture_ppm()
    tex = tx.table_texture(kit, game, state, table_rgb=TABLE_COLOURS[setup.table], drift=setup.drift,
                           markers=setup.markers, rng=np.random.default_rng([texture_seed, 7]), marks=marks,
                           placements=placements, ppm=ppm)
    faces: list[Face] = []
    labels: list[tuple] = []
    if game == "blox":
        faces, labels = blox_solids(kit, state, setup.drift, layout_rng)
    elif game == "blockout":
        faces = blockout_solids(kit, state, setup.drift, layout_rng)
    solids: list[tuple[np.ndarray, float]] = [(f.pts, 0.0) for f in faces if f.alpha >= 0.5 or f.normal[2] == 0]
    for hand in cond.hands:
        solids += [(c[None], r) for c, r in hand_spheres(hand, area)]
    canvas, light_ref = _table_layer(view, tex, setup, cond, solids)

    if game == "blockers":
        tiles, grid = tx.blockers_layers(kit, state, setup.drift, layout_rng, ppm)
        for layer, z in ((tiles, -kit.blockers.tile_thickness_mm), (grid, -kit.blockers.tile_thickness_mm - 1.5)):
            t_pc = setup.t + setup.R @ np.array([0, 0, z])
            shade = _shade(np.array([0, 0, -1.0]), np.array([area[0] / 2, area[1] / 2, z]), cond, light_ref)
            _composite(view, canvas, layer, setup.R, t_pc, shade)

    _draw_faces(view, canvas, faces, cond, light_ref)
    for pos, text, dia in labels:
        _draw_label(view, canvas, pos, text, dia)

    hand_mask = np.zeros(canvas.shape[:2], np.uint8)
    for hand in cond.hands:
        _draw_hand(view, canvas, hand_mask, hand, area, cond, light_ref)

    image = _finish(view, canvas, cond, rng)
    regions = _regions(setup, state)
    occlusion = _occlusion(view, hand_mask, regions)
    occluded = sorted(k for k, v in occlusion.items() if v >= occlusion_threshold)
    if kit.grid(game) or game == "bloxo":
        occ_items: list[Any] = [[int(a) for a in k.split(",")] for k in occluded]
        occ_items.sort()
    else:
        occ_items = occluded
    # Not stable = a hand over the marked area in this picture (the frames a recogniser
    # must not commit); an arm still on its way in, wholly outside the picture or beside
    # the area, does not make the scene unstable.
    hand_over = _occlusion(view, hand_mask, {"area": kit.area_corners(game)})["area"]
    truth = {"game": game, "frame": frame, "t": round(t, 4), "stable": hand_over == 0.0, "occluded": occ_items,
             "confidence": 1.0, "state": state}
    meta = {"seed": seed, "conditions": cond.to_json(), "placements": placements,
            "occlusion": {k: round(v, 4) for k, v in occlusion.items() if v > 0},
            "hand_over_area": round(hand_over, 5)}
    return Rendered(image, truth, occlusion, meta)


def _composite(view: View, canvas: np.ndarray, tex: Texture, R_pc: np.ndarray, t_pc: np.ndarray, shade: float) -> None:
    """Lay a transparent plane texture over the canvas, within its projected box only."""
    roi = view.roi_of(plane_extent(tex), R_pc, t_pc)
    if roi is None:
        return
    x0, y0, x1, y1 = roi
    lin_tex = Texture(cv2.LUT(tex.rgb, _LUT3), tex.ppm, tex.u0, tex.v0, tex.alpha)
    lin, cover = sample_plane(view, lin_tex, R_pc, t_pc, roi)
    lin = lin * np.float32(shade)
    sub = canvas[y0:y1, x0:x1]
    cover3 = cv2.merge([cover, cover, cover])
    sub += cv2.multiply(cv2.subtract(lin, sub), cover3)


def _table_layer(view: View, tex: Texture, setup: SetUp, cond: Conditions,
                 solids: list[tuple[np.ndarray, float]] = ()) -> tuple[np.ndarray, float]:
    """The lit table plane on the canvas, linear RGB float32; returns it and the
    light-falloff reference distance (the light's distance to the area centre)."""
    u, v, ok = view.plane_coords(setup.R, setup.t)
    mx, my = tex.to_px(u, v)
    mx = np.where(ok, mx, -1e5).astype(np.float32)
    my = np.where(ok, my, -1e5).astype(np.float32)
    table = TABLE_COLOURS[setup.table]
    # Interpolate the texture in linear light (as light mixes): interpolating sRGB
    # values would bias every magnified edge toward the light side.
    lin_tex = cv2.LUT(tex.rgb, _LUT3)
    border = [float(v) for v in _LUT[list(table)]]
    canvas = cv2.remap(lin_tex, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=border)
    w, h = setup.kit.area_mm(setup.game)
    L = np.asarray(cond.light, float)
    ref = float(np.linalg.norm(L - [w / 2, h / 2, 0]))
    # Lighting and shadows vary slowly: evaluate them on a coarse lattice.
    step = 4
    us, vs = u[::step, ::step], v[::step, ::step]
    dx, dy, dz = L[0] - us, L[1] - vs, L[2]
    dist = np.sqrt(dx * dx + dy * dy + dz * dz)
    lam = np.clip(-dz / dist, 0, None) * np.minimum((ref / dist) ** 2, FALLOFF_CAP)
    shadow = _shadow_map(setup, cond, us, vs, solids)
    glare = np.zeros_like(us)
    for gu, gv, rad, strength in cond.glare:
        glare += strength * np.exp(-((us - gu) ** 2 + (vs - gv) ** 2) / (2 * rad * rad))
    inside = (us > 0) & (vs > 0) & (us < w) & (vs < h)
    glare *= inside
    # Table grain: smooth and unbounded, so it draws no edge a board finder could take
    # for an outline.
    grain = 1 + 0.025 * (np.sin(us / 23.0 + 1.3 * np.sin(vs / 61.0)) + 0.6 * np.sin(vs / 9.0 + us / 140.0))
    shade = (grain * (cond.ambient + (1 - cond.ambient) * lam * (1 - shadow))).astype(np.float32)
    H, W = canvas.shape[:2]
    shade = cv2.resize(shade, (W, H), interpolation=cv2.INTER_LINEAR)
    canvas = cv2.multiply(canvas, cv2.merge([shade, shade, shade]))
    if cond.glare:
        g = cv2.resize(glare.astype(np.float32), (W, H), interpolation=cv2.INTER_LINEAR)
        canvas = cv2.add(canvas, cv2.merge([g, g, g]))
    return canvas, ref


def _shadow_map(setup: SetUp, cond: Conditions, us: np.ndarray, vs: np.ndarray,
                solids: list[tuple[np.ndarray, float]]) -> np.ndarray:
    """Fraction (0..1) of the light blocked at the given table points, from the solids
    of the current frame. Shadows are drawn in a coarse table-plane raster."""
    if not solids:
        return np.zeros_like(us)
    res = 1.0  # px per mm
    u0, v0 = -600.0, -600.0
    w, h = setup.kit.area_mm(setup.game)
    sw, sh = int((w + 1200) * res), int((h + 1200) * res)
    m = np.zeros((sh, sw), np.float32)
    L = np.asarray(cond.light, float)
    for pts, radius in solids:
        pts = np.asarray(pts, float).reshape(-1, 3)
        z = pts[:, 2]
        if np.any(z <= L[2] + 1):
            continue
        s = L[2] / (L[2] - z)
        sp = L[None, :2] + (pts[:, :2] - L[None, :2]) * s[:, None]
        if radius:
            # A sphere: its shadow is (about) a disc, scaled like its centre.
            for (x, y), sc in zip(sp, s):
                cv2.circle(m, (int((x - u0) * res * 16), int((y - v0) * res * 16)), int(radius * sc * res * 16), 1.0,
                           -1, cv2.LINE_AA, 4)
        else:
            hull = cv2.convexHull(np.round((sp - [u0, v0]) * res * 16).astype(np.int32))
            cv2.fillConvexPoly(m, hull, 1.0, cv2.LINE_AA, 4)
    m = cv2.GaussianBlur(m, (0, 0), 2.0)
    out = cv2.remap(m, ((us - u0) * res).astype(np.float32), ((vs - v0) * res).astype(np.float32), cv2.INTER_LINEAR,
                    borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    return np.clip(out, 0, 1)


def _draw_faces(view: View, canvas: np.ndarray, faces: list[Face], cond: Conditions, ref: float) -> None:
    if not faces:
        return
    cam = view.camera_position
    allpts = np.concatenate([f.pts for f in faces])
    px = view.to_canvas(view.project(allpts))
    depth = view.depth(allpts)
    order = []
    k = 0
    for f in faces:
        n = len(f.pts)
        centre = f.pts.mean(axis=0)
        if np.dot(f.normal, cam - centre) > 0:  # front-facing
            order.append((float(depth[k:k + n].mean()), f, px[k:k + n], centre))
        k += n
    order.sort(key=lambda o: -o[0])
    H, W = canvas.shape[:2]
    for _, f, p, centre in order:
        col = (f.rgb * _shade(f.normal, centre, cond, ref)).astype(np.float32)
        poly = np.round(p * 16).astype(np.int32)
        if f.alpha >= 1:
            cv2.fillConvexPoly(canvas, poly, col.tolist(), cv2.LINE_8, 4)
            if f.label is not None:
                _draw_label(view, canvas, *f.label)
            continue
        x0, y0 = np.floor(p.min(axis=0)).astype(int) - 1
        x1, y1 = np.ceil(p.max(axis=0)).astype(int) + 2
        x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, W), min(y1, H)
        if x1 <= x0 or y1 <= y0:
            continue
        mask = np.zeros((y1 - y0, x1 - x0), np.float32)
        cv2.fillConvexPoly(mask, poly - np.array([x0, y0]) * 16, 1.0, cv2.LINE_8, 4)
        roi = canvas[y0:y1, x0:x1]
        roi += (col[None, None, :] - roi) * (mask * f.alpha)[..., None]


def _draw_label(view: View, canvas: np.ndarray, pos: np.ndarray, text: str, dia: float) -> None:
    """Dark print of ``text`` on the horizontal plane through ``pos`` (board frame), glyph
    height 0.55 of ``dia``: drawn on a flat patch in that plane and mapped into the image
    with the plane's homography, so it is foreshortened like the chip it is printed on."""
    res = 8.0  # patch px per mm
    n = int(round(dia * res))
    patch = np.zeros((n, n), np.uint8)
    font = cv2.FONT_HERSHEY_SIMPLEX
    size = 0.55 * dia * res
    (w, h), _ = cv2.getTextSize(text, font, 1.0, 1)
    scale = size / h
    th = max(1, int(size / 6))
    (w, h), _ = cv2.getTextSize(text, font, scale, th)
    cv2.putText(patch, text, (int(n / 2 - w / 2), int(n / 2 + h / 2)), font, scale, 255, th, cv2.LINE_AA)
    half = dia / 2
    corners = np.array([[pos[0] - half, pos[1] - half, pos[2]], [pos[0] + half, pos[1] - half, pos[2]],
                        [pos[0] + half, pos[1] + half, pos[2]], [pos[0] - half, pos[1] + half, pos[2]]])
    dst = view.to_canvas(view.project(corners)).astype(np.float32)
    H, W = canvas.shape[:2]
    x0, y0 = np.floor(dst.min(axis=0)).astype(int) - 1
    x1, y1 = np.ceil(dst.max(axis=0)).astype(int) + 2
    x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, W), min(y1, H)
    if x1 <= x0 or y1 <= y0:
        return
    src = np.array([[0, 0], [n, 0], [n, n], [0, n]], np.float32) - 0.5
    M = cv2.getPerspectiveTransform(src, dst - np.array([x0, y0], np.float32))
    mask = cv2.warpPerspective(patch, M, (x1 - x0, y1 - y0), flags=cv2.INTER_LINEAR).astype(np.float32) / 255.0
    roi = canvas[y0:y1, x0:x1]
    roi += (np.float32(0.03) - roi) * mask[..., None]


def _draw_hand(view: View, canvas: np.ndarray, mask: np.ndarray, hand: Hand, area: tuple[float, float],
               cond: Conditions, ref: float) -> None:
    spheres = hand_spheres(hand, area)
    centres = np.array([s[0] for s in spheres])
    radii = np.array([s[1] for s in spheres])
    depth = view.depth(centres)
    keep = depth > 50
    if not np.any(keep):
        return
    px = view.to_canvas(view.project(centres))
    f = view.intr.fx * view.ss
    rpx = f * radii / np.maximum(depth, 1)
    skin = _lin(hand.skin)
    a = np.linspace(0, 2 * np.pi, 16, endpoint=False)
    ring = np.stack([np.cos(a), np.sin(a)], 1)
    for i in range(len(spheres) - 1):
        if not (keep[i] and keep[i + 1]):
            continue
        shade = _shade(np.array([0, 0, -1.0]), centres[i], cond, ref)
        pts = np.concatenate([px[i] + ring * rpx[i], px[i + 1] + ring * rpx[i + 1]])
        hull = cv2.convexHull(np.round(pts * 16).astype(np.int32))
        cv2.fillConvexPoly(canvas, hull, (skin * shade).astype(np.float32).tolist(), cv2.LINE_8, 4)
        cv2.fillConvexPoly(mask, hull, 255, cv2.LINE_8, 4)


def _finish(view: View, canvas: np.ndarray, cond: Conditions, rng: np.random.Generator) -> np.ndarray:
    """Light colour, exposure, lens blur, sensor noise, JPEG: canvas -> BGR uint8."""
    tint = kelvin_tint(cond.kelvin) ** (1.0 - cond.awb)
    gain = (tint / tint.mean() * cond.exposure).astype(np.float32)
    W, H = view.size
    img = cv2.resize(canvas, (W, H), interpolation=cv2.INTER_AREA) if view.ss > 1 else canvas
    img = img * gain[None, None, :]
    if cond.defocus > 0:
        img = cv2.GaussianBlur(img, (0, 0), cond.defocus)
    length, ang = cond.motion
    if length >= 1:
        k = int(math.ceil(length)) | 1
        kern = np.zeros((k * 2 + 1, k * 2 + 1), np.float32)
        c = k
        dx, dy = math.cos(math.radians(ang)), math.sin(math.radians(ang))
        cv2.line(kern, (int(round((c - dx * length / 2) * 16)), int(round((c - dy * length / 2) * 16))),
                 (int(round((c + dx * length / 2) * 16)), int(round((c + dy * length / 2) * 16))), 1.0, 1, cv2.LINE_AA, 4)
        kern /= kern.sum()
        img = cv2.filter2D(img, -1, kern)
    img = np.clip(img, 0, 1)
    srgb = np.where(img < 0.0031308, img * 12.92, 1.055 * cv2.pow(img, 1 / 2.4) - 0.055) * np.float32(255)
    if cond.noise > 0:
        # Shot noise grows with signal; read noise does not. Both scale with gain.
        sigma = cond.noise * np.sqrt(0.3 + 0.7 * srgb / 255.0) / math.sqrt(max(cond.exposure, 0.2))
        srgb = srgb + rng.standard_normal(srgb.shape, dtype=np.float32) * sigma
    out = np.clip(np.round(srgb), 0, 255).astype(np.uint8)
    bgr = np.ascontiguousarray(out[..., ::-1])
    if cond.jpeg:
        ok, buf = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, int(cond.jpeg)])
        bgr = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    return bgr


def _occlusion(view: View, hand_mask: np.ndarray, regions: dict[str, np.ndarray]) -> dict[str, float]:
    if not regions:
        return {}
    W, H = view.size
    mask = cv2.resize(hand_mask, (W, H), interpolation=cv2.INTER_AREA) if view.ss > 1 else hand_mask
    if not mask.any():
        return {k: 0.0 for k in regions}
    keys = list(regions)
    labels = np.zeros((H, W), np.int32)
    for i, k in enumerate(keys):
        p = view.project(regions[k])
        cv2.fillConvexPoly(labels, np.round(p * 16).astype(np.int32), i + 1, cv2.LINE_8, 4)
    total = np.bincount(labels.ravel(), minlength=len(keys) + 1).astype(float)
    covered = np.bincount(labels.ravel(), weights=mask.ravel().astype(float) / 255.0, minlength=len(keys) + 1)
    return {k: float(covered[i + 1] / total[i + 1]) if total[i + 1] else 0.0 for i, k in enumerate(keys)}


def render_charuco(setup: SetUp, sheet_R: np.ndarray, sheet_t: np.ndarray, cond: Conditions, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A lens-calibration frame: the set-up's table with the ChArUco sheet held at the
    camera-frame pose (x_cam = sheet_R [u, v, 0] + sheet_t, u, v in mm from the
    pattern's top-left corner). Returns the BGR image and the true image positions of
    the chessboard corners (ChArUco id order)."""
    rng = np.random.default_rng([seed, 404])
    view = setup.view()
    tex = tx.table_texture(setup.kit, setup.game, {"colors": None, "cells": []} if setup.game == "blox" else {},
                           table_rgb=TABLE_COLOURS[setup.table], drift=setup.drift, markers=setup.markers,
                           rng=np.random.default_rng([seed, 8]), marks=None, ppm=setup.texture_ppm())
    canvas, ref = _table_layer(view, tex, setup, cond)
    c = setup.kit.charuco
    far = float(np.max((np.array([[0, 0, 0], [c.squares_x * c.square_mm, c.squares_y * c.square_mm, 0]]) @ sheet_R.T
                        + sheet_t)[:, 2]))
    sheet = tx.charuco_sheet(setup.kit, tx.texture_ppm(setup.intr.fx * setup.ss / far, 2, 8))
    normal_cam = sheet_R[:, 2]
    n_world = -(setup.R.T @ normal_cam)
    centre_world = setup.R.T @ (sheet_t - setup.t)
    shade = max(_shade(n_world, centre_world, cond, ref), cond.ambient)
    _composite(view, canvas, sheet, sheet_R, sheet_t, shade)
    image = _finish(view, canvas, cond, rng)
    c = setup.kit.charuco
    corners = np.array([[(i + 1) * c.square_mm, (j + 1) * c.square_mm, 0.0]
                        for j in range(c.squares_y - 1) for i in range(c.squares_x - 1)])
    img_pts, _ = cv2.projectPoints(corners, cv2.Rodrigues(sheet_R)[0], sheet_t.reshape(3, 1), setup.intr.K, setup.intr.D)
    return image, img_pts.reshape(-1, 2)


def random_sheet_pose(setup: SetUp, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A plausible hand-held pose of the lens sheet, wholly inside the frame: spanning
    30-60% of the frame's width, tilted up to 40 degrees, anywhere in the view."""
    c = setup.kit.charuco
    w_mm, h_mm = c.squares_x * c.square_mm, c.squares_y * c.square_mm
    pat = np.array([[0, 0, 0], [w_mm, 0, 0], [w_mm, h_mm, 0], [0, h_mm, 0]], float)
    K, D = setup.intr.K, setup.intr.D
    W, H = setup.intr.width, setup.intr.height
    for _ in range(500):
        # Held so the sheet spans 30-60% of the frame's width, as one would to
        # fill the view without cutting it off.
        depth = float(np.clip(setup.intr.fx * w_mm / (rng.uniform(0.3, 0.6) * W), 150, 900))
        px = rng.uniform(0.15, 0.85) * W, rng.uniform(0.15, 0.85) * H
        ray = np.linalg.solve(K, [px[0], px[1], 1.0])
        centre = ray * depth
        rx, ry, rz = np.radians(rng.uniform(-40, 40)), np.radians(rng.uniform(-40, 40)), np.radians(rng.uniform(-30, 30))
        R = cv2.Rodrigues(np.array([rx, ry, 0.0]))[0] @ cv2.Rodrigues(np.array([0, 0, rz]))[0]
        t = centre - R @ np.array([w_mm / 2, h_mm / 2, 0])
        corners = cv2.projectPoints(pat, cv2.Rodrigues(R)[0], t, K, D)[0].reshape(-1, 2)
        if corners[:, 0].min() > 5 and corners[:, 1].min() > 5 and corners[:, 0].max() < W - 5 and corners[:, 1].max() < H - 5:
            if np.all((pat @ R.T + t)[:, 2] > 100):
                return R, t
    raise ValueError("could not place the lens sheet inside the frame")
