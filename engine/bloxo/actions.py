"""Bloxo actions: place a card, pass, redraw the start card."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union


@dataclass(frozen=True)
class Place:
    """Lay ``card`` at card-grid position ``at`` turned ``rotation`` clockwise quarter
    turns (R-BLOXO-2, R-BLOXO-3). The player then draws if the pile has cards."""

    card: str
    at: tuple[int, int]
    rotation: int = 0

    def __post_init__(self) -> None:
        # Accept [x, y] from JSON-minded callers; a frozen, hashable action needs a tuple.
        if isinstance(self.at, list):
            object.__setattr__(self, "at", tuple(self.at))

    def to_json(self) -> dict[str, Any]:
        return {"type": "place", "card": self.card, "at": list(self.at), "rotation": self.rotation}


@dataclass(frozen=True)
class Pass:
    """Put ``card`` from the hand out of the game, draw, lose the pass penalty (R-BLOXO-5).

    In table mode hands are unknown: ``card`` is None, and ``forced`` is the table's
    word that the player could not place (it drives the R-BLOXO-6 full-round end).
    With full information the engine works ``forced`` out itself and ``forced`` must
    be left None.
    """

    card: str | None = None
    forced: bool | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "pass"}
        if self.card is not None:
            out["card"] = self.card
        if self.forced is not None:
            out["forced"] = self.forced
        return out


@dataclass(frozen=True)
class Redraw:
    """Return a one-colour start card to the deck and lay a new one (R-BLOXO-7).

    With full information the new card is the top of the draw pile (``card`` may name
    it, or be None) and the returned card goes to the bottom of the pile. In table mode
    ``card`` is the card now seen at ``(0, 0)``.
    """

    card: str | None = None
    rotation: int = 0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "redraw", "rotation": self.rotation}
        if self.card is not None:
            out["card"] = self.card
        return out


Action = Union[Place, Pass, Redraw]


def action_from_json(data: dict[str, Any]) -> Action:
    """Rebuild an action from :meth:`to_json` output (ValueError when malformed)."""
    if not isinstance(data, dict):
        raise ValueError(f"an action must be a JSON object, got {data!r}")
    kind = data.get("type")
    if kind == "place":
        at = data.get("at")
        if not isinstance(at, (list, tuple)) or len(at) != 2:
            raise ValueError(f"place action needs 'at' as [x, y], got {at!r}")
        return Place(str(data.get("card")), (at[0], at[1]), data.get("rotation", 0))
    if kind == "pass":
        return Pass(data.get("card"), data.get("forced"))
    if kind == "redraw":
        return Redraw(data.get("card"), data.get("rotation", 0))
    raise ValueError(f"unknown Bloxo action type {kind!r}")
