"""The Bloxx! rules engine (rulebook ``bloxx.txt``, rulings R-BLOXX-1..9), 1 to 6 players.

Quick tour::

    from engine.bloxx import BloxxGame, Roll, Place, judge_sheet_change
    game = BloxxGame.create(["ann", "bob"])
    state = game.new_initial_state()
    state.apply_action(Roll(("w3", "b1")))       # faces read off the dice
    move = next(state.placements(0, "white"))    # every distinct placement, R-BLOXX-2
    state.apply_action(move)
    verdict = judge_sheet_change(state, 1, camera_rows)  # table mode

See :mod:`engine.bloxx.edition` for coordinates and orientations and
:mod:`engine.bloxx.state` for the turn structure.
"""

from engine.bloxx.edition import (
    ORIENTATIONS,
    BloxxEdition,
    Cell,
    Die,
    Face,
    Geometry,
    Placement,
    is_connected,
    load_edition,
    orient,
)
from engine.bloxx.sheet import CIRCLE, CROSS, EMPTY, GAP, Sheet, SheetFormatError
from engine.bloxx.state import (
    FIRST_BONUS,
    LATER_BONUS,
    MAX_PLAYERS,
    MIN_PLAYERS,
    Action,
    BloxxGame,
    BloxxState,
    ChooseDie,
    Forfeit,
    Phase,
    Place,
    Roll,
    Score,
    action_from_json,
    placement_problem,
)
from engine.bloxx.table import judge_sheet_change

__all__ = [
    "CIRCLE", "CROSS", "EMPTY", "FIRST_BONUS", "GAP", "LATER_BONUS", "MAX_PLAYERS",
    "MIN_PLAYERS", "ORIENTATIONS", "Action", "BloxxEdition", "BloxxGame", "BloxxState",
    "Cell", "ChooseDie", "Die", "Face", "Forfeit", "Geometry", "Phase", "Place", "Placement",
    "Roll", "Score", "Sheet", "SheetFormatError", "action_from_json", "is_connected",
    "judge_sheet_change", "load_edition", "orient", "placement_problem",
]
