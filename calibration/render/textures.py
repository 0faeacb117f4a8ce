"""Printed things as textures: the table with its board, markers and cards; the
Blockers! tiles and clear grid; the ChArUco sheet; glyphs.

Edges that calibration measures (markers, ChArUco squares) are drawn at 8x the texture
resolution and area-averaged down, so their positions are exact to a fraction of a
texel instead of snapped to the texel grid.
"""

from __future__ import annotations

import json
import math
from importlib import resources
from typing import Any

import cv2
import numpy as np

from calibration.kit import Kit, aruco_dictionary
from calibration.render.view import Texture

TEX_PPM = 4.0  # default texels per mm; the renderer picks one per view (texture_ppm)


def texture_ppm(px_per_mm: float, lo: int = 2, hi: int = 6) -> int:
    """An integer texel density (so whole-mm kit sizes fall on texel edges) close to
    the canvas density where the texture is seen smallest: sampling a texture much
    finer than the canvas aliases edges, a coarser one only softens them."""
    return int(np.clip(round(px_per_mm), lo, hi))
TABLE_MARGIN_MM = 160.0

# Blockers! section symbols, row-major from the far-left section. R-BLOCKERS-1 fixes
# only the crescent (near-left); the others are this renderer's default edition.
DEFAULT_BLOCKERS_SYMBOLS = ("sun", "star", "heart", "diamond", "clover", "drop", "crescent", "triangle", "square")


def _edition(game: str) -> dict[str, Any] | None:
    try:
        text = resources.files("engine.editions").joinpath(f"{game}.json").read_text("utf-8")
        return json.loads(text)
    except (FileNotFoundError, ModuleNotFoundError, json.JSONDecodeError, OSError):
        return None


def default_blox_colors() -> list[list[str]]:
    """The board colour map of the bundled Blox edition (``engine/editions/blox.json``
    key ``board``), or a fixed fallback map when the edition has none."""
    ed = _edition("blox")
    if ed and isinstance(ed.get("board"), list) and len(ed["board"]) == 9:
        return [list(map(str, row)) for row in ed["board"]]
    names = ("black", "white", "grey", "purple")
    return [[names[(3 * r + 2 * c + (r * c) % 3) % 4] for c in range(9)] for r in range(9)]


def default_blox_marks() -> list[list[int]]:
    ed = _edition("blox")
    if ed and isinstance(ed.get("marks"), list) and len(ed["marks"]) == 9:
        return [[int(v) for v in row] for row in ed["marks"]]
    return [[0] * 9 for _ in range(9)]


def blockers_symbols() -> tuple[str, ...]:
    """The nine section symbols, row-major from the far-left section: the bundled
    edition's ``sections`` (3 x 3, as ``engine/editions/blockers.json`` gives them; a
    flat ``symbols`` list of nine is read too), else :data:`DEFAULT_BLOCKERS_SYMBOLS`."""
    ed = _edition("blockers") or {}
    secs = ed.get("sections")
    if isinstance(secs, list) and secs and all(isinstance(row, list) for row in secs):
        flat = [str(s) for row in secs for s in row]
        if len(flat) == 9:
            return tuple(flat)
    if isinstance(ed.get("symbols"), list) and len(ed["symbols"]) == 9:
        return tuple(str(s) for s in ed["symbols"])
    return DEFAULT_BLOCKERS_SYMBOLS


# ----------------------------------------------------------------------------- shapes


