"""Pieces on the Blox board and the straight-line geometry every action uses.

The board is a flat tuple of ``size * size`` cells in reading order; each cell is
``None``, a :class:`Figure` or a :class:`Tower` (one thing per space). Pieces are
immutable, so a state can share its board with its copies.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass

Pos = tuple[int, int]


@dataclass(frozen=True)
class Figure:
    """A figure on the board; ``color`` is its physical colour (a player's or neutral)."""

    color: str


@dataclass(frozen=True)
class Tower:
    """A tower: block colours bottom to top. Its point chip is worth its height."""

    blocks: tuple[str, ...]

    @property
    def height(self) -> int:
        return len(self.blocks)


Cell = Figure | Tower | None


class Side(str, enum.Enum):
    """A board side, R-BLOX-1: N is the far edge (marker 0 side)."""

    N = "N"
    E = "E"
    S = "S"
    W = "W"

    @property
    def step(self) -> Pos:
        """The direction a figure travels when moving *towards* this side."""
        return _STEPS[self]

    @property
    def opposite(self) -> Side:
        return _OPPOSITE[self]


_STEPS = {Side.N: (-1, 0), Side.E: (0, 1), Side.S: (1, 0), Side.W: (0, -1)}
_OPPOSITE = {Side.N: Side.S, Side.S: Side.N, Side.E: Side.W, Side.W: Side.E}


@dataclass(frozen=True, order=True)
class Entrance:
    """Where a figure enters the board (R-BLOX-1): a side and the row or column index."""

    side: Side
    index: int

    def __str__(self) -> str:
        return f"{self.side.value}{self.index}"

    @classmethod
    def parse(cls, text: str) -> Entrance:
        try:
            return cls(Side(text[0].upper()), int(text[1:]))
        except (ValueError, IndexError) as exc:
            raise ValueError(f"not an entrance: {text!r} (expected e.g. 'N3')") from exc

    def path(self, size: int) -> list[Pos]:
        """The spaces a figure entering here crosses, edge space first."""
        i = self.index
        if self.side is Side.N:
            return [(r, i) for r in range(size)]
        if self.side is Side.S:
            return [(r, i) for r in range(size - 1, -1, -1)]
        if self.side is Side.W:
            return [(i, c) for c in range(size)]
        return [(i, c) for c in range(size - 1, -1, -1)]


def all_entrances(size: int) -> list[Entrance]:
    return [Entrance(side, i) for side in Side for i in range(size)]


def ray(size: int, start: Pos, side: Side) -> list[Pos]:
    """Spaces from ``start`` (excluded) towards ``side``, nearest first."""
    dr, dc = side.step
    r, c = start[0] + dr, start[1] + dc
    out = []
    while 0 <= r < size and 0 <= c < size:
        out.append((r, c))
        r, c = r + dr, c + dc
    return out


def between(a: Pos, b: Pos) -> list[Pos] | None:
    """Spaces strictly between two spaces of one row or column; None if not in line."""
    if a == b:
        return None
    if a[0] == b[0]:
        step = 1 if b[1] > a[1] else -1
        return [(a[0], c) for c in range(a[1] + step, b[1], step)]
    if a[1] == b[1]:
        step = 1 if b[0] > a[0] else -1
        return [(r, a[1]) for r in range(a[0] + step, b[0], step)]
    return None


def neighbours(size: int, pos: Pos) -> Iterator[Pos]:
    r, c = pos
    for dr, dc in ((-1, 0), (0, 1), (1, 0), (0, -1)):
        rr, cc = r + dr, c + dc
        if 0 <= rr < size and 0 <= cc < size:
            yield rr, cc


def fmt_pos(pos: Pos) -> str:
    return f"[{pos[0]},{pos[1]}]"
