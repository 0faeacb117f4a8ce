"""Blockers! actions: place on an empty space, capture, forced pass.

Spaces are board indices (``row * 9 + column``, row 0 = letter A at the far edge); JSON
uses the printed name (``"E5"``). A ``face`` of ``None`` is a table-mode tile whose face the
camera could not read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from engine.blockers.board import Tile
from engine.blockers.edition import BlockersEdition


@dataclass(frozen=True)
class Place:
    """Put the rack tile ``color``/``face`` on the empty space ``space`` (R-BLOCKERS-2)."""

    color: str
    face: str | None
    space: int

    @property
    def tile(self) -> Tile:
        return Tile(self.color, self.face)

    def to_json(self, edition: BlockersEdition | None = None) -> dict[str, Any]:
        return {"type": "place", "color": self.color, "face": self.face, "space": _name(self.space, edition)}


@dataclass(frozen=True)
class Capture:
    """Put the rack tile ``color``/``face`` on ``space``, taking ``captured`` (R-BLOCKERS-3)."""

    color: str
    face: str | None
    space: int
    captured: Tile

    @property
    def tile(self) -> Tile:
        return Tile(self.color, self.face)

    def to_json(self, edition: BlockersEdition | None = None) -> dict[str, Any]:
        return {
            "type": "capture",
            "color": self.color,
            "face": self.face,
            "space": _name(self.space, edition),
            "captured": self.captured.to_json(),
        }


@dataclass(frozen=True)
class ForcedPass:
    """R-BLOCKERS-4: the player can neither place nor capture, shows the rack and passes.

    ``revealed`` is the rack that was shown. With a known rack it may be left empty (the
    engine knows it); in table mode, giving it lets the engine check the pass.
    """

    revealed: tuple[Tile, ...] = ()

    def to_json(self, edition: BlockersEdition | None = None) -> dict[str, Any]:
        return {"type": "pass", "revealed": [t.to_json() for t in self.revealed]}


Action = Union[Place, Capture, ForcedPass]


def _name(space: int, edition: BlockersEdition | None) -> str | int:
    if edition is None:
        r, c = divmod(space, 9)
        return f"{chr(ord('A') + r)}{c + 1}"
    return edition.space_name(space)


def action_from_json(data: dict[str, Any], edition: BlockersEdition) -> Action:
    """Parse an action written by ``to_json``; ``ValueError`` if it is malformed."""
    kind = data.get("type")
    if kind == "pass":
        return ForcedPass(tuple(Tile.from_json(t) for t in data.get("revealed", [])))
    if kind not in ("place", "capture"):
        raise ValueError(f"unknown blockers action type {kind!r}")
    space = data.get("space")
    index = edition.space_index(space) if isinstance(space, str) else int(space)
    if kind == "place":
        return Place(data["color"], data.get("face"), index)
    return Capture(data["color"], data.get("face"), index, Tile.from_json(data["captured"]))
