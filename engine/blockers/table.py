"""Table mode for Blockers!: name the action from the previous board and a new stable
observation (the ``blockers`` state of observation.md).

Exactly one space may change between two stable observations: a tile on an empty space
is a placement, a tile of another colour on an occupied space is a capture. Legality that
depends only on what is visible is checked strictly. When the camera cannot read the new
tile's face (``face: null``), everything colour alone decides is still checked (whose
colour, empty or capturable, the group rule R-BLOCKERS-3), and the verdict lists the
faces that would make the play legal (R-BLOCKERS-2) as fully named candidate actions.
The state is never advanced here: the caller applies the verdict's action once it is
confirmed.
"""

from __future__ import annotations

from typing import Any

from engine.blockers.actions import Capture, Place
from engine.blockers.board import Tile
from engine.blockers.state import R2, BlockersState
from engine.common import IllegalAction, Verdict, VerdictKind


def parse_cells(state: BlockersState, cells: Any) -> list[Tile | None]:
    """The observation's ``cells`` as a board; ``ValueError`` naming what is wrong."""
    e = state.edition
    n = e.size
    if not isinstance(cells, list) or len(cells) != n or any(not isinstance(r, list) or len(r) != n for r in cells):
        raise ValueError(f"cells must be {n} rows (A..I) of {n} columns (1..9)")
    board: list[Tile | None] = []
    for r, row in enumerate(cells):
        for c, cell in enumerate(row):
            if cell is None:
                board.append(None)
                continue
            tile = Tile.from_json(cell)
            where = e.space_name(r * n + c)
            if tile.color not in e.colors:
                raise ValueError(f"{where}: unknown colour {tile.color!r}")
            if tile.face is not None and tile.face not in e.targets:
                raise ValueError(f"{where}: unknown face {tile.face!r}")
            board.append(tile)
    return board


def infer(state: BlockersState, observation: dict[str, Any] | list) -> Verdict:
    """Compare ``state``'s board with a stable observation and name the action.

    ``observation`` is a full observation (``{"game", "stable", "occluded", "state"}``),
    just its ``state`` (``{"cells": ...}``) or the ``cells`` list itself. Occluded spaces
    are ignored. A tile whose face is unread in one of the two boards but of the same
    colour is the same tile (no change; :meth:`BlockersState.reveal_face` records a face
    read later). Never raises: a malformed observation gives ``unrecognised``.
    """
    occluded: set[int] = set()
    n = state.edition.size
    if isinstance(observation, list):
        observation = {"cells": observation}
    if not isinstance(observation, dict):
        return Verdict(VerdictKind.UNRECOGNISED, why="unreadable observation: not a JSON object")
    if "state" in observation:
        if observation.get("stable") is False:
            return Verdict(VerdictKind.NO_CHANGE, why="the observation is not stable; only stable ones move the engine")
        try:
            for rc in observation.get("occluded") or ():
                occluded.add(int(rc[0]) * n + int(rc[1]))
        except (TypeError, ValueError, IndexError):
            return Verdict(VerdictKind.UNRECOGNISED, why="unreadable observation: occluded must list [row, column] pairs")
        payload = observation["state"]
    else:
        payload = observation
    try:
        new = parse_cells(state, payload.get("cells") if isinstance(payload, dict) else None)
    except ValueError as exc:
        return Verdict(VerdictKind.UNRECOGNISED, why=f"unreadable observation: {exc}")

    changed = []
    for i, (old_t, new_t) in enumerate(zip(state.board, new)):
        if i in occluded or old_t == new_t:
            continue
        if old_t is not None and new_t is not None and old_t.color == new_t.color and None in (old_t.face, new_t.face):
            continue
        changed.append(i)
    if not changed:
        return Verdict(VerdictKind.NO_CHANGE)

    e = state.edition
    if len(changed) > 1:
        candidates = tuple(_action_for(state, i, new[i]) for i in changed if new[i] is not None)
        return Verdict(
            VerdictKind.UNRECOGNISED,
            why=f"{len(changed)} spaces changed ({', '.join(e.space_name(i) for i in changed)}); "
            "a turn changes exactly one",
            candidates=candidates,
        )
    space = changed[0]
    tile = new[space]
    if tile is None:
        old = state.board[space]
        assert old is not None
        return Verdict(
            VerdictKind.UNRECOGNISED,
            why=f"{old.color} {old.face or '(unread)'} left {e.space_name(space)} and nothing took its place",
        )
    action = _action_for(state, space, tile)
    owner = state.game.owner.get(tile.color)
    player = state.game.players[owner].name if owner is not None else None

    if tile.face is not None:
        try:
            state.check_action(action)
        except IllegalAction as exc:
            return Verdict(VerdictKind.ILLEGAL, player=player, action=action, rule=exc.rule, why=exc.why)
        return Verdict(VerdictKind.ACTION, player=player, action=action)

    # Unread face: colour alone decides the turn, the capture and the group rule.
    try:
        state.check_colour_rules(action)
    except IllegalAction as exc:
        return Verdict(VerdictKind.ILLEGAL, player=player, action=action, rule=exc.rule, why=exc.why)
    named = []
    for face in state.possible_faces(tile.color, space):
        candidate = _action_for(state, space, tile._replace(face=face))
        try:
            state.check_action(candidate)
        except IllegalAction:
            continue
        named.append(candidate)
    if not named:
        return Verdict(
            VerdictKind.ILLEGAL,
            player=player,
            action=action,
            rule=R2,
            why=f"face unread, and no {tile.color} tile that could still be on the rack may lie on "
            f"{e.space_name(space)} (it takes {', '.join(e.faces_for_space(space))})",
        )
    faces = [a.face for a in named]
    if len(named) == 1:
        return Verdict(
            VerdictKind.ACTION, player=player, action=named[0], candidates=tuple(named),
            why=f"face unread; only {tile.color} {faces[0]} could have been played there",
        )
    return Verdict(
        VerdictKind.ACTION,
        player=player,
        action=action,
        candidates=tuple(named),
        why=f"face unread; legal if the tile is {tile.color} " + " or ".join(str(f) for f in faces),
    )


def _action_for(state: BlockersState, space: int, tile: Tile) -> Place | Capture:
    old = state.board[space]
    if old is None:
        return Place(tile.color, tile.face, space)
    return Capture(tile.color, tile.face, space, old)


#: The name the other engines use; both are public.
infer_action = infer