def shape_polys(name: str, size: float) -> list[np.ndarray]:
    """Polygons (mm, centred on 0) of a named shape about ``size`` across."""
    r = size / 2
    if name == "circle":
        a = np.linspace(0, 2 * np.pi, 40, endpoint=False)
        return [np.stack([r * np.cos(a), r * np.sin(a)], 1)]
    if name == "diamond":
        return [np.array([[0, -r], [r * 0.8, 0], [0, r], [-r * 0.8, 0]])]
    if name == "square":
        q = r * 0.8
        return [np.array([[-q, -q], [q, -q], [q, q], [-q, q]])]
    if name == "triangle":
        return [np.array([[0, -r], [r, r * 0.8], [-r, r * 0.8]])]
    if name == "cross":
        w = r * 0.36
        return [np.array([[-w, -r], [w, -r], [w, -w], [r, -w], [r, w], [w, w], [w, r], [-w, r], [-w, w], [-r, w],
                          [-r, -w], [-w, -w]])]
    if name in ("star", "sun"):
        a = np.linspace(-np.pi / 2, 1.5 * np.pi, 10, endpoint=False)
        rad = np.where(np.arange(10) % 2 == 0, r, r * (0.45 if name == "star" else 0.7))
        if name == "sun":
            a = np.linspace(0, 2 * np.pi, 24, endpoint=False)
            rad = np.where(np.arange(24) % 2 == 0, r, r * 0.7)
        return [np.stack([rad * np.cos(a), rad * np.sin(a)], 1)]
    if name == "heart":
        t = np.linspace(0, 2 * np.pi, 48, endpoint=False)
        x = 16 * np.sin(t) ** 3
        y = -(13 * np.cos(t) - 5 * np.cos(2 * t) - 2 * np.cos(3 * t) - np.cos(4 * t))
        return [np.stack([x, y], 1) * (r / 17)]
    if name == "clover":
        out = []
        for k in range(3):
            c = np.array([np.cos(-np.pi / 2 + k * 2 * np.pi / 3), np.sin(-np.pi / 2 + k * 2 * np.pi / 3)]) * r * 0.45
            a = np.linspace(0, 2 * np.pi, 24, endpoint=False)
            out.append(c + np.stack([np.cos(a), np.sin(a)], 1) * r * 0.5)
        return out
    if name == "drop":
        t = np.linspace(0, 2 * np.pi, 40, endpoint=False)
        x = r * 0.7 * np.sin(t) * np.sin(t / 2) ** 1
        y = -r * np.cos(t)
        return [np.stack([x, y], 1)]
    if name == "crescent":
        a = np.linspace(-np.pi * 0.8, np.pi * 0.8, 30)
        outer = np.stack([-r * np.cos(a), r * np.sin(a)], 1)
        b = np.linspace(np.pi * 0.62, -np.pi * 0.62, 30)
        inner = np.stack([-r * 0.35 - r * 0.75 * np.cos(b), r * 0.95 * np.sin(b)], 1)
        return [np.concatenate([outer, inner])]
    # (the pieces of one shape must not overlap: fill_mm fills them as one even-odd path)
    if name == "flower":
        t = np.linspace(0, 2 * np.pi, 96, endpoint=False)
        rad = r * (0.5 + 0.5 * np.abs(np.cos(3 * t)))
        return [np.stack([rad * np.cos(t), rad * np.sin(t)], 1)]
    if name == "anchor":
        w = 0.13 * r
        shaft = np.array([[-w, -0.58 * r], [w, -0.58 * r], [w, 0.64 * r], [-w, 0.64 * r]])
        left = np.array([[-0.48 * r, -0.5 * r], [-w, -0.5 * r], [-w, -0.34 * r], [-0.48 * r, -0.34 * r]])
        right = left * [-1, 1]
        a = np.linspace(0.1 * np.pi, 0.9 * np.pi, 18)
        arc = np.concatenate([np.stack([0.85 * r * np.cos(a), 0.05 * r + 0.8 * r * np.sin(a)], 1),
                              np.stack([0.62 * r * np.cos(a[::-1]), 0.05 * r + 0.6 * r * np.sin(a[::-1])], 1)])
        t = np.linspace(0, 2 * np.pi, 16, endpoint=False)
        ring = np.stack([np.cos(t), np.sin(t)], 1) * 0.22 * r + [0, -0.8 * r]
        return [shaft, left, right[::-1], arc, ring]
    if name == "lightning":
        return [np.array([[0.25, -1.0], [-0.45, 0.12], [-0.02, 0.12], [-0.28, 1.0], [0.48, -0.18], [0.06, -0.18],
                          [0.34, -1.0]]) * r]
    raise ValueError(f"unknown shape {name!r}")


def _place(polys: list[np.ndarray], cx: float, cy: float, angle_deg: float) -> list[np.ndarray]:
    a = math.radians(angle_deg)
    rot = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
    return [p @ rot.T + [cx, cy] for p in polys]


def fill_mm(tex: Texture, polys: list[np.ndarray], color: tuple, target: np.ndarray | None = None) -> None:
    img = tex.rgb if target is None else target
    cv2.fillPoly(img, [tex.poly(p) for p in polys], color, cv2.LINE_AA, 4)


def text_mm(tex: Texture, text: str, cx: float, cy: float, height_mm: float, color: tuple, thickness_mm: float,
            target: np.ndarray | None = None) -> None:
    """Text centred at (cx, cy) mm, cap height ``height_mm``."""
    img = tex.rgb if target is None else target
    font = cv2.FONT_HERSHEY_SIMPLEX
    (w, h), _ = cv2.getTextSize(text, font, 1.0, 1)
    scale = height_mm * tex.ppm / h
    th = max(1, round(thickness_mm * tex.ppm))
    (w, h), _ = cv2.getTextSize(text, font, scale, th)
    x, y = tex.to_px(cx, cy)
    cv2.putText(img, text, (int(round(x - w / 2)), int(round(y + h / 2))), font, scale, color, th, cv2.LINE_AA)


