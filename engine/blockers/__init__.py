"""The Blockers! rules engine (rulebook ``blockers.txt``, rulings R-BLOCKERS-1..7).

Two to five players with one colour each, or two players with two colours each
(R-BLOCKERS-7). Typical use::

    import random
    from engine.blockers import BlockersGame

    game = BlockersGame(["red", "blue", "green"])
    state = game.new_initial_state(random.Random(1))
    while not state.is_terminal():
        state.apply_action(next(state.legal_actions()))
    state.scores(), state.winners()

Table mode: ``game.new_table_state(first_player)`` keeps racks face down, and
:func:`infer` (alias ``infer_action``) names the action between two stable observations.
"""

from engine.blockers.actions import Action, Capture, ForcedPass, Place, action_from_json
from engine.blockers.board import (
    Tile,
    capturable_map,
    count_groups,
    cut_vertices,
    group_of,
    groups,
    is_capturable,
    split_parts,
)
from engine.blockers.edition import BlockersEdition, load_edition
from engine.blockers.state import (
    BlockersGame,
    BlockersState,
    Player,
    ScoreLine,
    SplitsGroup,
    check_group_rule,
)
from engine.blockers.table import infer, infer_action, parse_cells

__all__ = [
    "Action",
    "BlockersEdition",
    "BlockersGame",
    "BlockersState",
    "Capture",
    "ForcedPass",
    "Place",
    "Player",
    "ScoreLine",
    "SplitsGroup",
    "Tile",
    "action_from_json",
    "capturable_map",
    "check_group_rule",
    "count_groups",
    "cut_vertices",
    "group_of",
    "groups",
    "infer",
    "infer_action",
    "is_capturable",
    "load_edition",
    "parse_cells",
    "split_parts",
]
