"""Bloxx! edition data: the sheet and the two dice (R-BLOXX-1).

The rulebook prints neither the sheet's numbers, nor which rows are coloured, nor the
dice faces, so all of it is data (``engine/editions/bloxx.json``), validated here.

Coordinates are ``(row, col)`` with row 0 at the top of the sheet (the far side of a
sheet lying in front of its player) and column 0 at the left, matching the ``bloxx``
observation (rows top to bottom). A die face is a list of cells in the same frame, as
printed on the die, plus the one cell that carries the circle.

Orientations (R-BLOXX-2) are numbered 0..7: orientation ``k`` first mirrors the
printed face left-to-right when ``k >= 4``, then turns it ``k % 4`` quarter turns
clockwise, then shifts it so its top-most row and left-most column are 0.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from engine.common import load_edition_data, require

Cell = tuple[int, int]

ORIENTATIONS = 8
# R-BLOXX-1 fixes the sheet's size and the number of rows, dice and faces.
SHEET_COLUMNS = 7
SHEET_ROWS = 10
COLOURED_ROWS = 4
DICE = 2
FACES_PER_DIE = 6
NUMBER_VALUES = (2, 3, 4)
# A printed face must be a real polyomino small enough to be read from a die.
FACE_SQUARES_MIN = 1
FACE_SQUARES_MAX = 6

_NAME = re.compile(r"^[a-z0-9][a-z0-9 _-]*$")


def orient_cell(cell: Cell, orientation: int) -> Cell:
    """``cell`` after mirroring (orientation >= 4) and ``orientation % 4`` clockwise turns."""
    r, c = cell
    if orientation >= 4:
        c = -c
    for _ in range(orientation % 4):
        # A clockwise quarter turn in (row down, col right) coordinates.
        r, c = c, -r
    return r, c


def orient(cells: Iterable[Cell], circle: Cell, orientation: int) -> tuple[tuple[Cell, ...], Cell]:
    """The face's cells (sorted) and circle cell in ``orientation``, normalised to (0, 0)."""
    moved = [orient_cell(c, orientation) for c in cells]
    mark = orient_cell(circle, orientation)
    r0 = min(r for r, _ in moved)
    c0 = min(c for _, c in moved)
    return (
        tuple(sorted((r - r0, c - c0) for r, c in moved)),
        (mark[0] - r0, mark[1] - c0),
    )


def is_connected(cells: Iterable[Cell]) -> bool:
    """True when ``cells`` form one 4-connected group."""
    todo = set(cells)
    if not todo:
        return False
    stack = [todo.pop()]
    while stack:
        r, c = stack.pop()
        for n in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
            if n in todo:
                todo.remove(n)
                stack.append(n)
    return not todo


@dataclass(frozen=True)
class Face:
    """One die face: a polyomino as printed, with exactly one circle square."""

    name: str
    cells: tuple[Cell, ...]
    circle: Cell

    @property
    def size(self) -> int:
        return len(self.cells)

    def oriented(self, orientation: int) -> tuple[tuple[Cell, ...], Cell]:
        """Cells and circle of this face in ``orientation`` (0..7), top-left at (0, 0)."""
        return orient(self.cells, self.circle, orientation)

    def distinct_orientations(self) -> list[tuple[int, tuple[Cell, ...], Cell]]:
        """Orientations that differ in covered squares or circle square (R-BLOXX-2).

        A symmetric face has fewer than eight; the lowest orientation number of each
        class stands for it.
        """
        seen: set[tuple[tuple[Cell, ...], Cell]] = set()
        out = []
        for k in range(ORIENTATIONS):
            shape = self.oriented(k)
            if shape not in seen:
                seen.add(shape)
                out.append((k, *shape))
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "cells": [list(c) for c in self.cells],
            "circle": list(self.circle),
        }


@dataclass(frozen=True)
class Die:
    name: str
    faces: tuple[Face, ...]

    def face(self, name: str) -> Face:
        for f in self.faces:
            if f.name == name:
                return f
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "faces": [f.to_json() for f in self.faces]}


@dataclass(frozen=True)
class Geometry:
    """Bit layout of a sheet: square (r, c) is bit ``r * columns + c``."""

    columns: int
    rows: int

    def bit(self, r: int, c: int) -> int:
        return 1 << (r * self.columns + c)

    # cached_property stores into the instance dict, which a frozen dataclass allows.
    @cached_property
    def full(self) -> int:
        return (1 << (self.columns * self.rows)) - 1

    @cached_property
    def bottom(self) -> int:
        return self.row_mask(self.rows - 1)

    @cached_property
    def left(self) -> int:
        return self.column_mask(0)

    @cached_property
    def right(self) -> int:
        return self.column_mask(self.columns - 1)

    def row_mask(self, r: int) -> int:
        return sum(self.bit(r, c) for c in range(self.columns))

    def column_mask(self, c: int) -> int:
        return sum(self.bit(r, c) for r in range(self.rows))

    def mask_of(self, cells: Iterable[Cell]) -> int:
        return sum(self.bit(r, c) for r, c in cells)

    def cells_of(self, mask: int) -> list[Cell]:
        out = []
        while mask:
            low = mask & -mask
            i = low.bit_length() - 1
            out.append(divmod(i, self.columns))
            mask ^= low
        return out


