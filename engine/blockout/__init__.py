"""Block Out! rules engine (rulebook ``block-out.txt``, rulings R-BLOCKOUT-1..6).

Quick use::

    import random
    from engine.blockout import BlockOutGame, PlayBlock, Card, Block

    game = BlockOutGame.create(3, advanced=False)          # seats p1..p3
    state = game.new_initial_state(random.Random(7))
    action = next(state.legal_actions())
    state.apply_action(action)                             # IllegalAction(rule, why) if illegal
    state.apply_stability_event({"kind": "stability", "event": "counting", "t": 1.0})
    state.apply_stability_event({"kind": "stability", "event": "stood", "t": 4.0})

The stack sensor interface is :meth:`BlockOutState.apply_stability_event`; see
:mod:`engine.blockout.stability` for the event shape.
"""

from engine.blockout.actions import (
    Action,
    Draw,
    Fell,
    FinalBlock,
    PlayBlock,
    PlayPass,
    PlayReverse,
    Stood,
    action_from_json,
)
from engine.blockout.edition import (
    ACTION_CARDS_TOTAL,
    BLOCK_CARDS_TOTAL,
    PASS,
    REVERSE,
    Block,
    BlockOutEdition,
    Card,
    CardKind,
    load_edition,
)
from engine.blockout.stability import COUNT_SECONDS, COUNT_TOLERANCE, StabilityEvent, StabilityKind
from engine.blockout.state import (
    FALL_DRAW,
    HAND_SIZE,
    MAX_PLAYERS,
    MIN_PLAYERS,
    BlockOutGame,
    BlockOutState,
    Count,
    Phase,
    WinReason,
)
from engine.common import EditionError, IllegalAction

__all__ = [
    "ACTION_CARDS_TOTAL",
    "BLOCK_CARDS_TOTAL",
    "COUNT_SECONDS",
    "COUNT_TOLERANCE",
    "FALL_DRAW",
    "HAND_SIZE",
    "MAX_PLAYERS",
    "MIN_PLAYERS",
    "PASS",
    "REVERSE",
    "Action",
    "Block",
    "BlockOutEdition",
    "BlockOutGame",
    "BlockOutState",
    "Card",
    "CardKind",
    "Count",
    "Draw",
    "EditionError",
    "Fell",
    "FinalBlock",
    "IllegalAction",
    "Phase",
    "PlayBlock",
    "PlayPass",
    "PlayReverse",
    "StabilityEvent",
    "StabilityKind",
    "Stood",
    "WinReason",
    "action_from_json",
    "load_edition",
]
