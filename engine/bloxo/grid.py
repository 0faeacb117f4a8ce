"""The card grid and the quadrant grid: adjacency, edge matching, blocks and scoring.

Card positions are integer ``(x, y)``: x to the right, y toward the near edge, the start
card at ``(0, 0)`` (R-BLOXO-2). Each card covers four cells of a grid twice as fine
(R-BLOXO-4): the card at ``(x, y)`` has NW at ``(2x, 2y)``, NE at ``(2x+1, 2y)``, SE at
``(2x+1, 2y+1)`` and SW at ``(2x, 2y+1)``.

Every function here takes ``looks``: a mapping from card position to the quadrant colours
seen there (NW, NE, SE, SW), so it serves full-information and table mode alike.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from engine.bloxo.edition import NE, NW, QUADRANT_NAMES, SE, SW, Colours

Pos = tuple[int, int]
Looks = Mapping[Pos, Colours]

# (side name, offset to the neighbour, ((my quadrant, its quadrant) for both touching pairs))
SIDES: tuple[tuple[str, Pos, tuple[tuple[int, int], tuple[int, int]]], ...] = (
    ("north", (0, -1), ((NW, SW), (NE, SE))),
    ("east", (1, 0), ((NE, NW), (SE, SW))),
    ("south", (0, 1), ((SW, NW), (SE, NE))),
    ("west", (-1, 0), ((NW, NE), (SW, SE))),
)

_CELL_OFFSET = {NW: (0, 0), NE: (1, 0), SE: (1, 1), SW: (0, 1)}
_QUADRANT_AT = {v: k for k, v in _CELL_OFFSET.items()}


@dataclass(frozen=True)
class EdgeConflict:
    """One pair of touching quadrants with different colours (breaks R-BLOXO-3)."""

    side: str
    neighbour: Pos
    mine: int
    theirs: int
    my_colour: str
    their_colour: str

    def sentence(self) -> str:
        return (
            f"on its {self.side} side its {QUADRANT_NAMES[self.mine]} quadrant ({self.my_colour}) "
            f"touches the {QUADRANT_NAMES[self.theirs]} quadrant ({self.their_colour}) of the card at "
            f"{list(self.neighbour)}"
        )


def neighbours(at: Pos) -> Iterator[Pos]:
    x, y = at
    for _, (dx, dy), _ in SIDES:
        yield (x + dx, y + dy)


def touches(looks: Looks, at: Pos) -> bool:
    """Whether ``at`` is orthogonally next to at least one card (R-BLOXO-3)."""
    return any(n in looks for n in neighbours(at))


def edge_conflicts(looks: Looks, at: Pos, seen: Colours) -> list[EdgeConflict]:
    """Every touching quadrant pair whose colours differ if ``seen`` is laid at ``at``."""
    x, y = at
    out = []
    for side, (dx, dy), pairs in SIDES:
        other = looks.get((x + dx, y + dy))
        if other is None:
            continue
        for mine, theirs in pairs:
            if seen[mine] != other[theirs]:
                out.append(EdgeConflict(side, (x + dx, y + dy), mine, theirs, seen[mine], other[theirs]))
    return out


def requirements(looks: Looks, at: Pos) -> tuple[tuple[int, str], ...]:
    """The colour each quadrant of a card laid at ``at`` must have to match its neighbours."""
    x, y = at
    req = []
    for _, (dx, dy), pairs in SIDES:
        other = looks.get((x + dx, y + dy))
        if other is not None:
            for mine, theirs in pairs:
                req.append((mine, other[theirs]))
    return tuple(req)


def frontier(looks: Looks) -> list[Pos]:
    """Empty positions next to at least one card, sorted (y, then x) for determinism."""
    out = {n for p in looks for n in neighbours(p) if n not in looks}
    return sorted(out, key=lambda p: (p[1], p[0]))


def card_cells(at: Pos) -> tuple[Pos, Pos, Pos, Pos]:
    """The quadrant-grid cells of the card at ``at``, in quadrant order NW, NE, SE, SW."""
    x, y = at
    return tuple((2 * x + _CELL_OFFSET[q][0], 2 * y + _CELL_OFFSET[q][1]) for q in range(4))  # type: ignore[return-value]


def cell_colour(looks: Looks, cell: Pos) -> str | None:
    """The colour of a quadrant-grid cell, or None where there is no card."""
    fx, fy = cell
    card = looks.get((fx // 2, fy // 2))
    if card is None:
        return None
    return card[_QUADRANT_AT[(fx % 2, fy % 2)]]


def block_of(looks: Looks, start: Pos) -> set[Pos]:
    """The 4-connected one-colour block of quadrant cells containing ``start``."""
    colour = cell_colour(looks, start)
    if colour is None:
        return set()
    block = {start}
    todo = [start]
    while todo:
        fx, fy = todo.pop()
        for n in ((fx + 1, fy), (fx - 1, fy), (fx, fy + 1), (fx, fy - 1)):
            if n not in block and cell_colour(looks, n) == colour:
                block.add(n)
                todo.append(n)
    return block


def placement_points(looks: Looks, at: Pos) -> int:
    """Points for the card already laid at ``at`` in ``looks`` (R-BLOXO-4).

    The sum of the sizes of every block that contains at least one quadrant of the new
    card and at least one quadrant of another card; a group lying wholly inside the new
    card scores nothing. Each block counts once however many of the new card's
    quadrants it holds.
    """
    own = set(card_cells(at))
    counted: set[Pos] = set()
    total = 0
    for cell in card_cells(at):
        if cell in counted:
            continue
        block = block_of(looks, cell)
        counted |= block
        if block - own:
            total += len(block)
    return total