@dataclass(frozen=True)
class Placement:
    """A face in one orientation at one position on the sheet.

    ``row``/``col`` are the sheet square of the oriented shape's top-left corner;
    ``mask`` covers its squares, ``circle_bit`` is the circle square's bit.
    """

    orientation: int
    row: int
    col: int
    cells: tuple[Cell, ...]
    circle: Cell
    mask: int
    circle_bit: int


@dataclass(frozen=True)
class BloxxEdition:
    """A validated Bloxx! edition (R-BLOXX-1). Build it with :meth:`from_json`."""

    name: str
    columns: int
    rows: int
    numbers: tuple[tuple[int, ...], ...]  # [row][col], 0 where the square has no number
    coloured_rows: tuple[tuple[str, int], ...]  # (colour, row) top to bottom of the file
    dice: tuple[Die, ...]
    note: str = ""
    # Every distinct placement of every face anywhere on an empty sheet, by face name.
    _placements: dict[str, tuple[Placement, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        geo = self.geometry
        table: dict[str, tuple[Placement, ...]] = {}
        for die in self.dice:
            for face in die.faces:
                found = []
                for k, cells, circle in face.distinct_orientations():
                    height = max(r for r, _ in cells) + 1
                    width = max(c for _, c in cells) + 1
                    for r0 in range(self.rows - height + 1):
                        for c0 in range(self.columns - width + 1):
                            placed = tuple((r + r0, c + c0) for r, c in cells)
                            mark = (circle[0] + r0, circle[1] + c0)
                            found.append(
                                Placement(
                                    k, r0, c0, placed, mark, geo.mask_of(placed), geo.bit(*mark)
                                )
                            )
                table[face.name] = tuple(found)
        self._placements.clear()
        self._placements.update(table)

    # -- lookups -------------------------------------------------------------------------

    @cached_property
    def geometry(self) -> Geometry:
        return Geometry(self.columns, self.rows)

    def die_index(self, name: str) -> int:
        for i, die in enumerate(self.dice):
            if die.name == name:
                return i
        raise KeyError(name)

    def face(self, name: str) -> Face:
        for die in self.dice:
            for f in die.faces:
                if f.name == name:
                    return f
        raise KeyError(name)

    def placements(self, face: str) -> tuple[Placement, ...]:
        """Every distinct placement of ``face`` inside an empty sheet (R-BLOXX-2)."""
        return self._placements[face]

    def value(self, r: int, c: int) -> int:
        return self.numbers[r][c]

    # -- JSON ----------------------------------------------------------------------------

    @classmethod
    def from_json(cls, data: dict[str, Any], where: str = "edition") -> BloxxEdition:
        """Validate ``data`` (the format of ``engine/editions/bloxx.json``) into an edition."""
        require(isinstance(data, dict), f"{where} must be a JSON object")
        require(data.get("game") == "bloxx", f"{where}: 'game' must be \"bloxx\"")
        name = data.get("edition")
        require(isinstance(name, str) and bool(name), f"{where}: 'edition' must name the edition")
        sheet = data.get("sheet")
        require(isinstance(sheet, dict), f"{where}: 'sheet' must be an object")
        columns, rows = sheet.get("columns"), sheet.get("rows")
        require(
            columns == SHEET_COLUMNS and rows == SHEET_ROWS,
            f"{where}: the sheet must be {SHEET_COLUMNS} columns x {SHEET_ROWS} rows "
            f"(R-BLOXX-1), got {columns} x {rows}",
        )
        numbers = _parse_numbers(sheet.get("numbers"), columns, rows, where)
        coloured = _parse_coloured_rows(sheet.get("coloured_rows"), rows, where)
        dice_data = data.get("dice")
        require(
            isinstance(dice_data, list) and len(dice_data) == DICE,
            f"{where}: 'dice' must list exactly {DICE} dice (R-BLOXX-1)",
        )
        dice = tuple(_parse_die(d, i, columns, rows, where) for i, d in enumerate(dice_data))
        require(
            len({d.name for d in dice}) == DICE, f"{where}: the two dice need different names"
        )
        face_names = [f.name for d in dice for f in d.faces]
        dup = sorted({n for n in face_names if face_names.count(n) > 1})
        require(not dup, f"{where}: face names must be unique across both dice; repeated: {dup}")
        note = data.get("note", "")
        require(isinstance(note, str), f"{where}: 'note' must be a string")
        return cls(name, columns, rows, numbers, coloured, dice, note)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"game": "bloxx", "edition": self.name}
        if self.note:
            out["note"] = self.note
        out["sheet"] = {
            "columns": self.columns,
            "rows": self.rows,
            "numbers": ["".join(str(v) if v else "." for v in row) for row in self.numbers],
            "coloured_rows": [{"row": r, "colour": c} for c, r in self.coloured_rows],
        }
        out["dice"] = [d.to_json() for d in self.dice]
        return out


def _parse_numbers(raw: Any, columns: int, rows: int, where: str) -> tuple[tuple[int, ...], ...]:
    require(
        isinstance(raw, list) and len(raw) == rows and all(isinstance(s, str) for s in raw),
        f"{where}: 'numbers' must be {rows} strings, one per row, top to bottom",
    )
    out = []
    for r, line in enumerate(raw):
        require(len(line) == columns, f"{where}: numbers row {r} must have {columns} characters")
        row = []
        for c, ch in enumerate(line):
            if ch == ".":
                row.append(0)
                continue
            require(
                ch.isdigit() and int(ch) in NUMBER_VALUES,
                f"{where}: square ({r}, {c}) holds {ch!r}; use '.' or a number "
                f"{NUMBER_VALUES[0]}..{NUMBER_VALUES[-1]} (R-BLOXX-1)",
            )
            row.append(int(ch))
        out.append(tuple(row))
    return tuple(out)


def _parse_coloured_rows(raw: Any, rows: int, where: str) -> tuple[tuple[str, int], ...]:
    require(
        isinstance(raw, list) and len(raw) == COLOURED_ROWS,
        f"{where}: 'coloured_rows' must list exactly {COLOURED_ROWS} rows (R-BLOXX-1)",
    )
    out = []
    for item in raw:
        require(
            isinstance(item, dict) and isinstance(item.get("row"), int)
            and not isinstance(item.get("row"), bool),
            f"{where}: each coloured row needs an integer 'row' and a 'colour' name",
        )
        row, colour = item["row"], item.get("colour")
        require(
            0 <= row < rows, f"{where}: coloured row {row} is outside the sheet (0..{rows - 1})"
        )
        require(
            isinstance(colour, str) and bool(_NAME.match(colour)),
            f"{where}: colour {colour!r} must be a lower-case name",
        )
        out.append((colour, row))
    require(len({r for _, r in out}) == COLOURED_ROWS, f"{where}: coloured rows must differ")
    require(len({c for c, _ in out}) == COLOURED_ROWS, f"{where}: row colours must differ")
    return tuple(out)


def _parse_cell(raw: Any, what: str) -> Cell:
    require(
        isinstance(raw, list) and len(raw) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in raw),
        f"{what} must be a [row, col] pair of non-negative integers, got {raw!r}",
    )
    return raw[0], raw[1]


