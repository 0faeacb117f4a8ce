"""The six Blox actions as immutable values.

Every action that costs cards carries ``cards`` (the regular cards discarded, by colour)
and ``joker`` (the colour the player's Joker stood for, or None; R-BLOX-9). In table
mode these are the cards the action *implies*, for the table to check the discards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.blox.board import Entrance, Pos


def _pos_json(p: Pos) -> list[int]:
    return [p[0], p[1]]


def _pos(v: Any) -> Pos:
    if not (isinstance(v, (list, tuple)) and len(v) == 2 and all(isinstance(x, int) for x in v)):
        raise ValueError(f"not a board position: {v!r}")
    return (v[0], v[1])


@dataclass(frozen=True)
class _Paid:
    cards: tuple[str, ...]
    joker: str | None

    def _paid_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"cards": list(self.cards)}
        if self.joker is not None:
            out["joker"] = self.joker
        return out

    @property
    def card_count(self) -> int:
        """Cards used, the Joker included (knock-off points count it, R-BLOX-8)."""
        return len(self.cards) + (self.joker is not None)


@dataclass(frozen=True)
class Place(_Paid):
    """Enter a figure at ``entrance`` and walk to ``to``, the first space of the card's colour."""

    entrance: Entrance
    to: Pos

    type = "place"

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "entrance": str(self.entrance), "to": _pos_json(self.to), **self._paid_json()}


@dataclass(frozen=True)
class Move(_Paid):
    """Move the figure on ``frm`` in a straight line to ``to``, the first space of the card's colour."""

    frm: Pos
    to: Pos

    type = "move"

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "from": _pos_json(self.frm), "to": _pos_json(self.to), **self._paid_json()}


@dataclass(frozen=True)
class Destroy(_Paid):
    """The figure on ``frm`` destroys the tower on ``to`` and moves there (R-BLOX-3)."""

    frm: Pos
    to: Pos

    type = "destroy"

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "from": _pos_json(self.frm), "to": _pos_json(self.to), **self._paid_json()}


@dataclass(frozen=True)
class Build(_Paid):
    """Replace the player's figure on ``at`` by a tower of ``blocks`` (bottom to top, R-BLOX-6)."""

    at: Pos
    blocks: tuple[str, ...]

    type = "build"

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "at": _pos_json(self.at), "blocks": list(self.blocks), **self._paid_json()}


@dataclass(frozen=True)
class Knock(_Paid):
    """The figure on ``frm`` knocks off the figure on ``to`` and takes its space (R-BLOX-8)."""

    frm: Pos
    to: Pos

    type = "knock"

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "from": _pos_json(self.frm), "to": _pos_json(self.to), **self._paid_json()}


@dataclass(frozen=True)
class Exchange:
    """Discard 1 to 5 cards and draw as many; optionally turn the Joker face up (R-BLOX-9)."""

    cards: tuple[str, ...]
    reactivate_joker: bool = False

    type = "exchange"
    joker = None

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "cards": list(self.cards), "reactivate_joker": self.reactivate_joker}


Action = Place | Move | Destroy | Build | Knock | Exchange
BOARD_ACTIONS = (Place, Move, Destroy, Build, Knock)


def action_from_json(data: dict[str, Any]) -> Action:
    """Parse an action from its JSON form, raising ValueError with the reason."""
    if not isinstance(data, dict):
        raise ValueError("an action must be a JSON object")
    kind = data.get("type")
    cards = tuple(data.get("cards", ()))
    if not all(isinstance(c, str) for c in cards):
        raise ValueError("cards must be colour names")
    joker = data.get("joker")
    try:
        if kind == "place":
            return Place(cards, joker, Entrance.parse(str(data["entrance"])), _pos(data["to"]))
        if kind == "move":
            return Move(cards, joker, _pos(data["from"]), _pos(data["to"]))
        if kind == "destroy":
            return Destroy(cards, joker, _pos(data["from"]), _pos(data["to"]))
        if kind == "build":
            return Build(cards, joker, _pos(data["at"]), tuple(data["blocks"]))
        if kind == "knock":
            return Knock(cards, joker, _pos(data["from"]), _pos(data["to"]))
        if kind == "exchange":
            return Exchange(cards, bool(data.get("reactivate_joker", False)))
    except KeyError as exc:
        raise ValueError(f"{kind} action is missing {exc.args[0]!r}") from exc
    raise ValueError(f"unknown action type {kind!r}")
