"""The table kit: every nominal size and colour of ``table-kit.md`` in one file.

The bundled ``calibration/kit.json`` holds the nominal kit. A user who measured their
own copy passes their own file; :func:`load_kit` validates it and raises
:class:`KitError` with the JSON path of the offending field, so the message says what
to fix (``kit.json: blox.block.height_mm must be a positive number, got -3``).

Geometry helpers (marker corners, grid areas) live here too because they depend on the
kit only: every other module asks the kit where things are instead of hard-coding mm.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

GAMES = ("blox", "bloxo", "blockers", "blockout", "bloxx")
MARKER_CORNERS = ("far_left", "far_right", "near_right", "near_left")
RGB = tuple[int, int, int]


class KitError(ValueError):
    """A kit file that is missing, malformed or inconsistent."""


@dataclass(frozen=True)
class MarkerSpec:
    dictionary: str
    size_mm: float
    quiet_zone_mm: float
    ids: dict[str, int]  # corner name -> ArUco id


@dataclass(frozen=True)
class CharucoSpec:
    dictionary: str
    squares_x: int
    squares_y: int
    square_mm: float
    marker_mm: float


@dataclass(frozen=True)
class CameraRange:
    height_mm: tuple[float, float]
    tilt_deg: tuple[float, float]
    min_board_width_fraction: float


@dataclass(frozen=True)
class BlockSpec:
    footprint_mm: float
    height_mm: float
    max_offset_mm: float
    max_rotation_deg: float
    max_tower: int

    def carries_chip(self, height: int) -> bool:
        """Whether a tower of ``height`` blocks carries a point chip: every tower the rules
        let be destroyed, that is every tower below the tallest (blox.txt, building: "when
        a tower of 5 blocks is built, no victory point token is placed on it, since it can
        no longer be destroyed"; table-kit.md: a point chip on a destroyable tower)."""
        return 1 <= height < self.max_tower


@dataclass(frozen=True)
class ChipSpec:
    diameter_mm: float
    thickness_mm: float
    color: RGB


@dataclass(frozen=True)
class FigureSpec:
    base_mm: float
    height_mm: float
    top_fraction: float


@dataclass(frozen=True)
class BloxKit:
    spaces: int
    space_mm: float
    colors: dict[str, RGB]
    tower_mark_mm: float
    block: BlockSpec
    chip: ChipSpec
    figure: FigureSpec
    players: dict[str, RGB]


@dataclass(frozen=True)
class BloxoKit:
    play_area_mm: tuple[float, float]
    card_mm: float
    quadrant_mm: float
    shape_mm: float
    max_offset_mm: float
    max_rotation_deg: float
    face: RGB
    colors: dict[str, RGB]
    shapes: dict[str, str]  # colour name -> shape name


@dataclass(frozen=True)
class BlockersKit:
    spaces: int
    space_mm: float
    grid_wall_mm: float
    rim_mm: float
    tile_mm: float
    tile_thickness_mm: float
    board: RGB
    colors: dict[str, RGB]


@dataclass(frozen=True)
class BlockoutKit:
    play_area_mm: tuple[float, float]
    base_mm: float
    base_height_mm: float
    sizes: dict[str, tuple[float, float, float]]
    colors: dict[str, RGB]


@dataclass(frozen=True)
class BloxxDieSpec:
    """A Bloxx! shape die: a cube printed on every face with its polyomino.

    The polyomino is centred on the face, ``cell_mm`` a cell, each cell an ink square
    ``cell_gap_mm`` smaller than its cell; the circle square has a round hole of
    ``circle_mm`` across (body colour) in its ink square."""

    size_mm: float
    cell_mm: float
    cell_gap_mm: float
    circle_mm: float
    max_tilt_deg: float
    colors: dict[str, tuple[RGB, RGB]]  # die name -> (body, ink)


@dataclass(frozen=True)
class BloxxSheetSpec:
    """The printed Bloxx! sheet: the grid's squares, where the grid sits on the paper."""

    paper_mm: tuple[float, float]
    square_mm: float
    grid_origin_mm: tuple[float, float]  # top-left grid corner, from the paper's top-left
    line_mm: float
    border_mm: float
    ink: RGB
    number_mm: float
    row_colors: dict[str, RGB]


@dataclass(frozen=True)
class BloxxKit:
    rolling_area_mm: tuple[float, float]
    die: BloxxDieSpec
    sheet: BloxxSheetSpec


@dataclass(frozen=True)
class Conditions:
    color_temperature_k: tuple[float, float]
    max_print_drift: float


@dataclass(frozen=True)
class Kit:
    """A validated kit. ``source`` names the file it came from (for messages)."""

    name: str
    version: int
    markers: MarkerSpec
    charuco: CharucoSpec
    camera: CameraRange
    blox: BloxKit
    bloxo: BloxoKit
    blockers: BlockersKit
    blockout: BlockoutKit
    conditions: Conditions
    source: str
    raw: dict[str, Any]
    # Optional so kit files written before Bloxx! was supported still load.
    bloxx: BloxxKit | None = None

    def require_bloxx(self) -> BloxxKit:
        if self.bloxx is None:
            raise KitError(f"{self.source}: the kit has no 'bloxx' section (rolling area, dice, sheet)")
        return self.bloxx

    def area_mm(self, game: str) -> tuple[float, float]:
        """Width and depth of the area the four markers frame for ``game``.

        For boards it is the playing grid; for Bloxo and Block Out! (no board) the
        play area (table-kit.md, markers)."""
        if game == "blox":
            side = self.blox.spaces * self.blox.space_mm
            return (side, side)
        if game == "blockers":
            side = self.blockers.spaces * self.blockers.space_mm
            return (side, side)
        if game == "bloxo":
            return self.bloxo.play_area_mm
        if game == "blockout":
            return self.blockout.play_area_mm
        if game == "bloxx":
            return self.require_bloxx().rolling_area_mm
        raise KitError(f"unknown game {game!r}; expected one of {', '.join(GAMES)}")

    def grid(self, game: str) -> tuple[int, float] | None:
        """(spaces per side, space size in mm) for games played on a grid board."""
        if game == "blox":
            return (self.blox.spaces, self.blox.space_mm)
        if game == "blockers":
            return (self.blockers.spaces, self.blockers.space_mm)
        return None

    def area_corners(self, game: str) -> np.ndarray:
        """The marked area's corners in the board frame (z=0), far-left first, clockwise."""
        w, h = self.area_mm(game)
        return np.array([[0, 0, 0], [w, 0, 0], [w, h, 0], [0, h, 0]], dtype=np.float64)

    def marker_corners(self, game: str) -> dict[int, np.ndarray]:
        """Board-frame corners of each board marker, in ArUco corner order.

        The marker image lies upright in the board frame (its top edge toward the far
        edge), so ArUco's corner order (top-left, top-right, bottom-right,
        bottom-left) maps to (-x,-y), (+x,-y), (+x,+y), (-x,+y). Each marker lies
        diagonally outside its corner, its inner corner on the grid corner."""
        w, h = self.area_mm(game)
        s = self.markers.size_mm
        origins = {"far_left": (-s, -s), "far_right": (w, -s), "near_right": (w, h), "near_left": (-s, h)}
        out: dict[int, np.ndarray] = {}
        for corner, (x0, y0) in origins.items():
            out[self.markers.ids[corner]] = np.array(
                [[x0, y0, 0], [x0 + s, y0, 0], [x0 + s, y0 + s, 0], [x0, y0 + s, 0]], dtype=np.float64
            )
        return out

    def marker_name(self, marker_id: int) -> str:
        for name, mid in self.markers.ids.items():
            if mid == marker_id:
                return name.replace("_", "-")
        return f"id {marker_id}"


# --------------------------------------------------------------------------- loading


class _Reader:
    """Typed access to a JSON object that names the field path in every error."""

    def __init__(self, data: Any, path: str, where: str) -> None:
        self.data = data
        self.path = path
        self.where = where

    def fail(self, key: str, what: str, got: Any = ...) -> KitError:
        field = f"{self.path}.{key}" if self.path else key
        tail = "" if got is ... else f", got {got!r}"
        return KitError(f"{self.where}: {field} {what}{tail}")

    def get(self, key: str) -> Any:
        if not isinstance(self.data, dict):
            raise KitError(f"{self.where}: {self.path or 'the kit'} must be a JSON object")
        if key not in self.data:
            raise self.fail(key, "is missing")
        return self.data[key]

    def sub(self, key: str) -> "_Reader":
        value = self.get(key)
        if not isinstance(value, dict):
            raise self.fail(key, "must be a JSON object", value)
        return _Reader(value, f"{self.path}.{key}" if self.path else key, self.where)

    def number(self, key: str, *, positive: bool = True, maximum: float | None = None) -> float:
        value = self.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(key, "must be a number", value)
        if positive and not value > 0:
            raise self.fail(key, "must be a positive number", value)
        if maximum is not None and value > maximum:
            raise self.fail(key, f"must be at most {maximum}", value)
        return float(value)

    def integer(self, key: str, *, minimum: int = 1) -> int:
        value = self.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.fail(key, f"must be an integer >= {minimum}", value)
        return value

    def text(self, key: str) -> str:
        value = self.get(key)
        if not isinstance(value, str) or not value:
            raise self.fail(key, "must be a non-empty string", value)
        return value

    def pair(self, key: str, *, ordered: bool = False, allow_zero: bool = False) -> tuple[float, float]:
        value = self.get(key)
        ok = (
            isinstance(value, list)
            and len(value) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
        )
        if not ok or any(v < 0 or (v == 0 and not allow_zero) for v in value):
            raise self.fail(key, "must be a list of two positive numbers", value)
        if ordered and value[0] > value[1]:
            raise self.fail(key, "must be [low, high] with low <= high", value)
        return (float(value[0]), float(value[1]))

    def rgb(self, key: str) -> RGB:
        return _rgb(self.get(key), lambda what, got: self.fail(key, what, got))

    def rgb_map(self, key: str) -> dict[str, RGB]:
        sub = self.sub(key)
        if not sub.data:
            raise self.fail(key, "must name at least one colour")
        return {name: sub.rgb(name) for name in sub.data}


def _rgb(value: Any, fail: Any) -> RGB:
    if not (
        isinstance(value, list)
        and len(value) == 3
        and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 255 for v in value)
    ):
        raise fail("must be an sRGB triple of integers 0..255", value)
    return (value[0], value[1], value[2])


