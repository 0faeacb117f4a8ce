"""Block Out! actions (frozen dataclasses with ``to_json``).

Actions do not name the player: the state knows whose turn it is. To check that an
action comes from the right player, pass ``player=`` to
:meth:`engine.blockout.BlockOutState.apply_action`.

============== ======================================== ===============================
action         meaning                                  JSON
============== ======================================== ===============================
PlayBlock      play a block card and place ``block``    ``{"type": "play_block",
                                                        "card": "color:black",
                                                        "block": {...}}``
PlayPass       play a Pass card                         ``{"type": "pass"}``
PlayReverse    play a Reverse card                      ``{"type": "reverse"}``
Draw           draw until a card is playable            ``{"type": "draw"}``
               (R-BLOCKOUT-2; after a fall: until a
               block card is held, R-BLOCKOUT-4)
FinalBlock     advanced rule: place any free block      ``{"type": "final_block",
               after playing the last card               "block": {...}}``
               (R-BLOCKOUT-5)
Stood          the count ended with the stack standing  ``{"type": "stood"}``
Fell           the stack fell during the count          ``{"type": "fell"}``
               (R-BLOCKOUT-3)
============== ======================================== ===============================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from engine.blockout.edition import Block, Card


@dataclass(frozen=True)
class PlayBlock:
    card: Card
    block: Block

    def to_json(self) -> dict[str, Any]:
        return {"type": "play_block", "card": self.card.to_json(), "block": self.block.to_json()}

    def __str__(self) -> str:
        return f"play {self.card} placing {self.block}"


@dataclass(frozen=True)
class PlayPass:
    def to_json(self) -> dict[str, Any]:
        return {"type": "pass"}

    def __str__(self) -> str:
        return "pass"


@dataclass(frozen=True)
class PlayReverse:
    def to_json(self) -> dict[str, Any]:
        return {"type": "reverse"}

    def __str__(self) -> str:
        return "reverse"


@dataclass(frozen=True)
class Draw:
    def to_json(self) -> dict[str, Any]:
        return {"type": "draw"}

    def __str__(self) -> str:
        return "draw"


@dataclass(frozen=True)
class FinalBlock:
    block: Block

    def to_json(self) -> dict[str, Any]:
        return {"type": "final_block", "block": self.block.to_json()}

    def __str__(self) -> str:
        return f"final placement of {self.block}"


@dataclass(frozen=True)
class Stood:
    def to_json(self) -> dict[str, Any]:
        return {"type": "stood"}

    def __str__(self) -> str:
        return "stood"


@dataclass(frozen=True)
class Fell:
    def to_json(self) -> dict[str, Any]:
        return {"type": "fell"}

    def __str__(self) -> str:
        return "fell"


Action = Union[PlayBlock, PlayPass, PlayReverse, Draw, FinalBlock, Stood, Fell]

_SIMPLE = {"pass": PlayPass, "reverse": PlayReverse, "draw": Draw, "stood": Stood, "fell": Fell}


def action_from_json(data: Any) -> Action:
    """Parse the JSON form of an action (inverse of ``to_json``)."""
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise ValueError(f"an action is an object with a 'type', got {data!r}")
    kind = data["type"]
    if kind in _SIMPLE:
        return _SIMPLE[kind]()
    if kind == "play_block":
        return PlayBlock(Card.from_json(data.get("card")), Block.from_json(data.get("block")))
    if kind == "final_block":
        return FinalBlock(Block.from_json(data.get("block")))
    raise ValueError(f"unknown action type {kind!r}")
