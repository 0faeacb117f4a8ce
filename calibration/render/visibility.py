"""Ground-truth visibility of Blox pieces in a rendered frame (measurement only).

From a near-vertical camera the lower blocks of a tower are geometrically hidden by
the block above them, and a tall piece hides what stands behind it. No recogniser can
read what no pixel shows, so the Blox benchmark splits its errors by what the true
camera could see: this module says, for a frame :func:`calibration.render.scene.render_frame`
drew, how many image pixels of every tower level, chip, figure and board square show.

How: the renderer's own solids (:func:`scene.blox_solids`, replayed with the frame's
layout random stream, so every block has the offset and turn it was drawn with) are
painted into an ID buffer by the renderer's own painter (:func:`scene._draw_faces`:
its front-face test and depth order) on its supersampled canvas, over the board's
squares; the hands of the frame's conditions are painted on top, as the renderer does.
A face's value is its ID instead of its colour (no shading: ambient light 1). The
clear lower body of a figure hides nothing (the renderer blends it at 22%), so it is
not painted. Pixel counts are reported in output pixels (canvas pixels / ss^2).

Nothing here changes what the renderer draws or its truth.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

import cv2
import numpy as np

from calibration.kit import Kit
from calibration.render import scene as sc

NOTHING = 0  # table, markers, anything that is no board square and no piece
HAND = -1


@dataclass
class BloxVisibility:
    """Visible output pixels per item of one frame.

    ``square[r][c]``: the board square of the space (what an empty space shows);
    ``levels[(r, c)]``: per tower level, bottom to top; ``chip[(r, c)]``: the tower's
    point chip (towers below the kit's tallest height only: the tallest carries none);
    ``figure[(r, c)]``: a figure's coloured top. Areas count partly covered output
    pixels by their covered fraction. ``core`` holds the same items counted by
    their *core* pixels only: output pixels wholly of the item whose eight neighbours
    are wholly of it too, the pixels whose colour no edge mixes (a sliver one or two
    pixels wide has none)."""

    square: np.ndarray
    levels: dict[tuple[int, int], list[float]]
    chip: dict[tuple[int, int], float]
    figure: dict[tuple[int, int], float]
    core: BloxVisibility | None = None

    def space_visible(self, r: int, c: int, min_px: float) -> bool:
        """Whether everything the space's truth holds shows at least ``min_px`` pixels:
        every level of a tower, a figure's top, an empty space's square."""
        if (r, c) in self.levels:
            return min(self.levels[(r, c)]) >= min_px
        if (r, c) in self.figure:
            return self.figure[(r, c)] >= min_px
        return float(self.square[r, c]) >= min_px

    def best_odds(self, r: int, c: int, min_px: float, colours: int) -> float:
        """The chance that the best reader of this frame gets the space right, if it
        reads exactly the items showing at least ``min_px`` pixels and must guess the
        rest: a tower level showing less is one of ``colours`` colours, drawn uniformly
        and independently (as :mod:`calibration.render.states` draws them), so each such
        level is guessed right once in ``colours`` times. A hidden figure's top or empty
        square counts as read, so the odds are an upper bound. (Nearly every level
        hidden on the bench's draws is below a tower top that shows.)"""
        if (r, c) not in self.levels:
            return 1.0
        hidden = sum(1 for px in self.levels[(r, c)] if px < min_px)
        return float(colours) ** -hidden


class ItemIds:
    """The ID of every item in :func:`blox_id_buffer`: board squares 1..n*n, then
    ``slots`` per space (tower levels 0..max_tower-1, the chip, the figure's top)."""

    def __init__(self, n: int, max_tower: int) -> None:
        self.n = n
        self.slots = max_tower + 2
        self.chip_slot = max_tower
        self.figure_slot = max_tower + 1
        self.base = 1 + n * n

    def square(self, r: int, c: int) -> int:
        return 1 + r * self.n + c

    @classmethod
    def of(cls, kit: Any) -> ItemIds:
        return cls(kit.blox.spaces, kit.blox.block.max_tower)

    def piece(self, r: int, c: int, slot: int) -> int:
        return self.base + (r * self.n + c) * self.slots + slot

    @property
    def count(self) -> int:
        return self.base + self.n * self.n * self.slots


def _tagged_faces(setup: sc.SetUp, state: dict[str, Any], rng: np.random.Generator,
                  ids: ItemIds) -> list[sc.Face]:
    """The renderer's faces of ``state`` with their ID as colour (opaque faces only).

    ``scene.blox_solids`` walks the spaces in row order drawing every random number of a
    piece in turn; replayed one space at a time with the same stream it places every
    piece exactly as in the frame, and tells which space each face belongs to."""
    kit = setup.kit
    n = kit.blox.spaces
    h_mm = kit.blox.block.height_mm
    out: list[sc.Face] = []
    for r, row in enumerate(state.get("cells", [])):
        for c, cell in enumerate(row):
            if not cell:
                continue
            single: list[list[Any]] = [[None] * n for _ in range(n)]
            single[r][c] = cell
            faces, _ = sc.blox_solids(kit, {"cells": single}, setup.drift, rng)
            height = len(cell.get("tower", []))
            for f in faces:
                if f.alpha < 1:
                    continue  # the figure's clear body
                if "tower" in cell:
                    # Blocks stand on the board (z down): a face's mean height names its level.
                    level = int(-float(f.pts[:, 2].mean()) // h_mm)
                    slot = level if level < height else ids.chip_slot
                else:
                    slot = ids.figure_slot
                v = float(ids.piece(r, c, slot))
                out.append(replace(f, rgb=np.array([v, v, v]), label=None))
    return out


def blox_id_buffer(setup: sc.SetUp, state: dict[str, Any], seed: int, *, layout_seed: int | None = None,
                   hands: Sequence[sc.Hand] = ()) -> np.ndarray:
    """Item IDs on the renderer's canvas (``ss`` times the output size, int32):
    :data:`NOTHING`, :data:`HAND`, board squares ``1 + r*n + c``, then the pieces (see
    :class:`ItemIds`). ``seed``/``layout_seed`` as given to ``render_frame``; ``hands`` the
    frame's conditions' hands."""
    kit = setup.kit
    n, s = kit.blox.spaces, kit.blox.space_mm
    ids = ItemIds.of(kit)
    view = setup.view()
    W, H = view.canvas_size
    canvas = np.zeros((H, W), np.float32)
    # The board squares first (they lie under everything); edges subdivided so the lens
    # distortion bends them as it bends the printed board.
    t = np.linspace(0.0, 1.0, 5)[:-1]
    for r in range(n):
        for c in range(n):
            x0, y0, x1, y1 = c * s, r * s, (c + 1) * s, (r + 1) * s
            edge = ([(x0 + (x1 - x0) * k, y0) for k in t] + [(x1, y0 + (y1 - y0) * k) for k in t]
                    + [(x1 - (x1 - x0) * k, y1) for k in t] + [(x0, y1 - (y1 - y0) * k) for k in t])
            pts = np.array([[x, y, 0.0] for x, y in edge])
            poly = np.round(view.to_canvas(view.project(pts)) * 16).astype(np.int32)
            cv2.fillPoly(canvas, [poly], float(ids.square(r, c)), cv2.LINE_8, 4)
    # The frame's layout stream, exactly as render_frame makes it.
    rng = np.random.default_rng([seed if layout_seed is None else layout_seed, 303])
    flat = sc.Conditions(ambient=1.0)  # shade 1 everywhere: a face's value stays its ID
    sc._draw_faces(view, canvas, _tagged_faces(setup, state, rng, ids), flat, 1.0)
    out = np.rint(canvas).astype(np.int32)
    if hands:
        mask = np.zeros((H, W), np.uint8)
        scratch = np.zeros((H, W), np.float32)
        area = kit.area_mm(setup.game)
        for hand in hands:
            sc._draw_hand(view, scratch, mask, hand, area, flat, 1.0)
        out[mask > 0] = HAND
    return out


def _core_ids(buf: np.ndarray, ss: int) -> np.ndarray:
    """Output-resolution IDs of the pixels that are core pixels (see BloxVisibility), else 0."""
    H, W = buf.shape[0] // ss, buf.shape[1] // ss
    blocks = buf[:H * ss, :W * ss].reshape(H, ss, W, ss)
    lo, hi = blocks.min(axis=(1, 3)), blocks.max(axis=(1, 3))
    out = np.where(lo == hi, lo, NOTHING)
    core = out > 0
    pad = np.pad(out, 1, constant_values=NOTHING)
    for dy in (0, 1, 2):
        for dx in (0, 1, 2):
            core &= pad[dy:dy + H, dx:dx + W] == out
    return np.where(core, out, NOTHING)


def _from_counts(kit: Kit, state: dict[str, Any], ids: ItemIds, counts: np.ndarray) -> BloxVisibility:
    n = ids.n
    square = np.array([[counts[ids.square(r, c)] for c in range(n)] for r in range(n)])
    levels: dict[tuple[int, int], list[float]] = {}
    chip: dict[tuple[int, int], float] = {}
    figure: dict[tuple[int, int], float] = {}
    for r, row in enumerate(state.get("cells", [])):
        for c, cell in enumerate(row):
            if cell and "tower" in cell:
                levels[(r, c)] = [float(counts[ids.piece(r, c, k)]) for k in range(len(cell["tower"]))]
                if kit.blox.block.carries_chip(len(cell["tower"])):
                    chip[(r, c)] = float(counts[ids.piece(r, c, ids.chip_slot)])
            elif cell and "figure" in cell:
                figure[(r, c)] = float(counts[ids.piece(r, c, ids.figure_slot)])
    return BloxVisibility(square, levels, chip, figure)


def blox_visibility(setup: sc.SetUp, state: dict[str, Any], seed: int, *, layout_seed: int | None = None,
                    hands: Sequence[sc.Hand] = ()) -> BloxVisibility:
    """Visible output pixels of every item of ``state`` in the frame ``render_frame``
    draws with these arguments (see :func:`blox_id_buffer`), with their core pixels."""
    ids = ItemIds.of(setup.kit)
    ss = setup.view().ss
    buf = blox_id_buffer(setup, state, seed, layout_seed=layout_seed, hands=hands)
    area = np.bincount(buf[buf > 0].ravel(), minlength=ids.count).astype(float) / ss ** 2
    core = _core_ids(buf, ss)
    out = _from_counts(setup.kit, state, ids, area)
    out.core = _from_counts(setup.kit, state, ids, np.bincount(core[core > 0].ravel(), minlength=ids.count).astype(float))
    return out


def hands_from_json(conditions: dict[str, Any]) -> list[sc.Hand]:
    """The hands of a frame's recorded conditions (meta.json ``frames[i].conditions``)."""
    return [sc.Hand(**h) for h in conditions.get("hands", [])]
