"""Blockers! edition data: the board, its symbol sections, the colours and the tiles.

The edition is data (``engine/editions/blockers.json``), validated on load. Spaces are
indexed ``row * 9 + column`` with row 0 the far edge (letter ``A``) and column 0 the
left edge (number ``1``), so a space's name is its row letter followed by its column
number (``"E5"``), as printed on the board (R-BLOCKERS-1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.common import EditionError, load_edition_data, require

#: R-BLOCKERS-1 fixes these; the edition file must agree.
BOARD_SIZE = 9
SECTION_SIZE = 3
TILES_PER_COLOR = 28
NEAR_LEFT_SYMBOL = "crescent"


@dataclass(frozen=True)
class BlockersEdition:
    """One edition of Blockers!.

    ``rows`` are the row letters from the far edge to the near edge, ``columns`` the column
    numbers from left to right, ``sections[i][j]`` the symbol of the 3 x 3 section in
    section-row ``i`` (far to near) and section-column ``j`` (left to right). A colour's
    tiles are one per row letter, one per column number, one per symbol and one wild tile
    (named ``wild``); ``faces`` lists them in that order.
    """

    name: str
    rows: tuple[str, ...]
    columns: tuple[str, ...]
    sections: tuple[tuple[str, ...], ...]
    colors: tuple[str, ...]
    wild: str = "wild"
    rack_size: int = 5
    faces: tuple[str, ...] = field(init=False, repr=False, compare=False)
    symbols: tuple[str, ...] = field(init=False, repr=False, compare=False)
    targets: dict[str, tuple[int, ...]] = field(init=False, repr=False, compare=False)
    neighbours: tuple[tuple[int, ...], ...] = field(init=False, repr=False, compare=False)
    space_symbol: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _validate(self)
        n = BOARD_SIZE
        symbols = tuple(s for row in self.sections for s in row)
        space_symbol = tuple(self.sections[r // SECTION_SIZE][c // SECTION_SIZE] for r in range(n) for c in range(n))
        targets: dict[str, tuple[int, ...]] = {}
        # R-BLOCKERS-2: letter -> its row, number -> its column, symbol -> its section,
        # wild -> anywhere.
        for r, letter in enumerate(self.rows):
            targets[letter] = tuple(r * n + c for c in range(n))
        for c, number in enumerate(self.columns):
            targets[number] = tuple(r * n + c for r in range(n))
        for symbol in symbols:
            targets[symbol] = tuple(i for i in range(n * n) if space_symbol[i] == symbol)
        targets[self.wild] = tuple(range(n * n))
        neighbours = []
        for i in range(n * n):
            r, c = divmod(i, n)
            adj = []
            for dr, dc in ((-1, 0), (0, -1), (0, 1), (1, 0)):
                rr, cc = r + dr, c + dc
                if 0 <= rr < n and 0 <= cc < n:
                    adj.append(rr * n + cc)
            neighbours.append(tuple(adj))
        object.__setattr__(self, "symbols", symbols)
        object.__setattr__(self, "faces", (*self.rows, *self.columns, *symbols, self.wild))
        object.__setattr__(self, "targets", targets)
        object.__setattr__(self, "neighbours", tuple(neighbours))
        object.__setattr__(self, "space_symbol", space_symbol)

    # -- geometry ---------------------------------------------------------------------

    @property
    def size(self) -> int:
        """Number of rows (and columns) of the board: 9."""
        return BOARD_SIZE

    @property
    def spaces(self) -> int:
        """Number of spaces on the board: 81."""
        return BOARD_SIZE * BOARD_SIZE

    def space_name(self, index: int) -> str:
        """``"E5"`` for a space index: row letter then column number."""
        r, c = divmod(index, BOARD_SIZE)
        return f"{self.rows[r]}{self.columns[c]}"

    def space_index(self, name: str) -> int:
        """The index of a space named like ``"E5"``; ``ValueError`` if there is none."""
        name = name.strip()
        for r, letter in enumerate(self.rows):
            if name.upper().startswith(letter.upper()):
                rest = name[len(letter):]
                if rest in self.columns:
                    return r * BOARD_SIZE + self.columns.index(rest)
        raise ValueError(f"no space named {name!r} on the board (use a row letter and a column number, e.g. 'E5')")

    def allows(self, face: str, index: int) -> bool:
        """Whether a tile with ``face`` may lie on space ``index`` (R-BLOCKERS-2)."""
        return index in self.targets.get(face, ())

    def faces_for_space(self, index: int) -> tuple[str, ...]:
        """The four faces that may lie on a space: its letter, number, symbol and wild."""
        r, c = divmod(index, BOARD_SIZE)
        return (self.rows[r], self.columns[c], self.space_symbol[index], self.wild)

    def face_kind(self, face: str) -> str:
        """``letter``, ``number``, ``symbol`` or ``wild``; ``ValueError`` for an unknown face."""
        if face in self.rows:
            return "letter"
        if face in self.columns:
            return "number"
        if face in self.symbols:
            return "symbol"
        if face == self.wild:
            return "wild"
        raise ValueError(f"unknown tile face {face!r}")

    # -- loading ----------------------------------------------------------------------

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> "BlockersEdition":
        """Build and validate an edition from parsed JSON data."""
        for key in ("rows", "columns", "sections", "colors"):
            require(key in data, f"blockers edition: missing the {key!r} list")
        require(data.get("game", "blockers") == "blockers", "blockers edition: 'game' must be 'blockers'")
        sections = data["sections"]
        require(
            isinstance(sections, list) and all(isinstance(row, list) for row in sections),
            "blockers edition: 'sections' must be a list of rows of symbol names",
        )
        if "tiles_per_color" in data:
            require(
                data["tiles_per_color"] == TILES_PER_COLOR,
                f"blockers edition: tiles_per_color must be {TILES_PER_COLOR} (R-BLOCKERS-1), "
                f"not {data['tiles_per_color']}",
            )
        return cls(
            name=str(data.get("name", "default")),
            rows=tuple(data["rows"]),
            columns=tuple(data["columns"]),
            sections=tuple(tuple(row) for row in sections),
            colors=tuple(data["colors"]),
            wild=data.get("wild", "wild"),
            rack_size=data.get("rack_size", 5),
        )


def _validate(e: BlockersEdition) -> None:
    n = BOARD_SIZE
    for what, labels in (("rows", e.rows), ("columns", e.columns)):
        require(len(labels) == n, f"blockers edition: {what} must list {n} labels (R-BLOCKERS-1), found {len(labels)}")
        require(all(isinstance(x, str) and x for x in labels), f"blockers edition: {what} must be non-empty strings")
        require(len(set(labels)) == n, f"blockers edition: {what} labels must be distinct")
    require(list(e.rows) == [chr(ord("A") + i) for i in range(n)], "blockers edition: rows must be A..I, far to near (R-BLOCKERS-1)")
    require(list(e.columns) == [str(i + 1) for i in range(n)], "blockers edition: columns must be 1..9, left to right (R-BLOCKERS-1)")
    k = n // SECTION_SIZE
    require(
        len(e.sections) == k and all(len(row) == k for row in e.sections),
        f"blockers edition: sections must be {k} rows of {k} symbol names (3 x 3 sections of 3 x 3 spaces)",
    )
    symbols = [s for row in e.sections for s in row]
    require(all(isinstance(s, str) and s for s in symbols), "blockers edition: symbol names must be non-empty strings")
    require(len(set(symbols)) == len(symbols), f"blockers edition: symbol names must be distinct, got {symbols}")
    require(
        e.sections[k - 1][0] == NEAR_LEFT_SYMBOL,
        f"blockers edition: the near-left section must be the {NEAR_LEFT_SYMBOL!r} (R-BLOCKERS-1), "
        f"found {e.sections[k - 1][0]!r}",
    )
    require(isinstance(e.wild, str) and e.wild, "blockers edition: the wild face needs a name")
    faces = [*e.rows, *e.columns, *symbols, e.wild]
    require(
        len(set(faces)) == len(faces),
        "blockers edition: tile faces (row letters, column numbers, symbols, wild) must all differ",
    )
    require(len(faces) == TILES_PER_COLOR, f"blockers edition: a colour must have {TILES_PER_COLOR} tiles, found {len(faces)}")
    require(len(e.colors) == 5, f"blockers edition: five colours (R-BLOCKERS-1), found {len(e.colors)}")
    require(all(isinstance(c, str) and c and c == c.lower() for c in e.colors), "blockers edition: colour names are lower-case strings")
    require(len(set(e.colors)) == len(e.colors), "blockers edition: colour names must be distinct")
    require(
        isinstance(e.rack_size, int) and 1 < e.rack_size < TILES_PER_COLOR,
        f"blockers edition: rack_size must be an integer between 2 and {TILES_PER_COLOR - 1}",
    )


def load_edition(path: str | Path | None = None) -> BlockersEdition:
    """Load the bundled default edition, or the edition file at ``path``."""
    data = load_edition_data("blockers", path)
    try:
        return BlockersEdition.from_data(data)
    except (TypeError, AttributeError) as exc:
        raise EditionError(f"blockers edition is malformed: {exc}") from exc