def _parse_die(raw: Any, index: int, columns: int, rows: int, where: str) -> Die:
    require(isinstance(raw, dict), f"{where}: die {index} must be an object")
    name = raw.get("name")
    require(
        isinstance(name, str) and bool(_NAME.match(name)),
        f"{where}: die {index} needs a lower-case 'name'",
    )
    faces = raw.get("faces")
    require(
        isinstance(faces, list) and len(faces) == FACES_PER_DIE,
        f"{where}: die {name!r} must have exactly {FACES_PER_DIE} faces (R-BLOXX-1)",
    )
    return Die(
        name, tuple(_parse_face(f, name, j, columns, rows, where) for j, f in enumerate(faces))
    )


def _parse_face(raw: Any, die: str, index: int, columns: int, rows: int, where: str) -> Face:
    what = f"{where}: die {die!r} face {index}"
    require(isinstance(raw, dict), f"{what} must be an object")
    name = raw.get("name")
    require(isinstance(name, str) and bool(_NAME.match(name)), f"{what} needs a lower-case 'name'")
    what = f"{where}: face {name!r} of die {die!r}"
    cells_raw = raw.get("cells")
    require(isinstance(cells_raw, list), f"{what}: 'cells' must be a list of [row, col]")
    cells = [_parse_cell(c, f"{what}: a cell") for c in cells_raw]
    require(len(set(cells)) == len(cells), f"{what}: a cell is listed twice")
    require(
        FACE_SQUARES_MIN <= len(cells) <= FACE_SQUARES_MAX,
        f"{what}: has {len(cells)} squares; a face has "
        f"{FACE_SQUARES_MIN}..{FACE_SQUARES_MAX} (R-BLOXX-1)",
    )
    require(is_connected(cells), f"{what}: squares are not all joined side to side (R-BLOXX-1)")
    # The format has room for exactly one circle; a list of circles is the usual mistake.
    require("circles" not in raw, f"{what}: a face has exactly one circle; use 'circle'")
    circle = _parse_cell(raw.get("circle"), f"{what}: 'circle'")
    require(circle in cells, f"{what}: the circle {list(circle)} is not one of its squares")
    shape, mark = orient(cells, circle, 0)
    height = max(r for r, _ in shape) + 1
    width = max(c for _, c in shape) + 1
    require(
        min(height, width) <= min(rows, columns) and max(height, width) <= max(rows, columns),
        f"{what}: is {height} x {width} and fits the sheet in no orientation",
    )
    # Stored normalised, so a face written with an offset still reads as printed.
    return Face(name, shape, mark)


def load_edition(path: str | Path | None = None) -> BloxxEdition:
    """The bundled default edition, or the edition file at ``path``, validated."""
    where = str(path) if path is not None else "bundled edition bloxx.json"
    return BloxxEdition.from_json(load_edition_data("bloxx", path), where)