# ---------------------------------------------------------------------------- markers


def marker_image(kit: Kit, marker_id: int, side_px: int) -> np.ndarray:
    """A board marker, area-accurate at any pixel size (grey uint8)."""
    d = aruco_dictionary(kit.markers.dictionary)
    cells = d.markerSize + 2
    big = cv2.aruco.generateImageMarker(d, marker_id, cells * 48, borderBits=1)
    return cv2.resize(big, (side_px, side_px), interpolation=cv2.INTER_AREA)


def charuco_board(kit: Kit) -> Any:
    c = kit.charuco
    return cv2.aruco.CharucoBoard((c.squares_x, c.squares_y), c.square_mm, c.marker_mm, aruco_dictionary(c.dictionary))


def charuco_image(kit: Kit, ppm: float) -> np.ndarray:
    """The ChArUco pattern (no margin) at ``ppm`` pixels per mm, grey uint8."""
    c = kit.charuco
    w_mm, h_mm = c.squares_x * c.square_mm, c.squares_y * c.square_mm
    big = charuco_board(kit).generateImage((int(w_mm * 16), int(h_mm * 16)), marginSize=0, borderBits=1)
    return cv2.resize(big, (round(w_mm * ppm), round(h_mm * ppm)), interpolation=cv2.INTER_AREA)


def charuco_sheet(kit: Kit, ppm: float = TEX_PPM, paper_mm: tuple[float, float] = (297.0, 210.0)) -> Texture:
    """The lens sheet on paper (landscape A4 by default), plane origin at the top-left
    corner of the pattern."""
    c = kit.charuco
    w_mm, h_mm = c.squares_x * c.square_mm, c.squares_y * c.square_mm
    mx, my = (paper_mm[0] - w_mm) / 2, (paper_mm[1] - h_mm) / 2
    # The pattern starts on a texel edge, so the plane origin is exactly its corner.
    x0, y0 = round(mx * ppm), round(my * ppm)
    tex = Texture(np.full((round(paper_mm[1] * ppm), round(paper_mm[0] * ppm), 3), 245, np.uint8), ppm,
                  -x0 / ppm, -y0 / ppm)
    pat = charuco_image(kit, ppm)
    grey = pat.astype(np.float32) / 255.0
    tex.rgb[y0:y0 + pat.shape[0], x0:x0 + pat.shape[1]] = (25 + grey * 220).astype(np.uint8)[..., None]
    tex.alpha = np.full(tex.rgb.shape[:2], 255, np.uint8)
    return tex


# ------------------------------------------------------------------------------ table


def _drift(rgb: tuple, name: str, drift: dict[str, tuple[float, float, float]]) -> tuple[int, int, int]:
    f = drift.get(name, (1.0, 1.0, 1.0))
    return tuple(int(np.clip(round(v * k), 0, 255)) for v, k in zip(rgb, f))  # type: ignore[return-value]


def table_texture(kit: Kit, game: str, state: dict[str, Any], *, table_rgb: tuple[int, int, int],
                  drift: dict[str, tuple[float, float, float]], markers: bool, rng: np.random.Generator,
                  marks: list[list[int]] | None = None, placements: dict[str, Any] | None = None,
                  ppm: float = TEX_PPM) -> Texture:
    """The table plane (z = 0): table, board, markers and, for Bloxo, the cards.

    ``placements`` receives per-item jitter actually used (card offsets) for the meta."""
    w, h = kit.area_mm(game)
    m = TABLE_MARGIN_MM
    W, H = round((w + 2 * m) * ppm), round((h + 2 * m) * ppm)
    rgb = np.empty((H, W, 3), np.uint8)
    rgb[:] = table_rgb
    tex = Texture(rgb, ppm, -m, -m)

    if game == "blox":
        _draw_blox_board(tex, kit, state, drift, marks)
    elif game == "blockers":
        _draw_blockers_board(tex, kit, drift)
    elif game == "bloxo":
        _draw_bloxo_cards(tex, kit, state, drift, rng, placements)
    elif game == "blockout":
        pass
    if markers:
        s = kit.markers.size_mm
        q = kit.markers.quiet_zone_mm
        side = round(s * ppm)
        for mid, corners in kit.marker_corners(game).items():
            x0, y0 = corners[0][0], corners[0][1]
            # White paper with a quiet zone all round, notched where it would cover
            # the area: only the marker's inner corner touches the grid corner.
            fill_mm(tex, [_paper_outline(corners[:, :2], q, w, h)], _drift((240, 240, 236), "marker-paper", drift))
            img = marker_image(kit, mid, side)
            ix, iy = tex.to_px(x0, y0)
            ix, iy = int(round(ix + 0.5)), int(round(iy + 0.5))
            ink = np.array(_drift((25, 25, 28), "marker-ink", drift), np.float32)
            white = np.array(_drift((240, 240, 236), "marker-paper", drift), np.float32)
            g = img.astype(np.float32)[..., None] / 255.0
            tex.rgb[iy:iy + side, ix:ix + side] = (ink + (white - ink) * g).astype(np.uint8)
    return tex


