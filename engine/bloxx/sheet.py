"""One player's Bloxx! sheet: every square empty, cross, circle or gap.

Stored as three bit masks over :class:`~engine.bloxx.edition.Geometry`, so placement
tests are a few integer operations. The text form is the ``bloxx`` observation of
``observation.md``: rows top to bottom, ``.`` empty, ``x`` cross, ``o`` circle, ``#`` gap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.bloxx.edition import Cell, Geometry

EMPTY, CROSS, CIRCLE, GAP = ".", "x", "o", "#"
SYMBOLS = EMPTY + CROSS + CIRCLE + GAP


class SheetFormatError(ValueError):
    """Sheet text that is not a ``columns`` x ``rows`` grid of ``.xo#``."""


@dataclass(frozen=True)
class Sheet:
    geometry: Geometry
    crosses: int = 0
    circles: int = 0
    gaps: int = 0

    # -- derived masks -------------------------------------------------------------------

    @property
    def drawn(self) -> int:
        """Squares of shapes drawn so far (crosses and circles; gaps are not drawn)."""
        return self.crosses | self.circles

    @property
    def filled(self) -> int:
        return self.crosses | self.circles | self.gaps

    @property
    def empty(self) -> int:
        return self.geometry.full & ~self.filled

    def neighbours(self, mask: int) -> int:
        """Squares sharing a side with a square of ``mask``."""
        g = self.geometry
        w = g.columns
        return (
            (mask >> w)
            | ((mask << w) & g.full)
            | ((mask & ~g.left) >> 1)
            | ((mask & ~g.right) << 1)
        )

    def below(self, mask: int) -> int:
        """Squares with a square of ``mask`` anywhere above them in their column."""
        g = self.geometry
        fill = (mask << g.columns) & g.full
        shift = g.columns
        while shift < g.columns * g.rows:
            fill |= (fill << shift) & g.full
            shift *= 2
        return fill

    # -- queries -------------------------------------------------------------------------

    def at(self, r: int, c: int) -> str:
        b = self.geometry.bit(r, c)
        if self.crosses & b:
            return CROSS
        if self.circles & b:
            return CIRCLE
        if self.gaps & b:
            return GAP
        return EMPTY

    def count(self, symbol: str) -> int:
        masks = {CROSS: self.crosses, CIRCLE: self.circles, GAP: self.gaps, EMPTY: self.empty}
        return masks[symbol].bit_count()

    def row_complete(self, r: int) -> bool:
        """Every square of row ``r`` is a cross or a circle (R-BLOXX-7)."""
        row = self.geometry.row_mask(r)
        return self.drawn & row == row

    def problems(self) -> list[str]:
        """Ways this sheet breaks R-BLOXX-4 (empty under a drawn square, gap under none)."""
        out = []
        under = self.below(self.drawn)
        g = self.geometry
        for r, c in g.cells_of(self.empty & under):
            out.append(f"square ({r}, {c}) is empty under a drawn square; it must be a gap")
        for r, c in g.cells_of(self.gaps & ~under):
            out.append(f"square ({r}, {c}) is a gap with no drawn square above it")
        return out

    # -- change --------------------------------------------------------------------------

    def with_shape(self, mask: int, circle_bit: int) -> Sheet:
        """The sheet after drawing ``mask``; ``circle_bit`` 0 draws the circle as a cross.

        Gaps are coloured at once (R-BLOXX-4): every empty square below a drawn square.
        """
        crosses = self.crosses | (mask & ~circle_bit)
        circles = self.circles | circle_bit
        filled = crosses | circles | self.gaps
        gaps = self.gaps | (self.below(crosses | circles) & ~filled)
        return Sheet(self.geometry, crosses, circles, gaps)

    # -- text ----------------------------------------------------------------------------

    def rows(self) -> list[str]:
        g = self.geometry
        return ["".join(self.at(r, c) for c in range(g.columns)) for r in range(g.rows)]

    def to_json(self) -> dict[str, Any]:
        """The ``bloxx`` observation state: ``{"sheet": [rows top to bottom]}``."""
        return {"sheet": self.rows()}

    @classmethod
    def from_rows(cls, geometry: Geometry, rows: Any) -> Sheet:
        """Parse rows top to bottom (or an observation ``{"sheet": rows}``)."""
        if isinstance(rows, dict):
            rows = rows.get("sheet")
        if not (isinstance(rows, list) and all(isinstance(s, str) for s in rows)):
            raise SheetFormatError("a sheet is a list of strings, one per row, top to bottom")
        if len(rows) != geometry.rows:
            raise SheetFormatError(f"a sheet has {geometry.rows} rows, got {len(rows)}")
        masks = {CROSS: 0, CIRCLE: 0, GAP: 0, EMPTY: 0}
        for r, line in enumerate(rows):
            if len(line) != geometry.columns:
                raise SheetFormatError(
                    f"sheet row {r} has {len(line)} squares, expected {geometry.columns}"
                )
            for c, ch in enumerate(line):
                if ch not in masks:
                    raise SheetFormatError(f"square ({r}, {c}) is {ch!r}; use one of {SYMBOLS!r}")
                masks[ch] |= geometry.bit(r, c)
        return cls(geometry, masks[CROSS], masks[CIRCLE], masks[GAP])

    def diff(self, other: Sheet) -> list[tuple[Cell, str, str]]:
        """Squares that differ: ``((r, c), symbol here, symbol in other)``."""
        g = self.geometry
        return [
            ((r, c), self.at(r, c), other.at(r, c))
            for r in range(g.rows)
            for c in range(g.columns)
            if self.at(r, c) != other.at(r, c)
        ]

    def __str__(self) -> str:
        return "\n".join(self.rows())