def _parse(data: Any, where: str) -> Kit:
    root = _Reader(data, "", where)
    if not isinstance(data, dict):
        raise KitError(f"{where}: the kit must be a JSON object")
    if data.get("format", "bloxcam-kit") != "bloxcam-kit":
        raise root.fail("format", "must be 'bloxcam-kit'", data.get("format"))
    version = root.integer("version")
    if version != 1:
        raise root.fail("version", "is not supported by this bloxcam (supported: 1)", version)

    m = root.sub("markers")
    ids_r = m.sub("ids")
    ids = {corner: ids_r.integer(corner, minimum=0) for corner in MARKER_CORNERS}
    if len(set(ids.values())) != 4:
        raise m.fail("ids", "must be four different marker ids", ids)
    markers = MarkerSpec(m.text("dictionary"), m.number("size_mm"), m.number("quiet_zone_mm", positive=False), ids)

    c = root.sub("charuco")
    charuco = CharucoSpec(
        c.text("dictionary"), c.integer("squares_x", minimum=3), c.integer("squares_y", minimum=3),
        c.number("square_mm"), c.number("marker_mm"),
    )
    if charuco.marker_mm >= charuco.square_mm:
        raise c.fail("marker_mm", f"must be smaller than square_mm ({charuco.square_mm:g})", charuco.marker_mm)
    for r, spec in ((m, markers.dictionary), (c, charuco.dictionary)):
        if not spec.startswith("DICT_"):
            raise r.fail("dictionary", "must be an OpenCV ArUco dictionary name such as DICT_4X4_50", spec)
    if markers.dictionary == charuco.dictionary:
        raise c.fail("dictionary", "must differ from the board markers' dictionary", charuco.dictionary)

    cam = root.sub("camera")
    camera = CameraRange(
        cam.pair("height_mm", ordered=True), cam.pair("tilt_deg", ordered=True, allow_zero=True),
        cam.number("min_board_width_fraction", maximum=1.0),
    )
    if camera.tilt_deg[1] >= 80:
        raise cam.fail("tilt_deg", "must stay below 80 degrees", list(camera.tilt_deg))

    b = root.sub("blox")
    bl = b.sub("block")
    block = BlockSpec(
        bl.number("footprint_mm"), bl.number("height_mm"), bl.number("max_offset_mm", positive=False),
        bl.number("max_rotation_deg", positive=False), bl.integer("max_tower"),
    )
    ch = b.sub("chip")
    fg = b.sub("figure")
    blox = BloxKit(
        b.integer("spaces"), b.number("space_mm"), b.rgb_map("colors"), b.number("tower_mark_mm"), block,
        ChipSpec(ch.number("diameter_mm"), ch.number("thickness_mm"), ch.rgb("color")),
        FigureSpec(fg.number("base_mm"), fg.number("height_mm"), fg.number("top_fraction", maximum=1.0)),
        b.rgb_map("players"),
    )
    if block.footprint_mm + 2 * block.max_offset_mm > blox.space_mm:
        raise bl.fail("footprint_mm", f"plus twice max_offset_mm must fit in a {blox.space_mm:g} mm space",
                      block.footprint_mm)
    if blox.figure.base_mm > blox.space_mm:
        raise fg.fail("base_mm", f"must fit in a {blox.space_mm:g} mm space", blox.figure.base_mm)

    o = root.sub("bloxo")
    ocol = o.sub("colors")
    colors: dict[str, RGB] = {}
    shapes: dict[str, str] = {}
    for name in ocol.data:
        entry = ocol.sub(name)
        colors[name] = entry.rgb("rgb")
        shapes[name] = entry.text("shape")
    if not colors:
        raise o.fail("colors", "must name at least one colour")
    bloxo = BloxoKit(
        o.pair("play_area_mm"), o.number("card_mm"), o.number("quadrant_mm"), o.number("shape_mm"),
        o.number("max_offset_mm", positive=False), o.number("max_rotation_deg", positive=False),
        o.rgb("face"), colors, shapes,
    )
    if abs(2 * bloxo.quadrant_mm - bloxo.card_mm) > 1e-6:
        raise o.fail("quadrant_mm", f"must be half of card_mm ({bloxo.card_mm:g})", bloxo.quadrant_mm)
    if bloxo.shape_mm > bloxo.quadrant_mm:
        raise o.fail("shape_mm", "must fit in a quadrant", bloxo.shape_mm)

    k = root.sub("blockers")
    blockers = BlockersKit(
        k.integer("spaces"), k.number("space_mm"), k.number("grid_wall_mm"), k.number("rim_mm", positive=False),
        k.number("tile_mm"),
        k.number("tile_thickness_mm"), k.rgb("board"), k.rgb_map("colors"),
    )
    if blockers.tile_mm + blockers.grid_wall_mm > blockers.space_mm + 1e-6:
        raise k.fail("tile_mm", f"plus grid_wall_mm must fit in a {blockers.space_mm:g} mm space", blockers.tile_mm)

    u = root.sub("blockout")
    sizes_r = u.sub("sizes")
    sizes: dict[str, tuple[float, float, float]] = {}
    for name in sizes_r.data:
        dims = sizes_r.get(name)
        if not (isinstance(dims, list) and len(dims) == 3 and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in dims)):
            raise sizes_r.fail(name, "must be three positive sizes [x, y, z] in mm", dims)
        sizes[name] = (float(dims[0]), float(dims[1]), float(dims[2]))
    blockout = BlockoutKit(
        u.pair("play_area_mm"), u.number("base_mm"), u.number("base_height_mm"), sizes, u.rgb_map("colors"),
    )

    cd = root.sub("conditions")
    conditions = Conditions(cd.pair("color_temperature_k", ordered=True), cd.number("max_print_drift", maximum=1.0))

    bloxx = _parse_bloxx(root.sub("bloxx")) if "bloxx" in data else None

    return Kit(
        name=str(data.get("name", "kit")), version=version, markers=markers, charuco=charuco, camera=camera,
        blox=blox, bloxo=bloxo, blockers=blockers, blockout=blockout, conditions=conditions,
        source=where, raw=data, bloxx=bloxx,
    )