def _paper_outline(corners: np.ndarray, q: float, w: float, h: float) -> np.ndarray:
    """The L-shaped paper around a marker: its square grown by ``q`` minus the notch
    that would lie inside the marked area."""
    x0, y0 = corners.min(axis=0)
    x1, y1 = corners.max(axis=0)
    ext = [np.array(p, float) for p in ((x0 - q, y0 - q), (x1 + q, y0 - q), (x1 + q, y1 + q), (x0 - q, y1 + q))]
    # The inner corner P is the marker corner on the area's corner.
    P = min((np.array(c, float) for c in corners), key=lambda c: min(abs(c[0]), abs(c[0] - w)) + min(abs(c[1]), abs(c[1] - h)))
    k = int(np.argmin([np.linalg.norm(e - P) for e in ext]))
    e, prev, nxt = ext[k], ext[k - 1], ext[(k + 1) % 4]
    a = np.array([e[0], P[1]]) if prev[0] == e[0] else np.array([P[0], e[1]])
    b = np.array([e[0], P[1]]) if nxt[0] == e[0] else np.array([P[0], e[1]])
    return np.array(ext[:k] + [a, P, b] + ext[k + 1:])


def _draw_blox_board(tex: Texture, kit: Kit, state: dict[str, Any], drift: dict, marks: list[list[int]] | None) -> None:
    colors = state.get("colors") or default_blox_colors()
    n, s = kit.blox.spaces, kit.blox.space_mm
    for r in range(n):
        for c in range(n):
            name = colors[r][c]
            if name not in kit.blox.colors:
                raise ValueError(f"board colour {name!r} at [{r},{c}] is not a kit colour")
            rgb = _drift(kit.blox.colors[name], name, drift)
            x0, y0 = c * s, r * s
            i0, j0 = tex.to_px(x0, y0)
            i1, j1 = tex.to_px(x0 + s, y0 + s)
            tex.rgb[int(round(j0 + 0.5)):int(round(j1 + 0.5)), int(round(i0 + 0.5)):int(round(i1 + 0.5))] = rgb
            k = (marks or [[0] * n] * n)[r][c]
            if k:
                lum = sum(rgb) / 3
                mark = tuple(int(v * 0.72) if lum > 90 else int(min(255, v * 1.5 + 25)) for v in rgb)
                q = kit.blox.tower_mark_mm
                spots = [(-1, -1), (1, -1), (1, 1), (-1, 1)][:k]
                for dx, dy in spots:
                    cx, cy = x0 + s / 2 + dx * (q * 0.75), y0 + s / 2 + dy * (q * 0.75)
                    fill_mm(tex, [np.array([[cx - q / 2, cy - q / 2], [cx + q / 2, cy - q / 2], [cx + q / 2, cy + q / 2],
                                            [cx - q / 2, cy + q / 2]])], mark)


def _draw_blockers_board(tex: Texture, kit: Kit, drift: dict) -> None:
    b = kit.blockers
    side = b.spaces * b.space_mm
    rim = b.rim_mm
    paper = _drift(b.board, "blockers-board", drift)
    fill_mm(tex, [np.array([[-rim, -rim], [side + rim, -rim], [side + rim, side + rim], [-rim, side + rim]])], paper)
    line = tuple(int(v * 0.8) for v in paper)
    for k in range(b.spaces + 1):
        p = k * b.space_mm
        fill_mm(tex, [np.array([[p - 0.4, 0], [p + 0.4, 0], [p + 0.4, side], [p - 0.4, side]])], line)
        fill_mm(tex, [np.array([[0, p - 0.4], [side, p - 0.4], [side, p + 0.4], [0, p + 0.4]])], line)
    ink = tuple(int(v * 0.45) for v in paper)
    for k in range(b.spaces):
        text_mm(tex, str(k + 1), (k + 0.5) * b.space_mm, -rim / 2, 6, ink, 0.8)
        text_mm(tex, "ABCDEFGHI"[k], -rim / 2, (k + 0.5) * b.space_mm, 6, ink, 0.8)
    faint = tuple(int(v * 0.9) for v in paper)
    for i, sym in enumerate(blockers_symbols()):
        r, c = divmod(i, 3)
        cx, cy = (c * 3 + 1.5) * b.space_mm, (r * 3 + 1.5) * b.space_mm
        fill_mm(tex, _place(shape_polys(sym, 2.6 * b.space_mm), cx, cy, 0), faint)


