"""Conventions shared by every rules engine.

Each game lives in its own module or package under ``engine/`` and follows the same
shape (after OpenSpiel's game/state split and python-chess's single state class):

* an *edition* dataclass loaded from a JSON data file (``engine/editions/<game>.json``)
  and validated on load, raising :class:`EditionError` with a sentence a user can act on;
* a *game* object (edition + players + options) that creates initial states;
* a *state* object with ``legal_actions()`` (a generator), ``apply_action(action)``,
  ``clone()``, ``undo()``, ``is_terminal()``, ``scores()``, ``to_json()`` /
  ``from_json()`` and a readable ``__str__``;
* frozen dataclass *actions* with ``to_json()``;
* *table mode*: a function that, from a state and a new stable observation, returns a
  :class:`Verdict` naming the action that explains the change.

Applying an illegal action raises :class:`IllegalAction`, naming the ruling it breaks
(``R-BLOX-3``) and leaving the state exactly as it was.

The engine is pure: no I/O besides reading its own edition files, no clocks, no global
random state (callers pass a :class:`random.Random`).
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any


class IllegalAction(Exception):
    """An action that breaks a rule. ``rule`` is a ruling id such as ``R-BLOX-3``."""

    def __init__(self, rule: str, why: str) -> None:
        super().__init__(f"{rule}: {why}")
        self.rule = rule
        self.why = why


class EditionError(ValueError):
    """An edition data file that is inconsistent or malformed."""


class VerdictKind(str, enum.Enum):
    """What table mode concluded about a change between two stable observations."""

    NO_CHANGE = "no_change"
    ACTION = "action"
    ILLEGAL = "illegal"
    UNRECOGNISED = "unrecognised"


@dataclass(frozen=True)
class Verdict:
    """The outcome of table-mode inference.

    ``action`` is the single action that explains the change (kind ``action``), or the
    action the players most plausibly attempted (kind ``illegal``, when one exists).
    ``implied_cards`` lists the cards the player must have discarded, so the table can
    check the discard pile (rulings: table mode). ``candidates`` are the actions that
    were considered when no single legal action explains the change.
    """

    kind: VerdictKind
    player: str | None = None
    action: Any = None
    rule: str | None = None
    why: str | None = None
    candidates: tuple[Any, ...] = ()
    implied_cards: tuple[str, ...] = ()
    points: int = 0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind.value}
        if self.player is not None:
            out["player"] = self.player
        if self.action is not None:
            out["action"] = self.action.to_json()
        if self.rule is not None:
            out["rule"] = self.rule
        if self.why is not None:
            out["why"] = self.why
        if self.candidates:
            out["candidates"] = [c.to_json() for c in self.candidates]
        if self.implied_cards:
            out["cards"] = list(self.implied_cards)
        if self.points:
            out["points"] = self.points
        return out


def load_edition_data(game: str, path: str | Path | None = None) -> dict[str, Any]:
    """Read an edition JSON file: the bundled default for ``game``, or ``path``."""
    try:
        if path is None:
            text = resources.files("engine.editions").joinpath(f"{game}.json").read_text("utf-8")
            where = f"bundled edition {game}.json"
        else:
            text = Path(path).read_text("utf-8")
            where = str(path)
    except FileNotFoundError as exc:
        raise EditionError(f"edition file not found: {exc.filename or path}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise EditionError(f"{where} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise EditionError(f"{where} must hold a JSON object")
    return data


def require(condition: bool, message: str) -> None:
    """Raise :class:`EditionError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise EditionError(message)