def _parse_bloxx(x: _Reader) -> BloxxKit:
    d = x.sub("die")
    dc = d.sub("colors")
    colors: dict[str, tuple[RGB, RGB]] = {}
    for name in dc.data:
        entry = dc.sub(name)
        colors[name] = (entry.rgb("body"), entry.rgb("ink"))
    if not colors:
        raise d.fail("colors", "must name at least one die")
    die = BloxxDieSpec(d.number("size_mm"), d.number("cell_mm"), d.number("cell_gap_mm", positive=False),
                       d.number("circle_mm"), d.number("max_tilt_deg", positive=False, maximum=15.0), colors)
    if die.cell_gap_mm >= die.cell_mm:
        raise d.fail("cell_gap_mm", f"must be smaller than cell_mm ({die.cell_mm:g})", die.cell_gap_mm)
    if die.circle_mm >= die.cell_mm - die.cell_gap_mm:
        raise d.fail("circle_mm", "must fit inside a cell's ink square", die.circle_mm)
    if 3 * die.cell_mm > die.size_mm:
        raise d.fail("cell_mm", f"three cells must fit on a {die.size_mm:g} mm face", die.cell_mm)
    sh = x.sub("sheet")
    sheet = BloxxSheetSpec(
        sh.pair("paper_mm"), sh.number("square_mm"), sh.pair("grid_origin_mm", allow_zero=True), sh.number("line_mm"),
        sh.number("border_mm"), sh.rgb("ink"), sh.number("number_mm"), sh.rgb_map("row_colors"),
    )
    # R-BLOXX-1: the grid is 7 x 10 squares; it must fit on the paper.
    gx, gy = sheet.grid_origin_mm
    if gx + 7 * sheet.square_mm > sheet.paper_mm[0] or gy + 10 * sheet.square_mm > sheet.paper_mm[1]:
        raise sh.fail("square_mm", "puts the 7 x 10 grid off the paper", sheet.square_mm)
    if sheet.number_mm >= sheet.square_mm:
        raise sh.fail("number_mm", "must be smaller than square_mm", sheet.number_mm)
    return BloxxKit(x.pair("rolling_area_mm"), die, sheet)


def load_kit(path: str | Path | None = None) -> Kit:
    """Load and validate a kit: the bundled nominal kit, or the user's file ``path``."""
    if path is None:
        text = resources.files("calibration").joinpath("kit.json").read_text("utf-8")
        where = "bundled kit.json"
    else:
        try:
            text = Path(path).read_text("utf-8")
        except FileNotFoundError as exc:
            raise KitError(f"kit file not found: {path}") from exc
        except OSError as exc:
            raise KitError(f"cannot read kit file {path}: {exc.strerror}") from exc
        where = str(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise KitError(f"{where} is not valid JSON: {exc}") from exc
    return _parse(data, where)


def kit_from_dict(data: dict[str, Any], where: str = "kit") -> Kit:
    """Validate a kit held in memory (e.g. embedded in a calibration file)."""
    return _parse(data, where)


def aruco_dictionary(name: str) -> Any:
    """The OpenCV predefined dictionary called ``name`` (``DICT_4X4_50``)."""
    import cv2

    code = getattr(cv2.aruco, name, None)
    if not isinstance(code, int):
        raise KitError(f"unknown ArUco dictionary {name!r}")
    return cv2.aruco.getPredefinedDictionary(code)
