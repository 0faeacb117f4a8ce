"""Table mode: name the action that explains the change between two stable boards (R-BLOX-15).

The camera sees the board, not the hands. :func:`infer` compares the state's board with
an observed one, reads the shape of the change (a figure appeared, a figure went from one
space to another, a figure replaced a tower, ...), turns it into the one action of that
shape, and checks that action against every rule the board decides. Cards are *implied*:
the verdict lists the cards the player must have discarded.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import combinations
from typing import Any

from engine.blox.actions import Action, Build, Destroy, Knock, Move, Place
from engine.blox.board import Cell, Entrance, Figure, Pos, Side, Tower, fmt_pos
from engine.blox.state import BloxState, parse_cells
from engine.common import IllegalAction, Verdict, VerdictKind

Change = tuple[Pos, Cell, Cell]


def infer(state: BloxState, cells: Any) -> Verdict:
    """The verdict for the observed board ``cells`` (observation JSON) after ``state``.

    Never raises for a well-formed observation; a malformed one gives ``unrecognised``.
    """
    try:
        observed = parse_cells(state.edition, cells)
    except ValueError as exc:
        return Verdict(VerdictKind.UNRECOGNISED, why=f"the observed board is malformed: {exc}", rule="R-BLOX-15")
    return infer_board(state, observed)


def infer_board(state: BloxState, observed: tuple[Cell, ...]) -> Verdict:
    size = state.edition.size
    changes: list[Change] = [
        ((i // size, i % size), old, new) for i, (old, new) in enumerate(zip(state.board, observed)) if old != new
    ]
    player = state.current.color
    if not changes:
        return Verdict(VerdictKind.NO_CHANGE, player=player)
    if state.is_terminal():
        return Verdict(VerdictKind.ILLEGAL, player=player, rule="R-BLOX-11", why="the game is over; the board should not change")
    hypotheses = list(_shapes(state, changes))
    if not hypotheses:
        return _unrecognised(state, changes)
    actor = _actor(changes)
    if actor is not None and actor != player:
        return Verdict(
            VerdictKind.ILLEGAL,
            player=actor,
            action=hypotheses[0],
            rule="R-BLOX-16",
            why=f"it is {player}'s turn, but the {actor} figure acted",
            implied_cards=hypotheses[0].cards,
        )
    first_error: IllegalAction | None = None
    for action in hypotheses:
        try:
            effect = state.board_effect(action)
        except IllegalAction as exc:
            first_error = first_error or exc
            continue
        if effect.board != observed:
            # Only a mismatch in the actor's colour can get here, and that was handled above.
            first_error = first_error or IllegalAction("R-BLOX-15", "the change does not match the action")
            continue
        if effect.board == observed:
            return Verdict(
                VerdictKind.ACTION,
                player=player,
                action=action,
                implied_cards=action.cards,
                points=effect.points,
            )
    assert first_error is not None
    return Verdict(
        VerdictKind.ILLEGAL,
        player=_actor(changes) or player,
        action=hypotheses[0],
        rule=first_error.rule,
        why=first_error.why,
        implied_cards=hypotheses[0].cards,
    )


def _actor(changes: list[Change]) -> str | None:
    """The colour of the figure that acted, when the change shows one."""
    for _, _old, new in changes:
        if isinstance(new, Figure):
            return new.color
    for _, old, _new in changes:
        if isinstance(old, Figure):
            return old.color
    return None


def _shapes(state: BloxState, changes: list[Change]) -> Iterator[Action]:
    """The actions whose shape matches the change exactly (legal or not), most likely first."""
    if len(changes) == 1:
        pos, old, new = changes[0]
        if old is None and isinstance(new, Figure):
            yield from _places(state, pos)
        elif isinstance(old, Figure) and isinstance(new, Tower):
            yield Build(_ordered(state, new.blocks), None, pos, new.blocks)
        return
    if len(changes) == 2:
        for (a, a_old, a_new), (b, b_old, b_new) in ((changes[0], changes[1]), (changes[1], changes[0])):
            if not (isinstance(a_old, Figure) and a_new is None and b_new == a_old):
                continue
            color = state.space_color(b)
            if b_old is None:
                yield Move((color,), None, a, b)
            elif isinstance(b_old, Tower):
                yield Destroy(_ordered(state, b_old.blocks), None, a, b)
            elif isinstance(b_old, Figure):
                yield Knock((color,) * 3, None, a, b)


def _ordered(state: BloxState, colors: tuple[str, ...]) -> tuple[str, ...]:
    order = {c: i for i, c in enumerate(state.edition.colors)}
    return tuple(sorted(colors, key=lambda c: order.get(c, len(order))))


def _places(state: BloxState, to: Pos) -> Iterator[Place]:
    """A figure that appeared on ``to`` entered along its row or column: the four entrances."""
    r, c = to
    color = state.space_color(to)
    size = state.edition.size
    entrances = [Entrance(Side.N, c), Entrance(Side.S, c), Entrance(Side.W, r), Entrance(Side.E, r)]
    # Nearest edge first, so an illegal placement is explained from the likeliest side.
    entrances.sort(key=lambda e: e.path(size).index(to))
    for entrance in entrances:
        yield Place((color,), None, entrance, to)


def _describe(change: Change) -> str:
    pos, old, new = change
    return f"{fmt_pos(pos)}: {_name(old)} -> {_name(new)}"


def _name(cell: Cell) -> str:
    if cell is None:
        return "empty"
    if isinstance(cell, Figure):
        return f"{cell.color} figure"
    return f"{cell.height}-block tower ({'/'.join(cell.blocks)})"


def _unrecognised(state: BloxState, changes: list[Change]) -> Verdict:
    """No single action has this shape: explain it in words and list the actions it contains."""
    candidates: list[Action] = []
    for k in (1, 2):
        for subset in combinations(changes, k):
            for action in _shapes(state, list(subset)):
                try:
                    state.board_effect(action)
                except IllegalAction:
                    continue
                candidates.append(action)
    return Verdict(
        VerdictKind.UNRECOGNISED,
        player=state.current.color,
        rule=_rule_for(changes),
        why=_explain(changes),
        candidates=tuple(candidates),
    )


def _rule_for(changes: list[Change]) -> str:
    for _, old, new in changes:
        if isinstance(old, Tower) and isinstance(new, Tower):
            return "R-BLOX-6"
        if old is None and isinstance(new, Tower):
            return "R-BLOX-6"
    return "R-BLOX-15"


def _explain(changes: list[Change]) -> str:
    gone = [(p, o) for p, o, n in changes if isinstance(o, Figure) and n != o]
    came = [(p, n) for p, o, n in changes if isinstance(n, Figure) and n != o]
    for pos, old, new in changes:
        if isinstance(old, Tower) and isinstance(new, Tower):
            verb = "grew" if new.height > old.height else "shrank" if new.height < old.height else "changed"
            return (
                f"the tower on {fmt_pos(pos)} {verb} from {old.height} to {new.height} blocks; towers are "
                "never added to or taken from, only built on a figure's space or destroyed whole"
            )
        if old is None and isinstance(new, Tower):
            return f"a tower appeared on the empty space {fmt_pos(pos)}; a tower is built only where the builder's figure stood"
        if isinstance(old, Tower) and new is None:
            return f"the tower on {fmt_pos(pos)} disappeared without a figure taking its space"
    if len(gone) >= 2 and len(came) >= 2:
        return (
            f"{len(came)} figures moved at once ({', '.join(_describe(c) for c in changes)}); "
            "a turn is a single action"
        )
    if gone and not came:
        return f"a figure left the board ({', '.join(_describe(c) for c in changes)}) without any action that removes it"
    return f"the change does not match any single action: {'; '.join(_describe(c) for c in changes)}"
