"""The Blox rules engine (``../shared/rulebooks/blox.txt`` and the R-BLOX rulings).

>>> import random
>>> from engine.blox import BloxGame
>>> state = BloxGame(["green", "brown", "blue"]).new_initial_state(random.Random(1))
>>> action = next(state.legal_actions())
>>> state.apply_action(action)
"""

from engine.blox.actions import (
    Action,
    Build,
    Destroy,
    Exchange,
    Knock,
    Move,
    Place,
    action_from_json,
)
from engine.blox.board import Cell, Entrance, Figure, Pos, Side, Tower
from engine.blox.edition import BloxEdition, load_edition, parse_edition
from engine.blox.position import PositionProblem, check_position
from engine.blox.state import BloxGame, BloxState, PlayerState, parse_cells
from engine.blox.table import infer, infer_board

__all__ = [
    "Action",
    "BloxEdition",
    "BloxGame",
    "BloxState",
    "Build",
    "Cell",
    "Destroy",
    "Entrance",
    "Exchange",
    "Figure",
    "Knock",
    "Move",
    "Place",
    "PlayerState",
    "Pos",
    "PositionProblem",
    "Side",
    "Tower",
    "action_from_json",
    "check_position",
    "infer",
    "infer_board",
    "load_edition",
    "parse_cells",
    "parse_edition",
]
