"""The Bloxo rules engine (rulebook ``bloxo.txt``, rulings R-BLOXO-1..7).

Quick tour::

    import random
    from engine.bloxo import BloxoGame, Place, infer

    game = BloxoGame(["ann", "bob"])
    state = game.new_initial_state(random.Random(1))
    action = next(state.legal_placements())        # Place(card, at, rotation)
    points = state.apply_action(action)             # R-BLOXO-4 score

    table = game.new_table_state(first_observation)  # table mode: hands unknown
    verdict = infer(table, next_observation)         # names the placement and points

Conventions: quadrants NW, NE, SE, SW (clockwise from the far-left corner, as in
observation.md); rotation in clockwise quarter turns seen from above (see
:func:`engine.bloxo.edition.rotate`); card positions (x right, y toward the near edge).
"""

from engine.bloxo.actions import Action, Pass, Place, Redraw, action_from_json
from engine.bloxo.edition import (
    NE,
    NW,
    QUADRANT_NAMES,
    SE,
    SW,
    CardKind,
    CardSpec,
    Colour,
    Edition,
    card_kind,
    load_edition,
    parse_edition,
    rotate,
    rotation_for,
)
from engine.bloxo.grid import block_of, card_cells, edge_conflicts, frontier, placement_points
from engine.bloxo.state import END_ALL_PLAYED, END_BLOCKED, BloxoGame, BloxoState, Placed, Record
from engine.bloxo.table import BloxoVerdict, ObservationError, TableChange, infer, parse_observation

__all__ = [
    "Action", "Pass", "Place", "Redraw", "action_from_json",
    "NE", "NW", "QUADRANT_NAMES", "SE", "SW", "CardKind", "CardSpec", "Colour", "Edition",
    "card_kind", "load_edition", "parse_edition", "rotate", "rotation_for",
    "block_of", "card_cells", "edge_conflicts", "frontier", "placement_points",
    "END_ALL_PLAYED", "END_BLOCKED", "BloxoGame", "BloxoState", "Placed", "Record",
    "BloxoVerdict", "ObservationError", "TableChange", "infer", "parse_observation",
]