def card_layout(kit: Kit) -> tuple[float, float]:
    """Board-frame centre of the Bloxo start card ``[0, 0]``: the play area's centre."""
    w, h = kit.bloxo.play_area_mm
    return (w / 2, h / 2)


def _draw_bloxo_cards(tex: Texture, kit: Kit, state: dict, drift: dict, rng: np.random.Generator,
                      placements: dict | None) -> None:
    o = kit.bloxo
    ox, oy = card_layout(kit)
    used = []
    for card in state.get("cards", []):
        x, y = card["at"]
        dx, dy = rng.uniform(-o.max_offset_mm, o.max_offset_mm, 2)
        ang = float(rng.uniform(-o.max_rotation_deg, o.max_rotation_deg))
        cx, cy = ox + x * o.card_mm + dx, oy + y * o.card_mm + dy
        used.append({"at": [x, y], "offset_mm": [round(float(dx), 3), round(float(dy), 3)], "rotation_deg": round(ang, 3)})
        half = o.card_mm / 2 - 0.6
        fill_mm(tex, _place([np.array([[-half, -half], [half, -half], [half, half], [-half, half]])], cx, cy, ang),
                _drift(o.face, "card-face", drift))
        q = o.quadrant_mm / 2
        for (qx, qy), (color, shape) in zip(((-q, -q), (q, -q), (q, q), (-q, q)), card["quadrants"]):
            a = math.radians(ang)
            px = cx + qx * math.cos(a) - qy * math.sin(a)
            py = cy + qx * math.sin(a) + qy * math.cos(a)
            fill_mm(tex, _place(shape_polys(shape, o.shape_mm), px, py, ang), _drift(o.colors[color], color, drift))
    if placements is not None:
        placements["cards"] = used


def blockers_layers(kit: Kit, state: dict, drift: dict, rng: np.random.Generator,
                    ppm: float = TEX_PPM) -> tuple[Texture, Texture]:
    """Two transparent layers above the Blockers! board: the tiles' tops (z = -tile
    thickness) and the clear grid's walls (a little higher)."""
    b = kit.blockers
    side = b.spaces * b.space_mm
    n = round(side * ppm)
    tiles = Texture(np.zeros((n, n, 3), np.uint8), ppm, 0.0, 0.0, np.zeros((n, n), np.uint8))
    syms = blockers_symbols()
    for r, row in enumerate(state.get("cells", [])):
        for c, cell in enumerate(row):
            if not cell:
                continue
            color = cell["color"]
            rgb = _drift(b.colors[color], color, drift)
            dx, dy = rng.uniform(-0.8, 0.8, 2)
            cx, cy = (c + 0.5) * b.space_mm + dx, (r + 0.5) * b.space_mm + dy
            ang = float(rng.uniform(-3, 3))
            h = b.tile_mm / 2
            quad = _place([np.array([[-h, -h], [h, -h], [h, h], [-h, h]])], cx, cy, ang)
            fill_mm(tiles, quad, rgb)
            fill_mm(tiles, quad, 255, target=tiles.alpha)
            face = cell.get("face")
            ink = (20, 20, 20)
            if face in syms:
                fill_mm(tiles, _place(shape_polys(face, b.tile_mm * 0.62), cx, cy, ang), ink)
            elif face == "wild":
                text_mm(tiles, "BLOCKERS!", cx, cy, 3.2, ink, 0.5)
            elif face:
                text_mm(tiles, str(face), cx, cy, b.tile_mm * 0.5, ink, 2.2)
    g = n + round(4 * ppm)
    grid = Texture(np.full((g, g, 3), 235, np.uint8), ppm, -2.0, -2.0, np.zeros((g, g), np.uint8))
    wall = b.grid_wall_mm / 2
    for k in range(b.spaces + 1):
        p = k * b.space_mm
        fill_mm(grid, [np.array([[p - wall, -wall], [p + wall, -wall], [p + wall, side + wall], [p - wall, side + wall]])],
                90, target=grid.alpha)
        fill_mm(grid, [np.array([[-wall, p - wall], [side + wall, p - wall], [side + wall, p + wall], [-wall, p + wall]])],
                90, target=grid.alpha)
    return tiles, grid
